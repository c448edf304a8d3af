"""Identity of evidence over real gRPC: content-derived IDs, idempotency, exact offsets and digests."""

from __future__ import annotations

import hashlib

import grpc
from citetrace.common.v1 import common_pb2

from .conftest import failure

UNICODE_DOC = (
    "# Oppmøte og ankomst 🏥\r\n\r\n"
    "Kom 15 minutter før timen. Café crème is served in the lobby ☕.\r\n\r\n"
    "Unntak: første time hos fysioterapeut, kom 20 minutter før 😀.\r\n\r\n"
    "## 中文说明\r\n\r\n"
    "请提前十五分钟到达。Combining: e\u0301 and a\u030a; astral: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢.\r\n"
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_ids_are_content_derived_and_offsets_slice_the_normalized_text(svc):
    reply = svc.ingest("t-ident", "unicode-doc", UNICODE_DOC, locale="nb-NO")
    normalized = UNICODE_DOC.replace("\r\n", "\n")
    assert reply.created is True
    assert reply.version.version_id == sha(normalized)
    assert reply.version.text_length == len(normalized)
    assert reply.passages, "a document yields passages"
    for p in reply.passages:
        expected_id = sha(f"t-ident:unicode-doc:{reply.version.version_id}:{p.start}:{p.end}")
        assert p.passage_id == expected_id
        assert p.content_sha256 == sha(normalized[p.start:p.end])
        assert p.extraction_version == reply.version.extraction_version
    # The rule and its nb-NO exception are one passage, under the heading path.
    first = reply.passages[0]
    assert normalized[first.start:first.end].startswith("Kom 15 minutter")
    assert normalized[first.start:first.end].endswith("20 minutter før 😀.")
    assert first.source_anchor == "Oppmøte og ankomst 🏥"
    assert reply.passages[-1].source_anchor == "Oppmøte og ankomst 🏥 > 中文说明"


def test_unicode_round_trips_exactly_through_get_passages(svc):
    reply = svc.ingest("t-ident", "unicode-roundtrip", UNICODE_DOC + "\nExtra line é.", locale="nb-NO")
    normalized = (UNICODE_DOC + "\nExtra line é.").replace("\r\n", "\n")
    got = svc.get("t-ident", passage_ids=[p.passage_id for p in reply.passages])
    assert [p.text for p in got.passages] == [normalized[p.start:p.end] for p in reply.passages]
    for passage in got.passages:
        assert passage.identity.content_sha256 == sha(passage.text)
        assert passage.locale == "nb-NO"
    # The same span by locator gives the same identity and text.
    target = reply.passages[-1]
    by_span = svc.get("t-ident", spans=[(reply.version.version_id, target.start, target.end)])
    assert by_span.passages[0].identity.passage_id == target.passage_id
    assert by_span.passages[0].text == normalized[target.start:target.end]
    # An arbitrary span (not a stored passage) over astral characters: exact code-point slice.
    start = normalized.index("𝔘")
    span = svc.get("t-ident", spans=[(reply.version.version_id, start, start + 7)])
    assert span.passages[0].text == "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"
    assert span.passages[0].identity.content_sha256 == sha("𝔘𝔫𝔦𝔠𝔬𝔡𝔢")
    assert span.passages[0].identity.source_anchor == "Oppmøte og ankomst 🏥 > 中文说明"
    assert span.versions[0].version_id == reply.version.version_id


def test_ingesting_the_same_text_twice_creates_nothing_new(svc):
    first = svc.ingest("t-ident", "same-twice", "# A\n\nArrive 10 minutes early.\n")
    # CRLF differs only in line endings: the same normalized text, the same version.
    second = svc.ingest("t-ident", "same-twice", "# A\r\n\r\nArrive 10 minutes early.\r\n")
    assert first.created and not second.created
    assert second.version.version_id == first.version.version_id
    assert [p.passage_id for p in second.passages] == [p.passage_id for p in first.passages]
    listed = svc.versions("t-ident", document_id="same-twice")
    assert len(listed.versions) == 1


def test_the_same_text_without_valid_from_again_is_still_idempotent(svc):
    first = svc.ingest("t-ident", "no-window", "Arrive 5 minutes early.", valid_from=None)
    again = svc.ingest("t-ident", "no-window", "Arrive 5 minutes early.", valid_from=None)
    assert first.created and not again.created
    assert again.version.valid_from == first.version.valid_from


def test_same_text_with_different_audience_is_refused_not_silently_ignored(svc):
    svc.ingest("t-ident", "meta-doc", "Arrive 7 minutes early.", roles=("patient",))
    code, reason = failure(svc.ingest, "t-ident", "meta-doc", "Arrive 7 minutes early.", roles=("staff",))
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "VERSION_METADATA_CONFLICT")


