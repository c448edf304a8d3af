"""The retrieval service with backend=opensearch over real gRPC: scoped search, lifecycle, a
restart rebuilding a new generation, agreement with the embedded backend on eligibility, and
UNAVAILABLE / SEARCH_BACKEND_UNAVAILABLE when OpenSearch goes away."""

from __future__ import annotations

import contextlib
import uuid

import grpc
import pytest
from citetrace.kit.clients import error_info

from ..service.conftest import failure, running_service
from .faults import FaultProxy

pytestmark = pytest.mark.opensearch

Q = "when should I arrive for my appointment"


def doc_ids(reply) -> list[str]:
    return [h.passage.identity.document_id for h in reply.hits]


@contextlib.contextmanager
def os_service(auth, data_dir, url, prefix=None, **overrides):
    prefix = prefix or f"ct-svc-{uuid.uuid4().hex[:10]}-"
    settings = dict(backend="opensearch", opensearch_hosts=(url,), opensearch_index_prefix=prefix,
                    opensearch_timeout_seconds=30.0)
    settings.update(overrides)
    with running_service(auth, data_dir, **settings) as client:
        yield client


def load_world(svc):
    svc.ingest("os-a", "general", "Arrive 15 minutes before your appointment.")
    svc.ingest("os-a", "staff-only", "Staff arrive 30 minutes before the first appointment.", roles=("staff",))
    svc.ingest("os-a", "north", "At the north clinic arrive 20 minutes before your appointment.",
               location_scope=("loc-north",))
    svc.ingest("os-b", "other-tenant", "Arrive 15 minutes before your appointment.")


def test_search_over_grpc_with_the_opensearch_backend(auth, tmp_path, opensearch_url, prefix):
    with os_service(auth, tmp_path, opensearch_url, prefix) as svc:
        load_world(svc)
        reply = svc.search("os-a", Q, k=10)
        assert reply.settings.backend == "opensearch"
        live = svc.core.backend.live_generation()
        assert reply.settings.index_generation.startswith(f"{live}@")
        assert sorted(doc_ids(reply)) == ["general", "north"]  # not staff-only, not the other tenant
        assert [h.label for h in reply.hits] == ["S1", "S2"]
        assert all(h.lexical_rank and h.vector_rank for h in reply.hits)
        assert sorted(doc_ids(svc.search("os-a", Q, roles=("staff",)))) == ["general", "north", "staff-only"]
        assert doc_ids(svc.search("os-a", Q, scope_locations=("loc-south",))) == ["general"]
        assert doc_ids(svc.search("os-b", Q)) == ["other-tenant"]
        again = svc.search("os-a", Q, k=10)
        assert [(h.passage.identity.passage_id, h.fused_score) for h in again.hits] == [
            (h.passage.identity.passage_id, h.fused_score) for h in reply.hits]  # deterministic

        version = svc.ingest("os-a", "north", "At the north clinic arrive 20 minutes before your appointment.",
                             location_scope=("loc-north",)).version.version_id
        svc.set_status("os-a", version, "retired")
        assert doc_ids(svc.search("os-a", Q)) == ["general"]


def test_a_restart_rebuilds_a_new_generation_from_the_store(auth, tmp_path, opensearch_url, prefix):
    with os_service(auth, tmp_path, opensearch_url, prefix) as svc:
        load_world(svc)
        first = svc.core.backend.live_generation()
        before = [(h.passage.identity.passage_id, h.fused_rank) for h in svc.search("os-a", Q).hits]
    with os_service(auth, tmp_path, opensearch_url, prefix) as svc:
        second = svc.core.backend.live_generation()
        assert second != first
        assert [g.name for g in svc.core.backend.list_generations()] == [first, second]
        assert [(h.passage.identity.passage_id, h.fused_rank) for h in svc.search("os-a", Q).hits] == before
    with os_service(auth, tmp_path, opensearch_url, prefix, opensearch_rebuild_on_start=False) as svc:
        assert svc.core.backend.live_generation() == second
        assert [(h.passage.identity.passage_id, h.fused_rank) for h in svc.search("os-a", Q).hits] == before


def test_the_same_passages_are_eligible_as_on_the_embedded_backend(auth, tmp_path, opensearch_url, prefix):
    results = {}
    for name, overrides in (("embedded", {}), ("opensearch", {})):
        manager = (os_service(auth, tmp_path / name, opensearch_url, prefix) if name == "opensearch"
                   else running_service(auth, tmp_path / name, **overrides))
        with manager as svc:
            load_world(svc)
            results[name] = [
                sorted(doc_ids(svc.search("os-a", Q, roles=roles, scope_locations=locations, k=50, mode=mode)))
                for roles in (("patient",), ("staff",), ()) for locations in ((), ("loc-north",))
                for mode in (1, 2, 3)]
    assert results["opensearch"] == results["embedded"]


def test_opensearch_going_away_is_unavailable_search_backend_unavailable(auth, tmp_path, opensearch_url, prefix):
    proxy = FaultProxy(opensearch_url)
    try:
        with os_service(auth, tmp_path, proxy.url, prefix, opensearch_max_retries=1,
                        opensearch_retry_backoff_seconds=0.05) as svc:
            load_world(svc)
            assert doc_ids(svc.search("os-b", Q)) == ["other-tenant"]
            proxy.fail(1, 503)  # one transient failure is absorbed by a retry
            assert doc_ids(svc.search("os-b", Q)) == ["other-tenant"]
            proxy.stop()  # now the port refuses connections
            with pytest.raises(grpc.RpcError) as caught:
                svc.search("os-b", Q)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            info = error_info(caught.value)
            assert (info.reason, info.domain) == ("SEARCH_BACKEND_UNAVAILABLE", "retrieval.citetrace")
            assert failure(svc.search, "os-b", Q, mode=2) == (grpc.StatusCode.UNAVAILABLE,
                                                              "SEARCH_BACKEND_UNAVAILABLE")
    finally:
        with contextlib.suppress(Exception):
            proxy.stop()


def test_a_version_the_index_refuses_is_unavailable_and_its_retry_makes_it_searchable(
        auth, tmp_path, opensearch_url, prefix):
    """Stored but refused by the shared index (here the alias points at two indices, the state a
    first-generation race once left): the caller is told UNAVAILABLE / INDEX_WRITE_FAILED, never OK
    for a version no search can find; the same ingestion, retried once the index takes writes,
    replays the stored version into it."""
    text = "Guide dogs are welcome in every waiting room."
    with os_service(auth, tmp_path, opensearch_url, prefix, opensearch_rebuild_on_start=False) as svc:
        load_world(svc)
        backend = svc.core.backend
        stray = f"{backend.config.alias}-stray"
        backend.client.indices.create(index=stray, body={"aliases": {backend.config.alias: {}}})
        try:
            assert failure(svc.ingest, "os-a", "dogs", text) == (grpc.StatusCode.UNAVAILABLE, "INDEX_WRITE_FAILED")
            assert svc.core.store.list_versions("os-a", document_id="dogs", status=None, limit=5, after=None)  # stored
        finally:
            backend.client.indices.delete(index=stray)
        svc.ingest("os-a", "dogs", text)
        assert doc_ids(svc.search("os-a", "can I bring my guide dog", k=1)) == ["dogs"]
