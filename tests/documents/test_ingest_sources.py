"""PDF and HTML sources through IngestDocument over real gRPC (real SQLite store of record): page
maps in the ingest result, page locators on passages, identity (source digest, version, extraction
version), review before evidence, and bad input refused with nothing stored."""

from __future__ import annotations

import contextlib
import hashlib

import grpc
import pytest
from citetrace.common.v1 import common_pb2
from citetrace.kit.testing import serving
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc

from services.retrieval import bootstrap
from services.retrieval.extract import Extractors
from services.retrieval.extract.html import HtmlExtractor
from services.retrieval.extract.markdown import MarkdownExtractor
from services.retrieval.extract.pdf import PdfExtractor
from services.retrieval.settings import Settings

from . import fixtures
from .pdfgen import PdfBuilder

TENANT = "doc-tenant"
PDF, HTML = "application/pdf", "text/html"


class Client:
    def __init__(self, stub, auth, core, address=""):
        self.stub, self.auth, self.core, self.core_address = stub, auth, core, address

    def md(self, roles=("policy_admin",), tenant=TENANT):
        from citetrace.kit.testing import token_metadata

        return token_metadata(self.auth, tenant, roles, ())

    def ingest(self, document_id, content, media_type=PDF, filename="policy.pdf", **extra):
        request = pb.IngestDocumentRequest(
            document=common_pb2.Document(tenant_id=TENANT, document_id=document_id,
                                         source_class="scheduling_policy", title=f"{document_id} (synthetic)"),
            content=content, media_type=media_type, source_filename=filename,
            status=common_pb2.VERSION_STATUS_APPROVED, roles=["patient"], intents=[common_pb2.INTENT_ARRIVAL_PREPARATION],
            locale="en", **extra)
        request.valid_from.FromJsonString("2025-01-01T00:00:00Z")
        return self.stub.IngestDocument(request, timeout=60, metadata=self.md())

    def get(self, ids, roles=("policy_admin",)):
        return self.stub.GetPassages(pb.GetPassagesRequest(passage_ids=list(ids)), timeout=20,
                                     metadata=self.md(roles))

    def search(self, query, k=10):
        return self.stub.Search(pb.SearchRequest(query=query, k=k), timeout=20, metadata=self.md(("patient",)))

    def versions(self, document_id):
        return self.stub.ListVersions(pb.ListVersionsRequest(document_id=document_id), timeout=20,
                                      metadata=self.md()).versions

    def approve(self, ids, roles=("policy_admin",)):
        return self.stub.ApprovePassages(pb.ApprovePassagesRequest(passage_ids=list(ids)), timeout=20,
                                         metadata=self.md(roles))


@contextlib.contextmanager
def service(auth, data_dir, extractors=None, **overrides):
    settings = Settings(port=0, metrics_port=-1, data_dir=data_dir, **overrides)
    retrieval = bootstrap.build(settings, extractors=extractors)
    with serving(retrieval.spec(), auth) as runner, grpc.insecure_channel(runner.address) as channel:
        yield Client(pb_grpc.RetrievalServiceStub(channel), auth, retrieval.core, runner.address)


@pytest.fixture(scope="module")
def svc(auth, tmp_path_factory):
    with service(auth, tmp_path_factory.mktemp("documents")) as client:
        yield client


def row_counts(client) -> dict[str, int]:
    """Rows of every table of the retrieval store: what "nothing stored" is checked against."""
    import sqlalchemy as sa

    engine = sa.create_engine(client.core.store.url)
    try:
        with engine.connect() as conn:
            return {name: conn.execute(sa.text(f"SELECT COUNT(*) FROM {name}")).scalar_one()
                    for name in sa.inspect(conn).get_table_names() if name.startswith("ret_")}
    finally:
        engine.dispose()


def extractions(client, document_id) -> list[tuple[str, str, str]]:
    """(source digest, version, extraction version) of the document's ret_extractions rows."""
    import sqlalchemy as sa

    from services.retrieval.store.models import ExtractionRow

    table = ExtractionRow.__table__
    engine = sa.create_engine(client.core.store.url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.select(table.c.source_sha256, table.c.version_id, table.c.extraction_version)
                                .where(table.c.document_id == document_id)).all()
    finally:
        engine.dispose()
    return sorted(tuple(r) for r in rows)


