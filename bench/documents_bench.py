"""Ingestion throughput of PDF and HTML sources through IngestDocument (part of `make bench-retrieval`).

Writes a synthetic corpus with the tests' fixture writer (tests/documents/pdfgen.py): PDFs of
--pdf-pages pages each (headings, paragraphs, a ruled table running over a page break, printed page
numbers, roman front matter in the label tree) and HTML pages (navigation, nested headings, a table,
a footer). Every document has its own words, so nothing is served from the embedding cache.
Starts the retrieval service in-process (real gRPC, real SQLite store, fresh data dir and an EMPTY
embedding cache), ingests each file with IngestDocument, and reports pages per second (an HTML file
is one page) with the share of the server's time spent extracting (stage retrieval.extract) and
embedding (stage retrieval.embed_passages), read from the service's own stage histograms; the rest
is chunking, signing, storing and indexing. Also the extraction alone in this process (CPU time).
Writes bench/results/documents-ingest.json.

    .venv/bin/python bench/documents_bench.py [--pdfs 12] [--pdf-pages 10] [--html 60] [--out FILE]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import grpc  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from citetrace.common.v1 import common_pb2  # noqa: E402
from citetrace.kit.testing import serving, test_auth_settings, token_metadata  # noqa: E402
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb  # noqa: E402
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc  # noqa: E402
from documents.pdfgen import LabelRange, PdfBuilder  # noqa: E402
from prometheus_client import REGISTRY  # noqa: E402

from services.retrieval.bootstrap import build_spec  # noqa: E402
from services.retrieval.extract.html import HtmlExtractor  # noqa: E402
from services.retrieval.extract.pdf import PdfExtractor  # noqa: E402
from services.retrieval.settings import Settings  # noqa: E402

TENANT = "bench-documents"
WORDS = ("arrival", "fee", "notice", "desk", "referral", "parking", "interpreter", "results", "portal", "visit",
         "escort", "locker", "badge", "voucher", "window", "lobby", "ramp", "elevator", "kiosk", "form")


def sentence(doc: int, n: int) -> str:
    a, b, c = WORDS[(doc + n) % len(WORDS)], WORDS[(doc * 7 + n * 3) % len(WORDS)], WORDS[(n * 11) % len(WORDS)]
    return (f"Rule {doc}-{n}: the {a} office of site D{doc}X{n} handles the {b} request within {n % 9 + 2} "
            f"days, except when the {c} team of unit Q{doc * 100 + n} is closed.")


def make_pdf(doc: int, pages: int) -> bytes:
    b = PdfBuilder()
    b.page("i").heading(f"Handbook {doc}").paragraph(" ".join(sentence(doc, n) for n in range(3)))
    for page in range(1, pages):
        b.page(str(page)).heading(f"Section {doc}.{page}", size=14)
        for p in range(3):
            b.paragraph(" ".join(sentence(doc, page * 10 + p * 3 + k) for k in range(3)))
        if page == pages // 2:
            b.table([["Service", "Fee", "Notice"]] + [[f"Service {doc}-{r}", f"{r * 5} USD", f"{r} days"]
                                                    for r in range(1, 40)])
    count = b.page_count
    for page in range(2, count + 1):
        b.printed.setdefault(page, str(page - 1))
    return b.build(labels=[LabelRange(1, "r"), LabelRange(2, "D")])


def make_html(doc: int) -> bytes:
    sections = "".join(
        f"<h2>Topic {doc}.{s}</h2><p>{sentence(doc, s * 4)} {sentence(doc, s * 4 + 1)}</p>"
        f"<ul><li>{sentence(doc, s * 4 + 2)}</li><li>{sentence(doc, s * 4 + 3)}</li></ul>" for s in range(4))
    table = "".join(f"<tr><td>Item {doc}-{r}</td><td>{r * 3} days</td></tr>" for r in range(8))
    return (f"<!doctype html><html><head><title>Page {doc}</title></head><body><header><nav><a href='/'>Home</a>"
            f"<a href='/book'>Book</a></nav></header><main><h1>Clinic page {doc}</h1>{sections}"
            f"<table><thead><tr><th>Item</th><th>Kept for</th></tr></thead>{table}</table></main>"
            f"<footer>Copyright, privacy, accessibility</footer></body></html>").encode()


def stage_sum(stage: str) -> float:
    value = REGISTRY.get_sample_value("citetrace_stage_duration_seconds_sum",
                                      {"service": "retrieval", "stage": stage})
    return value or 0.0


def ingest_all(stub, metadata, files: list[tuple[str, bytes]], media_type: str) -> dict:
    before = {s: stage_sum(s) for s in ("retrieval.extract", "retrieval.embed_passages", "retrieval.ingest")}
    latencies, passages = [], 0
    started = time.perf_counter()
    for name, content in files:
        request = pb.IngestDocumentRequest(
            document=common_pb2.Document(tenant_id=TENANT, document_id=name, source_class="handbook",
                                         title=f"{name} (synthetic)"),
            content=content, media_type=media_type, source_filename=name, roles=["patient"], intents=[common_pb2.INTENT_OTHER],
            locale="en")
        t0 = time.perf_counter()
        reply = stub.IngestDocument(request, timeout=600, metadata=metadata)
        latencies.append(time.perf_counter() - t0)
        assert reply.created, name
        passages += len(reply.passages)
    wall = time.perf_counter() - started
    spent = {s: stage_sum(s) - v for s, v in before.items()}
    return {"documents": len(files), "passages": passages, "wall_seconds": round(wall, 3),
            "per_document_ms_p50": round(statistics.median(latencies) * 1000, 1),
            "extract_seconds": round(spent["retrieval.extract"], 3),
            "embed_seconds": round(spent["retrieval.embed_passages"], 3),
            "share_extract": round(spent["retrieval.extract"] / wall, 3),
            "share_embed": round(spent["retrieval.embed_passages"] / wall, 3),
            "share_other": round(1 - (spent["retrieval.extract"] + spent["retrieval.embed_passages"]) / wall, 3)}


def extraction_only(extractor, files: list[tuple[str, bytes]]) -> float:
    started = time.process_time()
    for name, content in files:
        extractor.extract(content, name)
    return time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdfs", type=int, default=12)
    parser.add_argument("--pdf-pages", type=int, default=10)
    parser.add_argument("--html", type=int, default=60)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "documents-ingest.json")
    args = parser.parse_args()

    pdfs = [(f"handbook-{i}.pdf", make_pdf(i, args.pdf_pages)) for i in range(args.pdfs)]
    pages = [PdfExtractor().extract(content, name).pages for name, content in pdfs]
    pdf_pages = sum(len(p) for p in pages)
    htmls = [(f"page-{i}.html", make_html(i)) for i in range(args.html)]
    auth = test_auth_settings()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(port=0, metrics_port=-1, data_dir=Path(tmp))
        with serving(build_spec(settings), auth) as runner, grpc.insecure_channel(runner.address) as channel:
            stub = pb_grpc.RetrievalServiceStub(channel)
            metadata = token_metadata(auth, TENANT, ("policy_admin",))
            pdf = ingest_all(stub, metadata, pdfs, "application/pdf")
            html = ingest_all(stub, metadata, htmls, "text/html")
    pdf["pages"] = pdf_pages
    pdf["pages_per_second"] = round(pdf_pages / pdf["wall_seconds"], 2)
    html["pages"] = len(htmls)
    html["pages_per_second"] = round(len(htmls) / html["wall_seconds"], 2)
    pdf_cpu, html_cpu = extraction_only(PdfExtractor(), pdfs), extraction_only(HtmlExtractor(), htmls)
    result = {
        "benchmark": "documents-ingest",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "loadavg_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]},
        "corpus": {"pdfs": args.pdfs, "pdf_pages": pdf_pages, "html_pages": len(htmls),
                   "pdf_bytes": sum(len(c) for _, c in pdfs), "html_bytes": sum(len(c) for _, c in htmls)},
        "notes": "through IngestDocument over real gRPC, one file per call, empty embedding cache; shares are "
                 "of the client's wall time per format: extract = stage retrieval.extract, embed = stage "
                 "retrieval.embed_passages, other = chunking, signing, storing, indexing and the RPC",
        "pdf": pdf,
        "html": html,
        "extraction_only_cpu": {"pdf_pages_per_cpu_second": round(pdf_pages / pdf_cpu, 2),
                                "html_pages_per_cpu_second": round(len(htmls) / html_cpu, 2)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
