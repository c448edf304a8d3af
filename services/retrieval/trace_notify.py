"""The gRPC side of version-event delivery: RecordVersionEvent on the trace service, signed with a
short-lived `service` token for the event's tenant (kit.auth.service_token)."""

from __future__ import annotations

import grpc
from citetrace.kit import clients
from citetrace.kit.auth import AuthSettings, service_token
from citetrace.trace.v1 import trace_service_pb2 as tpb
from citetrace.trace.v1 import trace_service_pb2_grpc as tpb_grpc

from services.retrieval.store.records import RETIRED_EVENT, SUPERSEDED_EVENT, VersionEvent

_KINDS = {SUPERSEDED_EVENT: tpb.VERSION_EVENT_KIND_SUPERSEDED, RETIRED_EVENT: tpb.VERSION_EVENT_KIND_RETIRED}


class TraceVersionEventSender:
    """deliver(event) for VersionEventRelay: raises on any failure (the relay retries)."""

    def __init__(self, target: str, auth: AuthSettings, timeout_seconds: float = 5.0) -> None:
        self.target = target
        self.auth = auth
        self.timeout_seconds = timeout_seconds

    def __call__(self, event: VersionEvent) -> None:
        stub = clients.stub(tpb_grpc.TraceServiceStub, self.target)
        request = tpb.RecordVersionEventRequest(version_id=event.version_id, kind=_KINDS[event.kind],
                                                replaced_by_version_id=event.replaced_by_version_id)
        try:
            clients.call(stub.RecordVersionEvent, request, timeout=self.timeout_seconds,
                         token=service_token(self.auth, event.tenant_id, "retrieval"))
        except grpc.RpcError as exc:
            info = clients.error_info(exc)
            reason = f" {info.reason}" if info is not None else ""
            raise DeliveryFailed(f"{exc.code().name}{reason}: {exc.details()}") from None


class DeliveryFailed(Exception):
    """RecordVersionEvent failed (status code, reason and message in the text)."""