def refused(call, *args, **kwargs):
    with pytest.raises(grpc.RpcError) as caught:
        call(*args, **kwargs)
    from citetrace.kit.clients import error_info

    info = error_info(caught.value)
    return caught.value.code(), info.reason if info else "", caught.value.details()


def test_a_pdf_is_stored_with_its_source_digest_page_map_and_page_locators(svc, handbook_pdf):
    reply = svc.ingest("handbook", handbook_pdf, filename="handbook.pdf")
    v = reply.version
    assert reply.created and v.media_type == PDF and v.page_count == 8
    assert v.source_sha256 == hashlib.sha256(handbook_pdf).hexdigest() != v.version_id
    assert v.extraction_version.startswith("pdf-rules/1;pypdf/") and v.extraction_version.endswith("hard=2000")
    report = reply.extraction
    assert report.source_sha256 == v.source_sha256 and report.extraction_version == v.extraction_version
    pages = {(p.viewer_page, p.page_label, p.label_source, p.verified) for p in report.pages}
    assert {(1, "i", pb.PAGE_LABEL_SOURCE_TREE, True), (3, "", pb.PAGE_LABEL_SOURCE_NONE, False),
            (4, "A-1", pb.PAGE_LABEL_SOURCE_TREE, True), (8, "A-5", pb.PAGE_LABEL_SOURCE_TREE, False)} <= pages
    eighth = report.pages[7]
    assert (eighth.tree_label, eighth.has_tree_label, eighth.printed_label) == ("A-5", True, "A-6")
    assert [(i.kind, i.viewer_page) for i in report.issues] == [(pb.EXTRACTION_ISSUE_KIND_PAGE_LABEL_MISMATCH, 8)]
    got = svc.get([p.passage_id for p in reply.passages])
    arrival = next(p for p in got.passages if "arrive 15 minutes" in p.text)
    ident = arrival.identity
    assert (ident.page_start, ident.page_end, ident.page_label_start, ident.page_label_end) == (4, 4, "A-1", "A-1")
    assert "[1] Measured from the appointment time" in arrival.text
    assert arrival.review_state == common_pb2.REVIEW_STATE_NOT_REQUIRED
    # A row cited from the table's second page carries its header (in the passage or its context).
    row = next(p for p in got.passages if "| Service 40 |" in p.text)
    assert row.identity.page_end == 7 and row.identity.page_label_end == "A-4"
    assert "| Service | Fee | Notice |" in row.text + row.heading_context


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request) -> dict:
    """The store of record the identity tests run on: SQLite in the data dir, or a fresh PostgreSQL."""
    if request.param == "sqlite":
        return {}
    return {"database_url": request.getfixturevalue("postgres_url")}


@pytest.fixture
def fresh(auth, tmp_path, store):
    with service(auth, tmp_path, **store) as client:
        yield client


def test_the_same_bytes_twice_create_nothing_and_are_not_extracted_again(fresh, handbook_pdf, monkeypatch):
    svc = fresh
    first = svc.ingest("handbook-twice", handbook_pdf)
    calls = []
    pdf = svc.core.extractors.get(PDF, "x")
    original = pdf.extract
    monkeypatch.setattr(pdf, "extract", lambda *a: calls.append(a) or original(*a))
    again = svc.ingest("handbook-twice", handbook_pdf)
    assert first.created and not again.created and not calls
    assert again.version.version_id == first.version.version_id
    assert [p.passage_id for p in again.passages] == [p.passage_id for p in first.passages]
    assert [p.viewer_page for p in again.extraction.pages] == list(range(1, 9)), "the stored page map is reported"
    assert len(svc.versions("handbook-twice")) == 1
    assert extractions(svc, "handbook-twice") == [(first.version.source_sha256, first.version.version_id,
                                                   first.version.extraction_version)], "one ingestion run recorded"


