"""Scope filters end to end over real gRPC, the shape of a Search answer, determinism, bad input,
spans and the empty-result metric."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import pytest
from citetrace.kit.telemetry import add_span_processor, setup_tracing
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY

from .conftest import T2024, T2025, failure, running_service

Q = "when should I arrive for my appointment"


def doc_ids(reply) -> list[str]:
    return [h.passage.identity.document_id for h in reply.hits]


@pytest.fixture(scope="module")
def world(svc):
    """Two tenants; audiences, locations, locales, windows and statuses that must be kept apart."""
    a = "scope-a"
    ids = {}
    ids["general"] = svc.ingest(a, "general", "Arrive 15 minutes before your appointment.")
    ids["staff"] = svc.ingest(a, "staff-only", "Staff arrive 30 minutes before the first appointment.",
                              roles=("staff",))
    ids["north"] = svc.ingest(a, "north", "At the north clinic arrive 20 minutes before your appointment.",
                              location_scope=("loc-north",))
    ids["south"] = svc.ingest(a, "south", "At the south clinic arrive 25 minutes before your appointment.",
                              location_scope=("loc-south",))
    ids["future"] = svc.ingest(a, "future", "From 2030 arrive 40 minutes before your appointment.",
                               valid_from=datetime(2030, 1, 1, tzinfo=UTC))
    ids["expired"] = svc.ingest(a, "expired", "Until 2024 arrive 5 minutes before your appointment.",
                                valid_from=datetime(2023, 1, 1, tzinfo=UTC), valid_to=T2024)
    ids["retired"] = svc.ingest(a, "retired", "Retired rule: arrive 50 minutes before your appointment.",
                                status="retired")
    ids["norsk"] = svc.ingest(a, "norsk", "Kom 15 minutter før timen din.", locale="nb-NO")
    ids["cancel"] = svc.ingest(a, "cancel", "Cancel your appointment 24 hours ahead to avoid a fee.",
                               intents=("cancellation_rescheduling",), source_class="cancellation_policy")
    ids["other-tenant"] = svc.ingest("scope-b", "general", "Tenant B: arrive 60 minutes before your appointment.")
    return ids


def test_another_tenants_passages_are_never_searched_or_read(svc, world):
    hits = svc.search("scope-a", Q, k=50)
    assert "Tenant B" not in " ".join(h.passage.text for h in hits.hits)
    assert all(h.passage.identity.tenant_id == "scope-a" for h in hits.hits)
    foreign = world["other-tenant"].passages[0].passage_id
    code, reason = failure(svc.get, "scope-a", passage_ids=[foreign])
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "PASSAGE_NOT_FOUND")
    code, reason = failure(svc.get, "scope-a", spans=[(world["other-tenant"].version.version_id, 0, 5)])
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "VERSION_NOT_FOUND")


@pytest.mark.parametrize("mode", [pb.SEARCH_MODE_HYBRID, pb.SEARCH_MODE_LEXICAL, pb.SEARCH_MODE_VECTOR])
def test_source_classes_narrow_both_retrievers(svc, world, mode):
    """scope.source_classes is a filter inside the lexical and the vector retrieval (empty = any)."""
    only_cancel = svc.search("scope-a", Q, k=50, mode=mode, source_classes=("cancellation_policy",))
    assert set(doc_ids(only_cancel)) == {"cancel"}
    assert list(only_cancel.settings.filters.source_classes) == ["cancellation_policy"]
    policies = set(doc_ids(svc.search("scope-a", Q, k=50, mode=mode, source_classes=("scheduling_policy",))))
    assert "cancel" not in policies and {"general", "north", "south"} <= policies
    assert svc.search("scope-a", Q, k=50, mode=mode, source_classes=("regulatory",)).hits == []
    everything = set(doc_ids(svc.search("scope-a", Q, k=50, mode=mode)))
    assert everything == policies | {"cancel"}
    # Combined with the other clauses: another tenant's cancellation policy never appears.
    assert set(doc_ids(svc.search("scope-b", Q, k=50, mode=mode, source_classes=("cancellation_policy",)))) == set()


def test_roles_decide_the_audience_in_search_and_reads(svc, world):
    assert "staff-only" not in doc_ids(svc.search("scope-a", Q, k=50, roles=("patient",)))
    assert "staff-only" in doc_ids(svc.search("scope-a", Q, k=50, roles=("staff",)))
    staff_passage = world["staff"].passages[0].passage_id
    code, reason = failure(svc.get, "scope-a", passage_ids=[staff_passage], roles=("patient",))
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "PASSAGE_NOT_FOUND")
    assert svc.get("scope-a", passage_ids=[staff_passage], roles=("staff",)).passages[0].text.startswith("Staff")
    assert svc.get("scope-a", passage_ids=[staff_passage], roles=("auditor",)).passages


def test_locations_from_the_request_and_the_principal(svc, world):
    everything = doc_ids(svc.search("scope-a", Q, k=50))
    assert {"north", "south", "general"} <= set(everything)
    north = doc_ids(svc.search("scope-a", Q, k=50, scope_locations=("loc-north",)))
    assert "north" in north and "south" not in north and "general" in north  # general: all locations
    # A principal limited to loc-south never sees loc-north, whatever it asks.
    south_only = doc_ids(svc.search("scope-a", Q, k=50, locations=("loc-south",)))
    assert "south" in south_only and "north" not in south_only
    code, reason = failure(svc.search, "scope-a", Q, locations=("loc-south",), scope_locations=("loc-north",))
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "LOCATION_NOT_PERMITTED")
    reply = svc.search("scope-a", Q, k=5, locations=("loc-south",))
    assert list(reply.settings.filters.location_ids) == ["loc-south"]


def test_each_hits_version_comes_with_the_search_once_with_its_scope_and_status(svc, world):
    """SearchResponse.versions: the version of every hit, once, as GetPassages reports it (the
    orchestrator reads a hit's location scope there instead of a second round trip)."""
    reply = svc.search("scope-a", Q, k=50)
    hit_versions = {h.passage.identity.version_id for h in reply.hits}
    assert [v.version_id for v in reply.versions] == list(dict.fromkeys(
        h.passage.identity.version_id for h in reply.hits))
    assert {v.version_id for v in reply.versions} == hit_versions
    read = svc.get("scope-a", passage_ids=[h.passage.identity.passage_id for h in reply.hits])
    assert sorted(v.SerializeToString(deterministic=True) for v in reply.versions) == \
        sorted(v.SerializeToString(deterministic=True) for v in read.versions)
    scopes = {v.document.document_id: tuple(v.location_scope) for v in reply.versions}
    assert scopes["north"] == ("loc-north",) and scopes["south"] == ("loc-south",) and scopes["general"] == ()
    assert svc.search("scope-a", "nothing at all matches zzqx", k=5, mode=pb.SEARCH_MODE_LEXICAL).versions == []


def test_the_effective_window_and_status(svc, world):
    now = doc_ids(svc.search("scope-a", Q, k=50))
    assert "future" not in now and "expired" not in now and "retired" not in now
    in_2031 = doc_ids(svc.search("scope-a", Q, k=50, as_of=datetime(2031, 1, 1, tzinfo=UTC)))
    assert "future" in in_2031
    in_2023 = doc_ids(svc.search("scope-a", Q, k=50, as_of=datetime(2023, 6, 1, tzinfo=UTC)))
    assert in_2023 == ["expired"]  # everything else starts in 2025 or is retired
    # valid_to is exclusive.
    at_end = doc_ids(svc.search("scope-a", Q, k=50, as_of=T2024))
    assert "expired" not in at_end
    assert "expired" in doc_ids(svc.search("scope-a", Q, k=50, as_of=T2024 - timedelta(microseconds=1)))


def test_intents_and_locale_narrow_inside_the_query(svc, world):
    cancel = doc_ids(svc.search("scope-a", Q, k=50, intents=("cancellation_rescheduling",)))
    assert cancel == ["cancel"]
    norsk = svc.search("scope-a", "når skal jeg komme", k=50, locale="nb-NO")
    assert doc_ids(norsk) == ["norsk"]
    assert norsk.settings.filters.locale == "nb-NO"


def test_an_empty_result_is_an_answer_and_counts_in_the_metric(svc, world):
    before = REGISTRY.get_sample_value("citetrace_retrieval_empty_total") or 0.0
    reply = svc.search("scope-a", Q, k=5, intents=("provider_information",))
    assert list(reply.hits) == []
    assert REGISTRY.get_sample_value("citetrace_retrieval_empty_total") == before + 1


def test_hits_carry_labels_scores_ranks_and_the_settings_used(svc, world):
    reply = svc.search("scope-a", Q, k=4)
    assert [h.label for h in reply.hits] == ["S1", "S2", "S3", "S4"]
    assert [h.fused_rank for h in reply.hits] == [1, 2, 3, 4]
    fused = [h.fused_score for h in reply.hits]
    assert fused == sorted(fused, reverse=True)
    assert all(h.vector_rank >= 1 for h in reply.hits)  # every eligible passage has a vector
    assert any(h.lexical_rank >= 1 and h.lexical_score > 0 for h in reply.hits)
    for h in reply.hits:
        assert h.passage.identity.content_sha256 and h.passage.text
    s = reply.settings
    assert (s.backend, s.k, s.fusion_method, s.rrf_k) == ("embedded", 4, "zscore", 60)
    assert (s.lexical_weight, s.vector_weight, s.candidate_k) == (0.55, 0.45, 100)
    assert s.embedding_model_id.startswith("all-MiniLM-L6-v2")
    assert s.index_generation.startswith("embedded:")
    assert s.filters.tenant_id == "scope-a" and list(s.filters.roles) == ["patient"]
    assert s.filters.status == 2 and s.filters.effective_at.seconds > 0
    # Lexical-only and vector-only modes report themselves and leave the other rank empty.
    lexical = svc.search("scope-a", Q, k=3, mode=pb.SEARCH_MODE_LEXICAL)
    assert lexical.settings.mode == pb.SEARCH_MODE_LEXICAL
    assert all(h.vector_rank == 0 and h.lexical_rank == h.fused_rank for h in lexical.hits)
    vector = svc.search("scope-a", Q, k=3, mode=pb.SEARCH_MODE_VECTOR)
    assert all(h.lexical_rank == 0 and h.vector_rank == h.fused_rank for h in vector.hits)


TIES = ["walk-ins accepted never", "never accepted walk-ins", "accepted never walk-ins", "walk-ins never accepted"]


def test_fused_ties_break_by_passage_id(auth, tmp_path):
    # The fused order's tie-break, so without the rerank (which orders by each passage's relevance).
    with running_service(auth, tmp_path, rerank_backend="none") as plain:
        # The same words in a different order: equal BM25 scores in every document.
        for i, text in enumerate(TIES):
            plain.ingest("scope-ties", f"tie-{i}", text)
        lexical = plain.search("scope-ties", "walk-ins accepted", k=10, mode=pb.SEARCH_MODE_LEXICAL)
    scores = {h.lexical_score for h in lexical.hits}
    assert len(lexical.hits) == 4 and len(scores) == 1
    ids = [h.passage.identity.passage_id for h in lexical.hits]
    assert ids == sorted(ids)


def test_search_order_is_repeatable(svc):
    for i, text in enumerate(TIES):
        svc.ingest("scope-ties", f"tie-{i}", text)
    for mode in (pb.SEARCH_MODE_LEXICAL, pb.SEARCH_MODE_HYBRID):
        orders = [[h.passage.identity.passage_id for h in svc.search("scope-ties", "walk-ins accepted", k=10,
                                                                      mode=mode).hits] for _ in range(3)]
        assert len(orders[0]) == 4 and orders[0] == orders[1] == orders[2]


@pytest.mark.parametrize(("kwargs", "code", "reason"), [
    ({"query": ""}, grpc.StatusCode.INVALID_ARGUMENT, "EMPTY_QUERY"),
    ({"query": " \t\n "}, grpc.StatusCode.INVALID_ARGUMENT, "EMPTY_QUERY"),
    ({"query": "x" * 2001}, grpc.StatusCode.INVALID_ARGUMENT, "QUERY_TOO_LONG"),
    ({"k": 0}, grpc.StatusCode.INVALID_ARGUMENT, "K_OUT_OF_RANGE"),
    ({"k": 51}, grpc.StatusCode.INVALID_ARGUMENT, "K_OUT_OF_RANGE"),
    ({"k": -1}, grpc.StatusCode.INVALID_ARGUMENT, "K_OUT_OF_RANGE"),
    ({"tenant": "no-such-tenant"}, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_TENANT"),
    ({"intents": ("clinical_advice",)}, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE"),  # the edge
    ({"intents": ("clinical",)}, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_INTENT"),  # no policy answers it
    ({"mode": 7}, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE"),
    ({"locale": "not a locale"}, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_LOCALE"),
    ({"source_classes": ("gossip",)}, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_SOURCE_CLASS"),
])
def test_bad_search_input(svc, world, kwargs, code, reason):
    args = {"tenant": "scope-a", "query": Q, "k": 5, **kwargs}
    tenant, query = args.pop("tenant"), args.pop("query")
    assert failure(svc.search, tenant, query, **args) == (code, reason)


@pytest.mark.parametrize(("kwargs", "code", "reason"), [
    ({"caller_roles": ("patient",)}, grpc.StatusCode.PERMISSION_DENIED, "POLICY_ADMIN_REQUIRED"),
    ({"caller_tenant": "scope-b"}, grpc.StatusCode.PERMISSION_DENIED, "TENANT_MISMATCH"),
    ({"text": "  \n "}, grpc.StatusCode.INVALID_ARGUMENT, "EMPTY_TEXT"),
    ({"source_class": "blog"}, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_SOURCE_CLASS"),
    ({"roles": ()}, grpc.StatusCode.INVALID_ARGUMENT, "MISSING_ROLES"),
    ({"roles": ("everyone",)}, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_ROLE"),
    ({"intents": ("gossip",)}, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE"),
    ({"intents": ("clinical",)}, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_INTENT"),
    ({"document_id": ""}, grpc.StatusCode.INVALID_ARGUMENT, "MISSING_DOCUMENT_ID"),
    ({"valid_to": T2025}, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_VALIDITY_WINDOW"),
    ({"document_id": "has:colon"}, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_DOCUMENT_ID"),
    ({"title": " "}, grpc.StatusCode.INVALID_ARGUMENT, "MISSING_TITLE"),
])
def test_bad_ingest_input_stores_nothing(svc, kwargs, code, reason):
    args = {"tenant": "scope-bad", "document_id": "bad-doc", "text": "Arrive early.", **kwargs}
    tenant, document_id, text = args.pop("tenant"), args.pop("document_id"), args.pop("text")
    assert failure(svc.ingest, tenant, document_id, text, **args) == (code, reason)
    assert list(svc.versions("scope-bad").versions) == []


def test_get_passages_bad_input(svc, world):
    version = world["general"].version
    assert failure(svc.get, "scope-a") == (grpc.StatusCode.INVALID_ARGUMENT, "NOTHING_REQUESTED")
    assert failure(svc.get, "scope-a", spans=[(version.version_id, 5, 5)]) == \
        (grpc.StatusCode.INVALID_ARGUMENT, "SPAN_OUT_OF_RANGE")
    assert failure(svc.get, "scope-a", spans=[(version.version_id, 0, version.text_length + 1)]) == \
        (grpc.StatusCode.INVALID_ARGUMENT, "SPAN_OUT_OF_RANGE")
    assert failure(svc.get, "scope-a", passage_ids=["f" * 64]) == (grpc.StatusCode.NOT_FOUND, "PASSAGE_NOT_FOUND")
    assert failure(svc.get, "scope-a", spans=[("", 0, 3)]) == (grpc.StatusCode.INVALID_ARGUMENT, "MISSING_VERSION_ID")
    assert failure(svc.get, "scope-a", passage_ids=["a"] * 201) == \
        (grpc.StatusCode.INVALID_ARGUMENT, "TOO_MANY_PASSAGES")


def test_search_emits_the_stage_spans_without_text(svc, world):
    exporter = InMemorySpanExporter()
    setup_tracing("citetrace-test")
    add_span_processor(SimpleSpanProcessor(exporter))
    svc.search("scope-a", "a very particular question about parking", k=3)
    spans = exporter.get_finished_spans()
    by_name = {s.name: s for s in spans}
    for name in ("retrieval.search", "retrieval.embed", "retrieval.lexical", "retrieval.vector", "retrieval.fuse"):
        assert name in by_name, name
    root = by_name["retrieval.search"]
    for name in ("retrieval.embed", "retrieval.lexical", "retrieval.vector", "retrieval.fuse"):
        assert by_name[name].parent.span_id == root.context.span_id
    for span in spans:
        assert not any("parking" in str(v) for v in (span.attributes or {}).values())


def test_the_split_lexical_vector_fuse_path_equals_the_backends_own_hybrid_search(svc, world):
    """The service runs each retriever on its own (for the retrieval.lexical / retrieval.vector
    spans) and fuses with the shared rule: the ranking must equal the backend's hybrid search."""
    from services.retrieval.index import ScopeFilter, SearchQuery

    core = svc.core
    as_of = datetime(2025, 6, 1, tzinfo=UTC)
    for query in (Q, "cancel a fee", "kom før timen", "north clinic"):
        reply = svc.search("scope-a", query, k=8, as_of=as_of)
        scope = ScopeFilter(tenant_id="scope-a", roles=("patient",), location_ids=(), intents=(), locale=None,
                            as_of=as_of)
        direct = core.backend.search(SearchQuery(text=query, vector=core.embedder.embed([query])[0], scope=scope,
                                                 k=8, fusion=core.fusion))
        assert [h.passage.identity.passage_id for h in reply.hits] == [h.passage_id for h in direct]
        assert [round(h.fused_score, 9) for h in reply.hits] == [round(h.fused_score, 9) for h in direct]
