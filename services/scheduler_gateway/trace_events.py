"""Delivery of the gateway's action events to the trace service: each outbox row (written in the
transaction of the change) becomes a trace ActionEvent, a link of the tenant's hash chain linked to
the Ask that produced the proposal. The kit's TableRelay drives it in the background, with backoff
while trace is down; trace ignores an identical redelivery (idempotent by event ID)."""

from __future__ import annotations

from citetrace.kit.relay import TableRelay
from citetrace.kit.timestamps import to_timestamp
from citetrace.kit.trace_client import TraceClient
from citetrace.trace.v1 import trace_service_pb2 as trace_pb

from services.scheduler_gateway import codec
from services.scheduler_gateway import domain as d
from services.scheduler_gateway.convert import appointment_to_proto, proposal_to_proto, slot_to_proto
from services.scheduler_gateway.sql_workflow import SqlWorkflowStore

SOURCE = "scheduler_gateway"
_KINDS = {
    d.EVENT_PROPOSED: trace_pb.ACTION_EVENT_KIND_PROPOSED, d.EVENT_CONFIRMED: trace_pb.ACTION_EVENT_KIND_CONFIRMED,
    d.EVENT_REJECTED: trace_pb.ACTION_EVENT_KIND_REJECTED, d.EVENT_EXPIRED: trace_pb.ACTION_EVENT_KIND_EXPIRED,
    d.EVENT_FAILED: trace_pb.ACTION_EVENT_KIND_FAILED, d.EVENT_SLOT_CONFIRMED: trace_pb.ACTION_EVENT_KIND_SLOT_CONFIRMED,
}


def action_event(row: d.PendingEvent) -> trace_pb.ActionEvent:
    payload = row.payload
    occurred = codec.time_from_json(payload["occurred_at"])
    stamp = to_timestamp(occurred)
    event = trace_pb.ActionEvent(
        event_id=row.event_id, kind=_KINDS[payload["kind"]], ask_trace_id=payload.get("ask_trace_id", ""),
        proposal_id=payload.get("proposal_id", ""), actor_ref=payload.get("actor_ref", ""), occurred_at=stamp,
        source_service=SOURCE)
    if payload.get("proposal"):
        event.proposal.CopyFrom(proposal_to_proto(codec.proposal_from_json(payload["proposal"])))
    for field in ("appointment_before", "appointment_after"):
        if payload.get(field):
            getattr(event, field).CopyFrom(appointment_to_proto(codec.appointment_from_json(payload[field]), stamp))
    if payload.get("slot"):
        event.slot.CopyFrom(slot_to_proto(codec.slot_from_json(payload["slot"]), stamp))
    if payload["kind"] == d.EVENT_SLOT_CONFIRMED:  # a direct booking: the appointment it made
        slot = codec.slot_from_json(payload["slot"])
        event.appointment_after.CopyFrom(appointment_to_proto(d.AppointmentRecord(
            payload["appointment_id"], payload["patient_ref"], d.APPOINTMENT_BOOKED, 1, slot, occurred), stamp))
    return event


def action_event_relay(store: SqlWorkflowStore, client: TraceClient, *, poll_seconds: float,
                       backoff_base_seconds: float, backoff_max_seconds: float) -> TableRelay:
    def deliver(row: d.PendingEvent) -> None:
        client.record_action_event(row.tenant_id, action_event(row))

    return TableRelay("scheduler-action-events", store, deliver, poll_seconds=poll_seconds,
                      backoff_base_seconds=backoff_base_seconds, backoff_max_seconds=backoff_max_seconds,
                      describe=lambda row: f"action event {row.event_id} ({row.payload.get('kind')})")
