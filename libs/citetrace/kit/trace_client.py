"""The one client of the trace service for the services that write evidence (the orchestrator's trace
records, retrieval's version events, the scheduler-gateway's action events, the CLI flushing an
outbox). A write is made by the service as itself: the trace service knows the caller from its mTLS
certificate (kit.tls) and allows each write only to the service that owns it (kit.callers); the
tenant the write belongs to travels in `citetrace-tenant` metadata. No token is minted or needed, so
an outbox can redeliver with no caller at all. Failures are kit DomainErrors (kit.clients.domain_error)."""

from __future__ import annotations

from citetrace.kit.callers import TENANT_METADATA
from citetrace.kit.clients import invoke, stub
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from citetrace.trace.v1 import trace_service_pb2_grpc as trace_grpc

SERVICE = "trace"


class TraceClient:
    """RecordTrace, RecordVersionEvent and RecordActionEvent as `caller` (the identity in this
    process's certificate; claimed only in plaintext development mode)."""

    def __init__(self, target: str, *, caller: str, timeout: float = 5.0) -> None:
        self.target = target
        self.caller = caller
        self.timeout = timeout
        self._stub = stub(trace_grpc.TraceServiceStub, target)

    def _invoke(self, method, request, tenant_id: str):
        return invoke(method, request, SERVICE, timeout=self.timeout, caller=self.caller,
                      metadata=((TENANT_METADATA, tenant_id),))

    def record_trace(self, record: trace_pb.TraceRecord) -> trace_pb.RecordTraceResponse:
        return self._invoke(self._stub.RecordTrace, trace_pb.RecordTraceRequest(record=record), record.tenant_id)

    def record_version_event(self, tenant_id: str, version_id: str, kind: int,
                             replaced_by_version_id: str = "") -> int:
        """Returns how many stored answers cited the version (they now need re-review)."""
        request = trace_pb.RecordVersionEventRequest(version_id=version_id, kind=kind,
                                                     replaced_by_version_id=replaced_by_version_id)
        return self._invoke(self._stub.RecordVersionEvent, request, tenant_id).affected_traces

    def record_action_event(self, tenant_id: str, event: trace_pb.ActionEvent) -> trace_pb.RecordActionEventResponse:
        """A workflow action as a link of the tenant's chain (idempotent by event ID)."""
        return self._invoke(self._stub.RecordActionEvent, trace_pb.RecordActionEventRequest(event=event), tenant_id)