class ReorderingPdfExtractor(PdfExtractor):
    """A later extractor whose rules read the same file differently (here: the footnote after its
    page instead of under its reference) — a new extraction of unchanged bytes."""

    def extract(self, source, filename):
        extraction = super().extract(source, filename)
        return type(extraction)(text=extraction.text.replace("\n[1] Measured", "\n\n[1] Measured"),
                                media_type=extraction.media_type, pages=extraction.pages,
                                issues=extraction.issues, review_spans=extraction.review_spans)


def test_a_new_extractor_makes_a_new_extraction_and_old_passages_stay_as_they_were(auth, tmp_path, handbook_pdf,
                                                                                   store):
    with service(auth, tmp_path, **store) as old_service:
        old = old_service.ingest("handbook", handbook_pdf)
        cited = old_service.search("arrive 15 minutes before an MRI appointment", k=1).hits[0].passage
    # The same store, a new extractor version that changes the text: a new version of the same source.
    newer = Extractors([ReorderingPdfExtractor(rules_revision=2), HtmlExtractor(), MarkdownExtractor()])
    with service(auth, tmp_path, extractors=newer, **store) as new_service:
        new = new_service.ingest("handbook", handbook_pdf)
        assert new.created and new.version.version_id != old.version.version_id
        assert new.version.source_sha256 == old.version.source_sha256
        assert new.version.extraction_version.startswith("pdf-rules/2;")
        assert old.version.version_id in new.superseded_version_ids
        # What an old trace points to is unchanged: text, digest, pages.
        again = new_service.get([cited.identity.passage_id]).passages[0]
        assert again.text == cited.text and again.identity == cited.identity
        # Search answers from the new extraction only.
        hit = new_service.search("arrive 15 minutes before an MRI appointment", k=1).hits[0].passage
        assert hit.identity.version_id == new.version.version_id
        versions = new_service.versions("handbook")
        assert {v.source_sha256 for v in versions} == {old.version.source_sha256} and len(versions) == 2
        # The same bytes with the new extractor again: nothing new.
        assert not new_service.ingest("handbook", handbook_pdf).created
        # Two extractions of one source, each bound to its version.
        digest = old.version.source_sha256
        assert extractions(new_service, "handbook") == sorted([
            (digest, old.version.version_id, old.version.extraction_version),
            (digest, new.version.version_id, new.version.extraction_version)])
    # A newer extractor version that yields the same text as the last: the same version, re-extracted
    # passages, and the passages of the extraction before keep their extraction version.
    same_text = Extractors([ReorderingPdfExtractor(rules_revision=3), HtmlExtractor(), MarkdownExtractor()])
    with service(auth, tmp_path, extractors=same_text, **store) as b:
        first = new
        second = b.ingest("handbook", handbook_pdf)
        assert not second.created and second.version.version_id == first.version.version_id
        assert second.version.extraction_version.startswith("pdf-rules/3;")
        assert len(b.versions("handbook")) == 2
        assert len(extractions(b, "handbook")) == 3, "a third extraction, bound to the existing version"
        assert (digest, new.version.version_id, second.version.extraction_version) in extractions(b, "handbook")
        old_ids = [p.passage_id for p in first.passages]
        assert [p.identity.extraction_version for p in b.get(old_ids).passages] == \
            [first.version.extraction_version] * len(old_ids)


