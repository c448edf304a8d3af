"""Per-RPC authorization by service identity (issue 17 §1, kit.callers) against a real trace
service process under mutual TLS: only the orchestrator may record an Ask, only retrieval a
version event, only the scheduler-gateway an action; the identity is the client certificate's,
never a claim in metadata; and a token naming role `service` (what a leaked issuer key could
mint) grants nothing."""

from __future__ import annotations

import grpc
import pytest
from citetrace.kit.auth import bearer_metadata, mint_token
from citetrace.kit.callers import TENANT_METADATA
from citetrace.kit.tls import PEER_METADATA, LocalCA, open_channel
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc
from foundation.test_mtls import trace_process_with
from tracefixtures import TENANT, make_record


@pytest.fixture(scope="module")
def trace(auth, tmp_path_factory):
    ca = LocalCA(tmp_path_factory.mktemp("pki"))
    with trace_process_with(ca, auth, tmp_path_factory.mktemp("trace")) as (address, _):
        yield address, ca


def _as(trace, identity: str):
    address, ca = trace
    return pb_grpc.TraceServiceStub(open_channel(address, ca.issue(identity).settings()))


def _denied(call) -> str:
    with pytest.raises(grpc.RpcError) as refused:
        call()
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED, refused.value.details()
    return refused.value.details()


SERVICE_CALL = ((TENANT_METADATA, TENANT),)


def test_only_the_orchestrator_records_an_ask(trace):
    request = pb.RecordTraceRequest(record=make_record("mtls-ask-1"))
    details = _denied(lambda: _as(trace, "generation").RecordTrace(request, timeout=10, metadata=SERVICE_CALL))
    assert "RecordTrace may not be called by generation" in details
    # A claim in metadata counts for nothing under mTLS: the certificate says generation.
    claimed = (*SERVICE_CALL, (PEER_METADATA, "orchestrator"))
    _denied(lambda: _as(trace, "generation").RecordTrace(request, timeout=10, metadata=claimed))
    assert _as(trace, "orchestrator").RecordTrace(request, timeout=10, metadata=SERVICE_CALL).created


def test_only_retrieval_records_a_version_event_and_only_the_gateway_an_action(trace):
    event = pb.RecordVersionEventRequest(version_id="v" * 64, kind=pb.VERSION_EVENT_KIND_RETIRED)
    _denied(lambda: _as(trace, "orchestrator").RecordVersionEvent(event, timeout=10, metadata=SERVICE_CALL))
    assert _as(trace, "retrieval").RecordVersionEvent(event, timeout=10, metadata=SERVICE_CALL).affected_traces == 0
    action = pb.RecordActionEventRequest(event=pb.ActionEvent(event_id="evt-1"))
    _denied(lambda: _as(trace, "retrieval").RecordActionEvent(action, timeout=10, metadata=SERVICE_CALL))


def test_a_service_acts_alone_only_where_the_table_says(trace):
    """Retrieval may call GetTrace like anyone, but not as itself with no user token."""
    with pytest.raises(grpc.RpcError) as refused:
        _as(trace, "retrieval").GetTrace(pb.GetTraceRequest(trace_id="mtls-ask-1"), timeout=10,
                                         metadata=SERVICE_CALL)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_a_token_with_role_service_is_refused_even_from_the_issuer(trace, auth):
    forged = mint_token(auth, tenant_id=TENANT, subject="service:orchestrator", roles=["service"])
    with pytest.raises(grpc.RpcError) as refused:
        _as(trace, "cli").ApplyRetention(pb.ApplyRetentionRequest(retention_days=30), timeout=10,
                                         metadata=bearer_metadata(forged))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "role service" in refused.value.details()
