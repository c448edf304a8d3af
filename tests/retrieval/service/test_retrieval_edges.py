"""Issue 17 at the retrieval service, over real gRPC: an ingest whose caller's deadline passes is not
committed (§4); document IDs and locales are checked whole at the edge (§2)."""

from __future__ import annotations

import threading
import time

import grpc
import pytest

from .conftest import failure

TEXT = "# Parking\n\nParking at Harbor Imaging costs 40 NOK per hour. Pay at the machine by the door.\n"


def test_an_ingest_past_its_callers_deadline_is_not_committed(fresh):
    core = fresh.core
    embed = core._embed
    finished = threading.Event()

    def slow_embed(texts):  # the probe's ~90 s ingest, shortened: the deadline passes mid-ingest
        time.sleep(1.5)
        try:
            return embed(texts)
        finally:
            finished.set()

    core._embed = slow_embed
    try:
        with pytest.raises(grpc.RpcError) as caught:
            fresh.stub.IngestDocument(_request("deadline-doc"), timeout=0.5,
                                      metadata=fresh.md("edge-a", ("policy_admin",)))
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert finished.wait(10)
        time.sleep(0.5)  # the server-side handler runs on past the client's deadline; let it end
    finally:
        core._embed = embed
    assert list(fresh.versions("edge-a", "deadline-doc").versions) == []
    # The same ingest with time to spare commits.
    ok = fresh.stub.IngestDocument(_request("deadline-doc"), timeout=30, metadata=fresh.md("edge-a", ("policy_admin",)))
    assert ok.created
    assert len(fresh.versions("edge-a", "deadline-doc").versions) == 1


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({"document_id": "probe-nl\n"}, "INVALID_DOCUMENT_ID"),
    ({"document_id": "d" * 100_000}, "INVALID_DOCUMENT_ID"),
    ({"locale": "e" * 5000}, "INVALID_LOCALE"),
    ({"locale": "en\n"}, "INVALID_LOCALE"),
    ({"location_scope": ("loc-1\n",)}, "INVALID_LOCATION_ID"),
])
def test_ids_and_locales_are_matched_whole(svc, kwargs, reason):
    assert failure(svc.ingest, "edge-b", kwargs.pop("document_id", "edge-doc"), TEXT, **kwargs) == (
        grpc.StatusCode.INVALID_ARGUMENT, reason)
    assert list(svc.versions("edge-b").versions) == []


def _request(document_id):
    from citetrace.common.v1 import common_pb2
    from citetrace.retrieval.v1 import retrieval_service_pb2 as pb

    return pb.IngestDocumentRequest(
        document=common_pb2.Document(tenant_id="edge-a", document_id=document_id, source_class="scheduling_policy",
                                     title="Parking (synthetic)"),
        text=TEXT, roles=["patient"], locale="en")


def test_a_status_change_past_its_callers_deadline_is_not_committed(fresh):
    """Issue 17 §4: SetVersionStatus (like every write of the store) checks the caller's deadline
    just before its commit; past it, nothing changes: the version keeps its status and no retirement
    event is queued for trace."""
    import datetime as dt

    from citetrace.kit.auth import Principal
    from citetrace.kit.context import call_context
    from citetrace.kit.errors import DeadlineExceeded

    ingested = fresh.stub.IngestDocument(_request("deadline-status"), timeout=30,
                                         metadata=fresh.md("edge-a", ("policy_admin",)))
    version_id = ingested.version.version_id
    admin = Principal("edge-a", "admin-1", ("policy_admin",))
    later = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)
    events_before = fresh.core.store.due_version_events(later, 1000)
    with call_context(admin, None, timeout=-1.0), pytest.raises(DeadlineExceeded) as refused:
        fresh.core.set_status(admin, version_id, "retired")
    assert refused.value.reason == "DEADLINE_PASSED"
    (version,) = fresh.versions("edge-a", "deadline-status").versions
    assert version.status == ingested.version.status
    assert fresh.core.store.due_version_events(later, 1000) == events_before
    # With time to spare the same change commits.
    with call_context(admin, None, timeout=30.0):
        fresh.core.set_status(admin, version_id, "retired")
    (version,) = fresh.versions("edge-a", "deadline-status").versions
    assert version.status != ingested.version.status


