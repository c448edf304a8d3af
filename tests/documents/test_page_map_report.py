"""Each page-map case of issue 19 through IngestDocument over real gRPC: the viewer index, the
printed label and its source in the ingest report (`IngestDocumentResponse.extraction`), the issue
the verification reports, and the locator of a passage stored on that page (what a citation
carries and how it is shown). The same cases as tests/documents/test_pdf_extraction.py, but as the
service stores and reports them, and as `citetrace ingest` prints them."""

from __future__ import annotations

import os

import pytest
from citetrace.identity import page_locator
from citetrace.kit.testing import install_dev_issuer
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb

from apps.cli.main import main as cli

from . import fixtures
from .test_ingest_sources import service

TREE, PAGE_TEXT, NONE = pb.PAGE_LABEL_SOURCE_TREE, pb.PAGE_LABEL_SOURCE_PAGE_TEXT, pb.PAGE_LABEL_SOURCE_NONE
MISMATCH = pb.EXTRACTION_ISSUE_KIND_PAGE_LABEL_MISMATCH
OUT_OF_SEQUENCE = pb.EXTRACTION_ISSUE_KIND_PAGE_LABEL_OUT_OF_SEQUENCE
NO_TEXT_LAYER = pb.EXTRACTION_ISSUE_KIND_NO_TEXT_LAYER


@pytest.fixture(scope="module")
def ingested(auth, tmp_path_factory, handbook_pdf):
    """The three PDFs of the page-map cases, ingested once: reply and stored passages by document.
    The chunk target is the smallest allowed, so each paragraph (one per page here) is a passage of
    its own page and every page's locator can be checked."""
    with service(auth, tmp_path_factory.mktemp("page-maps"), chunk_target_chars=50) as client:
        out = {}
        for document_id, content in (("handbook", handbook_pdf), ("numbers", fixtures.printed_numbers_pdf()),
                                     ("scan", fixtures.scanned_pdf(1))):
            reply = client.ingest(document_id, content, filename=f"{document_id}.pdf")
            stored = client.get([p.passage_id for p in reply.passages]).passages
            out[document_id] = (reply, list(stored))
        yield out


def entry(reply, viewer):
    (found,) = [p for p in reply.extraction.pages if p.viewer_page == viewer]
    return found


def passage_on(stored, text):
    (found,) = [p for p in stored if text in p.text]
    return found


def locator(passage):
    i = passage.identity
    return (i.page_start, i.page_end, i.page_label_start, i.page_label_end,
            page_locator(i.page_start, i.page_end, i.page_label_start, i.page_label_end))


def report_row(e):
    return (e.viewer_page, e.page_label, e.label_source, e.has_tree_label, e.tree_label, e.printed_label, e.verified)


def issues(reply):
    return [(i.kind, i.viewer_page) for i in reply.extraction.issues]


def test_front_matter_in_roman_numerals(ingested):
    reply, stored = ingested["handbook"]
    assert report_row(entry(reply, 1)) == (1, "i", TREE, True, "i", "i", True)
    assert report_row(entry(reply, 2)) == (2, "ii", TREE, True, "ii", "ii", True)
    assert locator(passage_on(stored, "arrival rules of the Harbor clinic")) == (1, 1, "i", "i", "p. i (viewer page 1)")
    assert locator(passage_on(stored, "Arrival rules, fees and notice")) == (2, 2, "ii", "ii", "p. ii (viewer page 2)")


def test_a_page_label_prefix(ingested):
    reply, stored = ingested["handbook"]
    assert report_row(entry(reply, 4)) == (4, "A-1", TREE, True, "A-1", "A-1", True)
    # A page made by an automatic page break (the fee table) carries its label too.
    assert report_row(entry(reply, 7)) == (7, "A-4", TREE, True, "A-4", "A-4", True)
    assert locator(passage_on(stored, "arrive 15 minutes")) == (4, 4, "A-1", "A-1", "p. A-1 (viewer page 4)")


