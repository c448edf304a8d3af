"""The gRPC side of version-event delivery: RecordVersionEvent on the trace service through the kit's
TraceClient (signed with a short-lived `service` token for the event's tenant)."""

from __future__ import annotations

from citetrace.kit.trace_client import TraceClient
from citetrace.trace.v1 import trace_service_pb2 as tpb

from services.retrieval.store.records import RETIRED_EVENT, SUPERSEDED_EVENT, VersionEvent

_KINDS = {SUPERSEDED_EVENT: tpb.VERSION_EVENT_KIND_SUPERSEDED, RETIRED_EVENT: tpb.VERSION_EVENT_KIND_RETIRED}


class TraceVersionEventSender:
    """deliver(event) for VersionEventRelay: raises a kit DomainError on any failure (the relay retries)."""

    def __init__(self, client: TraceClient) -> None:
        self.client = client

    def __call__(self, event: VersionEvent) -> None:
        self.client.record_version_event(event.tenant_id, event.version_id, _KINDS[event.kind],
                                         event.replaced_by_version_id)