def test_identical_text_cannot_be_a_version_of_two_documents(svc):
    svc.ingest("t-ident", "doc-one", "Identical body text for two documents.")
    code, reason = failure(svc.ingest, "t-ident", "doc-two", "Identical body text for two documents.")
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "VERSION_TEXT_CONFLICT")
    # Another tenant may hold the same text: identities include the tenant.
    other = svc.ingest("t-ident-2", "doc-one", "Identical body text for two documents.")
    assert other.created


def test_reextraction_with_other_chunk_settings_keeps_old_passages_readable(auth, tmp_path):
    from .conftest import running_service

    text = "\n\n".join(f"Rule {i}: arrive {i + 5} minutes before the visit." for i in range(6))
    with running_service(auth, tmp_path, chunk_target_chars=60, chunk_hard_limit_chars=400) as small:
        old = small.ingest("t-rechunk", "rules", text)
    with running_service(auth, tmp_path, chunk_target_chars=2000, chunk_hard_limit_chars=4000) as large:
        new = large.ingest("t-rechunk", "rules", text)
        assert new.created is False
        assert new.version.version_id == old.version.version_id
        assert new.version.extraction_version != old.version.extraction_version
        assert len(new.passages) == 1 and len(old.passages) > 1
        # What an old trace points to is still there, byte for byte.
        got = large.get("t-rechunk", passage_ids=[p.passage_id for p in old.passages])
        assert [p.text for p in got.passages] == [text[p.start:p.end] for p in old.passages]
        # Search sees the current extraction only.
        hits = large.search("t-rechunk", "arrive minutes before the visit", k=10).hits
        assert [h.passage.identity.passage_id for h in hits] == [new.passages[0].passage_id]


def test_ingest_reports_status_and_metadata(svc):
    reply = svc.ingest("t-ident", "meta-report", "Bring your ID.", status="draft", location_scope=("loc-b", "loc-a"),
                       intents=("arrival_preparation", "other"), roles=("staff", "patient"))
    v = reply.version
    assert v.status == common_pb2.VERSION_STATUS_DRAFT
    assert list(v.location_scope) == ["loc-a", "loc-b"]
    assert list(v.roles) == ["patient", "staff"]
    assert v.document.source_class == "scheduling_policy"
    assert v.extraction_version.startswith("md-rules/")


def test_the_bulk_path_stores_each_document_on_its_own(svc):
    from citetrace.kit.auth import Principal
    from citetrace.kit.errors import DomainError

    from services.retrieval.core import IngestCommand
    from services.retrieval.store.records import DocumentRecord

    admin = Principal("t-bulk", "loader", ("policy_admin",))

    def cmd(doc_id, text, source_class="handbook"):
        return IngestCommand(DocumentRecord("t-bulk", doc_id, source_class, "Bulk doc", ""), text, None, None, None,
                             ("patient",), (), ("other",), "en")

    results = svc.core.ingest_many(admin, [cmd("b1", "First bulk text."), cmd("b2", "Second.", "rumour"),
                                           cmd("b3", "Third bulk text.")])
    assert isinstance(results[1], DomainError) and results[1].reason == "UNKNOWN_SOURCE_CLASS"
    assert results[0].created and results[2].created
    stored = sorted(v.document.document_id for v in svc.versions("t-bulk").versions)
    assert stored == ["b1", "b3"]
    again = svc.core.ingest_many(admin, [cmd("b1", "First bulk text.")])
    assert again[0].created is False and again[0].version.version_id == results[0].version.version_id


def test_a_bulk_batch_with_two_versions_of_one_document_supersedes_in_order(svc):
    from datetime import UTC, datetime

    from citetrace.kit.auth import Principal

    from services.retrieval.core import IngestCommand
    from services.retrieval.store.records import DocumentRecord

    admin = Principal("t-bulk2", "loader", ("policy_admin",))

    def cmd(text, year):
        return IngestCommand(DocumentRecord("t-bulk2", "policy", "handbook", "Bulk doc", ""), text, None,
                             datetime(year, 1, 1, tzinfo=UTC), None, ("patient",), (), ("other",), "en")

    first, second = svc.core.ingest_many(admin, [cmd("Arrive 10 minutes early.", 2024),
                                                 cmd("Arrive 20 minutes early.", 2025)])
    assert [v.version_id for v in second.superseded] == [first.version.version_id]
    now = [h.passage.identity.version_id for h in svc.search("t-bulk2", "arrive early").hits]
    assert now == [second.version.version_id]
    then = svc.search("t-bulk2", "arrive early", as_of=datetime(2024, 6, 1, tzinfo=UTC)).hits
    assert [h.passage.identity.version_id for h in then] == [first.version.version_id]