def test_passages_needing_review_are_not_evidence_until_a_policy_admin_approves(svc):
    reply = svc.ingest("notes", fixtures.notes_and_tables_pdf(), filename="notes.pdf")
    pending = list(reply.extraction.passages_needing_review)
    kinds = sorted(i.kind for i in reply.extraction.issues)
    assert kinds == [pb.EXTRACTION_ISSUE_KIND_TABLE_HEADER_NOT_FOUND, pb.EXTRACTION_ISSUE_KIND_FOOTNOTE_WITHOUT_ANCHOR]
    assert len(pending) == 2
    stored = {p.identity.passage_id: p for p in svc.get([p.passage_id for p in reply.passages]).passages}
    for pid in pending:
        assert stored[pid].review_state == common_pb2.REVIEW_STATE_PENDING and stored[pid].review_reason
    rule = next(p for p in stored.values() if "Late cancellations" in p.text)
    assert rule.review_state == common_pb2.REVIEW_STATE_NOT_REQUIRED
    orphan = next(pid for pid in pending if "orphan remark" in stored[pid].text)
    assert orphan not in {h.passage.identity.passage_id for h in svc.search("orphan remark no sentence").hits}
    code, reason, _ = refused(svc.approve, [orphan], roles=("staff",))
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "POLICY_ADMIN_REQUIRED")
    # All or none: one passage that was never under review refuses the whole request.
    code, reason, _ = refused(svc.approve, [orphan, rule.identity.passage_id])
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "PASSAGE_NOT_UNDER_REVIEW")
    assert svc.get([orphan]).passages[0].review_state == common_pb2.REVIEW_STATE_PENDING
    approved = svc.approve([orphan]).passages
    assert [p.review_state for p in approved] == [common_pb2.REVIEW_STATE_APPROVED]
    assert orphan in {h.passage.identity.passage_id for h in svc.search("orphan remark no sentence").hits}
    assert svc.approve([orphan]).passages[0].review_state == common_pb2.REVIEW_STATE_APPROVED, "idempotent"


def test_html_is_ingested_without_its_boilerplate(svc):
    reply = svc.ingest("harbor-page", fixtures.HTML_PAGE.encode(), media_type=HTML, filename="harbor.html")
    assert reply.version.media_type == HTML and reply.version.page_count == 0
    texts = [p.text for p in svc.get([p.passage_id for p in reply.passages]).passages]
    assert not any("Book an appointment" in t or "Privacy" in t for t in texts)
    anchors = [p.source_anchor for p in reply.passages]
    assert "Harbor MRI preparation > Metal and implants > Fees" in anchors
    assert all(p.page_start == 0 and p.page_label_start == "" for p in reply.passages)
    assert not reply.extraction.pages and not reply.extraction.issues


def test_markdown_as_a_file_or_as_text_is_the_same_version(fresh):
    """Markdown goes through IngestDocument either way: as `text` (front matter already split off, as
    the CLI always sent it) or as the original file (`content` + text/markdown); both give one version,
    its source digest the bytes'."""
    body = "# Parking\n\nPark on level 2 of the Harbor garage (synthetic).\n\n- Free for patients\n- Show your letter\n"
    as_file = fresh.ingest("parking", body.encode(), media_type="text/markdown", filename="parking.md")
    v = as_file.version
    assert as_file.created and v.media_type == "text/markdown" and v.page_count == 0
    assert v.source_sha256 == hashlib.sha256(body.encode()).hexdigest()
    assert v.version_id == hashlib.sha256(body.encode()).hexdigest(), "normalized text = these bytes here"
    request = pb.IngestDocumentRequest(
        document=common_pb2.Document(tenant_id=TENANT, document_id="parking", source_class="scheduling_policy",
                                     title="parking (synthetic)"),
        text=body, status=common_pb2.VERSION_STATUS_APPROVED, roles=["patient"],
        intents=[common_pb2.INTENT_ARRIVAL_PREPARATION], locale="en")
    request.valid_from.FromJsonString("2025-01-01T00:00:00Z")
    as_text = fresh.stub.IngestDocument(request, timeout=60, metadata=fresh.md())
    assert not as_text.created and as_text.version.version_id == v.version_id
    assert len(fresh.versions("parking")) == 1
    (passage,) = fresh.get([p.passage_id for p in as_file.passages]).passages
    assert passage.text.endswith("- Free for patients\n- Show your letter") and passage.identity.page_start == 0
    code, reason, details = refused(fresh.ingest, "latin", "Parkering på nivå 2".encode("latin-1"),
                                    media_type="text/markdown", filename="latin.md")
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ENCODING") and "latin.md" in details


