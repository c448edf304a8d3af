"""The one client of the trace service for the services that write evidence (the orchestrator's trace
records, retrieval's version events, the CLI flushing an outbox). Writes carry a short-lived token
with role `service` for the tenant the write belongs to (kit.auth.service_token): a caller's own
token is not for writing evidence, and an outbox redelivers with no caller at all. Failures are
kit DomainErrors (kit.clients.domain_error)."""

from __future__ import annotations

from citetrace.kit import errors
from citetrace.kit.auth import AuthSettings, service_token
from citetrace.kit.clients import invoke, stub
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from citetrace.trace.v1 import trace_service_pb2_grpc as trace_grpc

SERVICE = "trace"


def can_sign(auth: AuthSettings | None) -> bool:
    """True when these settings hold a key that can mint service tokens (not only verify them)."""
    return auth is not None and bool(auth.hs256_secret or auth.rs256_private_key_file)


class TraceClient:
    """RecordTrace, RecordVersionEvent and RecordActionEvent as `caller` (the service name in the
    token's subject)."""

    def __init__(self, target: str, auth: AuthSettings | None, *, caller: str, timeout: float = 5.0) -> None:
        self.target = target
        self.caller = caller
        self.timeout = timeout
        self._auth = auth
        self._stub = stub(trace_grpc.TraceServiceStub, target)

    def _token(self, tenant_id: str) -> str:
        if not can_sign(self._auth):
            raise errors.FailedPrecondition("NO_SIGNING_KEY", "no auth settings to mint a service token")
        return service_token(self._auth, tenant_id, self.caller)

    def record_trace(self, record: trace_pb.TraceRecord) -> trace_pb.RecordTraceResponse:
        return invoke(self._stub.RecordTrace, trace_pb.RecordTraceRequest(record=record), SERVICE,
                      timeout=self.timeout, token=self._token(record.tenant_id), caller=self.caller)

    def record_version_event(self, tenant_id: str, version_id: str, kind: int,
                             replaced_by_version_id: str = "") -> int:
        """Returns how many stored answers cited the version (they now need re-review)."""
        request = trace_pb.RecordVersionEventRequest(version_id=version_id, kind=kind,
                                                     replaced_by_version_id=replaced_by_version_id)
        reply = invoke(self._stub.RecordVersionEvent, request, SERVICE, timeout=self.timeout,
                       token=self._token(tenant_id), caller=self.caller)
        return reply.affected_traces

    def record_action_event(self, tenant_id: str, event: trace_pb.ActionEvent) -> trace_pb.RecordActionEventResponse:
        """A workflow action as a link of the tenant's chain (idempotent by event ID)."""
        return invoke(self._stub.RecordActionEvent, trace_pb.RecordActionEventRequest(event=event), SERVICE,
                      timeout=self.timeout, token=self._token(tenant_id), caller=self.caller)