def test_a_page_without_a_label(ingested):
    reply, stored = ingested["handbook"]
    # The tree has a range without style or prefix there: no label, nothing printed, nothing to verify.
    assert report_row(entry(reply, 3)) == (3, "", NONE, True, "", "", False)
    assert locator(passage_on(stored, "intentionally carries no page number")) == (3, 3, "", "", "viewer page 3")
    assert 3 not in {v for _, v in issues(reply)}, "an unlabelled page is no disagreement"


def test_a_tree_label_disagreeing_with_the_printed_number_is_reported(ingested):
    reply, stored = ingested["handbook"]
    assert report_row(entry(reply, 8)) == (8, "A-5", TREE, True, "A-5", "A-6", False)
    assert issues(reply) == [(MISMATCH, 8)]
    (issue,) = reply.extraction.issues
    assert "'A-5'" in issue.message and "'A-6'" in issue.message
    # The passage is cited by the tree's label (what a viewer shows), never silently by the other.
    assert locator(passage_on(stored, "Questions go to the appointment desk")) == \
        (8, 8, "A-5", "A-5", "p. A-5 (viewer page 8)")


def test_labels_from_the_page_text_when_there_is_no_tree_and_a_break_in_their_sequence(ingested):
    reply, stored = ingested["numbers"]
    rows = [report_row(e) for e in reply.extraction.pages]
    assert rows == [(1, "1", PAGE_TEXT, False, "", "1", True), (2, "2", PAGE_TEXT, False, "", "2", True),
                    (3, "", NONE, False, "", "", False), (4, "4", PAGE_TEXT, False, "", "4", True),
                    (5, "9", PAGE_TEXT, False, "", "9", False), (6, "6", PAGE_TEXT, False, "", "6", True)]
    assert issues(reply) == [(OUT_OF_SEQUENCE, 5)]
    assert locator(passage_on(stored, "Rule 2:")) == (2, 2, "2", "2", "p. 2")
    assert locator(passage_on(stored, "Rule 3:")) == (3, 3, "", "", "viewer page 3")
    assert locator(passage_on(stored, "Rule 5:")) == (5, 5, "9", "9", "p. 9 (viewer page 5)")
    assert not any(p.text.strip() in {"1", "2", "4", "9", "6"} for p in stored), "page numbers are no passages"


def test_a_scanned_page_is_reported_in_the_ingest_result(ingested):
    reply, stored = ingested["scan"]
    assert reply.created and reply.version.page_count == 2
    scanned = entry(reply, 2)
    assert not scanned.has_text_layer and scanned.start == scanned.end
    assert entry(reply, 1).has_text_layer
    assert issues(reply) == [(NO_TEXT_LAYER, 2)]
    assert all(p.identity.page_start == p.identity.page_end == 1 for p in stored), "no passage from the image"


def test_citetrace_ingest_prints_each_case(auth, tmp_path, capsys, monkeypatch, handbook_pdf):
    from .test_ingest_cli_sources import SIDECAR

    for key in [k for k in os.environ if k.startswith("CITETRACE_AUTH_")]:
        monkeypatch.delenv(key)
    data = tmp_path / "data"
    data.mkdir()
    install_dev_issuer(auth, data)
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, content in (("numbers", fixtures.printed_numbers_pdf()), ("scan", fixtures.scanned_pdf(1))):
        (folder / f"{name}.pdf").write_bytes(content)
        (folder / f"{name}.pdf.meta.yaml").write_text(SIDECAR.format(doc=name))
    with service(auth, tmp_path / "service") as client:
        code = cli(["ingest", "--data-dir", str(data), "--target", client.core_address, str(folder)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "6 page(s); labels 1:1, 2:2, 3:-, 4:4, 5:9, 6:6; not verified on viewer page(s) 3, 5" in out
    assert "PAGE_LABEL_OUT_OF_SEQUENCE: " in out and "NO_TEXT_LAYER: " in out
    # One printed number alone has no second source to verify it against.
    assert "2 page(s); labels 1:1, 2:-; not verified on viewer page(s) 1, 2" in out
    assert "NO_TEXT_LAYER: viewer page 2 has no text layer" in out