@pytest.mark.parametrize("name, content, media_type, reason", [
    ("locked.pdf", None, PDF, "ENCRYPTED_SOURCE"),
    ("truncated.pdf", "truncated", PDF, "CORRUPT_SOURCE"),
    ("scan.pdf", "scanned", PDF, "NO_TEXT_LAYER"),
    ("page.html", b"<html><body><p>Arrive early.</p><script>track()</script></body></html>", HTML, "ACTIVE_CONTENT"),
    ("policy.docx", b"PK\x03\x04 not supported", "application/msword", "UNSUPPORTED_MEDIA_TYPE"),
])
def test_bad_input_is_refused_naming_the_file_and_nothing_is_stored(svc, handbook_pdf, name, content, media_type,
                                                                    reason):
    if content is None:
        content = PdfBuilder().page("1").paragraph("Secret.").build(user_password="pw")
    elif content == "truncated":
        content = handbook_pdf[:5000]
    elif content == "scanned":
        content = fixtures.scanned_pdf(0)
    document_id = f"bad-{name.replace('.', '-')}"
    before = row_counts(svc)
    code, got, details = refused(svc.ingest, document_id, content, media_type=media_type, filename=name)
    assert (code, got) == (grpc.StatusCode.INVALID_ARGUMENT, reason)
    assert name in details
    assert not svc.versions(document_id)
    assert row_counts(svc) == before, "no document, version, passage, extraction or event row of it"
    assert {"ret_documents", "ret_versions", "ret_passages", "ret_extractions"} <= set(before)


def test_size_limits_name_the_file(auth, tmp_path):
    with service(auth, tmp_path, max_source_bytes=64 * 1024) as small:
        before = row_counts(small)
        code, reason, details = refused(small.ingest, "big", b"%PDF-1.7\n" + b"0" * (100 * 1024), filename="big.pdf")
        assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "SOURCE_TOO_LARGE") and "big.pdf" in details
        # Beyond the service's message limit the transport refuses it before it is read whole.
        code, _, details = refused(small.ingest, "huge", b"0" * (3 * 1024 * 1024), filename="huge.pdf")
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert not small.versions("big") and not small.versions("huge")
        assert row_counts(small) == before


@pytest.mark.parametrize("column, value", [("page_label_start", "A-9"), ("page_start", 2),
                                           ("review_state", "approved")])
def test_a_database_writer_cannot_move_a_passage_to_another_page_or_approve_it(fresh, column, value):
    """Page locators and review state are covered by the version's signature (issue 16): a row
    edited behind the service is refused, never served with a forged page or approval."""
    import sqlalchemy as sa

    from services.retrieval.store.models import PassageRow

    reply = fresh.ingest("notes", fixtures.notes_and_tables_pdf(), filename="notes.pdf")
    target = reply.extraction.passages_needing_review[0] if column == "review_state" else reply.passages[0].passage_id
    engine = sa.create_engine(fresh.core.store.url)
    with engine.begin() as conn:
        conn.execute(PassageRow.__table__.update().where(PassageRow.__table__.c.passage_id == target)
                     .values(**{column: value}))
    engine.dispose()
    code, reason, _ = refused(fresh.get, [target])
    assert code == grpc.StatusCode.DATA_LOSS and reason.startswith("PASSAGE"), reason


def test_an_approval_past_its_callers_deadline_is_not_committed(fresh):
    """Issue 17 §4: ApprovePassages checks the caller's deadline just before its commit; past it the
    passage stays under review (and its version is not re-signed); with time to spare it commits."""
    from citetrace.kit.auth import Principal
    from citetrace.kit.context import call_context
    from citetrace.kit.errors import DeadlineExceeded

    reply = fresh.ingest("notes-late", fixtures.notes_and_tables_pdf(), filename="notes.pdf")
    pending = list(reply.extraction.passages_needing_review)[0]
    admin = Principal(TENANT, "admin-1", ("policy_admin",))
    with call_context(admin, None, timeout=-1.0), pytest.raises(DeadlineExceeded) as refused_late:
        fresh.core.approve_passages(admin, [pending])
    assert refused_late.value.reason == "DEADLINE_PASSED"
    assert fresh.get([pending]).passages[0].review_state == common_pb2.REVIEW_STATE_PENDING
    with call_context(admin, None, timeout=30.0):
        fresh.core.approve_passages(admin, [pending])
    assert fresh.get([pending]).passages[0].review_state == common_pb2.REVIEW_STATE_APPROVED
