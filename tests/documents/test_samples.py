"""The sample corpus's PDF and HTML sources: the committed PDF is what deploy/samples/make_sources.py
writes, every sidecar parses, and their extraction shows the page labels the demo cites."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from apps.cli.ingest import collect, parse_file
from services.retrieval.extract.html import HtmlExtractor
from services.retrieval.extract.pdf import PdfExtractor

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "deploy" / "samples" / "corpus"


def test_the_committed_sample_pdf_is_up_to_date():
    result = subprocess.run([sys.executable, "deploy/samples/make_sources.py", "--check"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_sample_source_parses_with_its_metadata():
    files = collect([CORPUS])
    kinds = {f.suffix for f in files}
    assert {".md", ".pdf", ".html"} <= kinds and not any(f.name.endswith(".meta.yaml") for f in files)
    for path in files:
        parse_file(path)


def test_the_sample_pdf_and_page_are_extracted_as_the_demo_cites_them():
    pdf = PdfExtractor().extract((CORPUS / "acme-health" / "harbor-imaging-handbook.pdf").read_bytes(), "h.pdf")
    assert [(p.label, p.verified) for p in pdf.pages] == [("i", True), ("ii", True), ("H-1", True), ("H-2", True)]
    assert not pdf.issues
    rule = pdf.text.index("Do not use deodorant")
    assert pdf.page_span(rule, rule + 10).first == 3
    html = HtmlExtractor().extract((CORPUS / "acme-health" / "northside-lost-property.html").read_bytes(), "p.html")
    assert "| Phones, wallets and keys | 60 days |" in html.text
    assert "Book an appointment" not in html.text and "Download the Acme Health app" not in html.text
