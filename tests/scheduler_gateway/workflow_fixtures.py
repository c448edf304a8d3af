"""Helpers for appointment and proposal tests: tokens of a patient, of staff and of the assistant
acting for a user (a delegated token), policy consequences with citations, and the outbox."""

from __future__ import annotations

import contextlib
import datetime as dt

from citetrace.common.v1 import appointments_pb2 as ap
from citetrace.common.v1 import common_pb2
from citetrace.kit.auth import bearer_metadata, mint_token
from citetrace.kit.testing import through
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from sqlalchemy import select

from services.scheduler_gateway import schema

from .conftest import NOW, FixedClock, gateway, load, world

TIMEOUT = 15
TENANT = "acme-health"


def patient(auth, ref: str, tenant: str = TENANT, locations=()):
    return bearer_metadata(mint_token(auth, tenant_id=tenant, subject=ref, roles=["patient"], location_ids=locations))


def staff(auth, tenant: str = TENANT, locations=(), subject: str = "desk-1"):
    return bearer_metadata(mint_token(auth, tenant_id=tenant, subject=subject, roles=["staff"], location_ids=locations))


def assistant_for(auth, ref: str, tenant: str = TENANT, roles=("patient",), locations=()):
    """The orchestrator acting for a user: the user's own token, in a call from the orchestrator
    (its certificate under mTLS; claimed here, over the tests' plaintext)."""
    return through(bearer_metadata(mint_token(auth, tenant_id=tenant, subject=ref, roles=list(roles),
                                              location_ids=locations, patient_ref=ref if "patient" in roles else "")),
                   "orchestrator")


def citation(version: str = "v-cancel-1", passage: str = "p-fee-1") -> common_pb2.Citation:
    return common_pb2.Citation(label="S1", passage_id=passage, document_id="acme-cancellation-policy",
                               version_id=version, start=10, end=90, content_sha256="a" * 64,
                               source_anchor="Late-cancellation fees", source_class="cancellation_policy",
                               link=f"/documents/acme-cancellation-policy/versions/{version}#chars=10-90")


def fee(text: str = "Follow-up visit: 24 hours notice, late-cancellation fee $25.") -> ap.PolicyConsequence:
    return ap.PolicyConsequence(kind=ap.CONSEQUENCE_KIND_FEE, text=text, citations=[citation()],
                                support=common_pb2.SUPPORT_VERDICT_SUPPORTED,
                                explanation="the appointment starts in 20 hours; the notice period is 24 hours",
                                part_id="p2")


def needs_review() -> ap.PolicyConsequence:
    return ap.PolicyConsequence(kind=ap.CONSEQUENCE_KIND_REVIEW_REQUIRED,
                                text="Rescheduling within 48 hours needs a coordinator review.",
                                citations=[citation("v-review-1", "p-review-1")],
                                support=common_pb2.SUPPORT_VERDICT_SUPPORTED, part_id="p2")


def reschedule(stub, md, appointment_id="appt-1", slots=(("ns-2", 1),), version=1, consequences=(), **extra):
    return stub.ProposeChange(pb.ProposeChangeRequest(
        kind=ap.CHANGE_KIND_RESCHEDULE, appointment_id=appointment_id, expected_appointment_version=version,
        slots=[pb.SlotChoice(slot_id=s, expected_version=v) for s, v in slots], consequences=list(consequences),
        ask_trace_id="0af7651916cd43dd8448eb211c80319c", consequence_rules_version="consequences-test.1", **extra),
        timeout=TIMEOUT, metadata=md).proposal


def book(stub, md, slots=(("ns-1", 1),), **extra):
    return stub.ProposeChange(pb.ProposeChangeRequest(
        kind=ap.CHANGE_KIND_BOOK, slots=[pb.SlotChoice(slot_id=s, expected_version=v) for s, v in slots], **extra),
        timeout=TIMEOUT, metadata=md).proposal


def cancel(stub, md, appointment_id="appt-1", version=1, consequences=()):
    return stub.ProposeChange(pb.ProposeChangeRequest(
        kind=ap.CHANGE_KIND_CANCEL, appointment_id=appointment_id, expected_appointment_version=version,
        consequences=list(consequences)), timeout=TIMEOUT, metadata=md).proposal


def confirm(stub, md, proposal_id, slot_id="", key="", note=""):
    return stub.ConfirmProposal(pb.ConfirmProposalRequest(proposal_id=proposal_id, slot_id=slot_id,
                                                          idempotency_key=key, note=note),
                                timeout=TIMEOUT, metadata=md)


def reject(stub, md, proposal_id, key="", note=""):
    return stub.RejectProposal(pb.RejectProposalRequest(proposal_id=proposal_id, idempotency_key=key, note=note),
                               timeout=TIMEOUT, metadata=md).proposal


def appointment(stub, md, appointment_id):
    return stub.GetAppointment(pb.GetAppointmentRequest(appointment_id=appointment_id), timeout=TIMEOUT,
                               metadata=md).appointment


def rows(url: str, table, *where):
    engine = schema.make_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(select(table).where(*where)).all()
    finally:
        engine.dispose()


def slot_state(url: str, slot_id: str, tenant: str = TENANT) -> tuple[str, int]:
    (row,) = rows(url, schema.slots, schema.slots.c.tenant_id == tenant, schema.slots.c.slot_id == slot_id)
    return row.status, row.version


def events(url: str, tenant: str = TENANT) -> list[dict]:
    table = schema.action_events_outbox
    return [row.payload for row in sorted(rows(url, table, table.c.tenant_id == tenant), key=lambda r: r.id)]


@contextlib.contextmanager
def workflow_gateway(auth, url: str, now: dt.datetime = NOW, **settings):
    """The test world and a gateway whose clock the test moves (clock.now = ...)."""
    load(url, world())
    clock = FixedClock(now)
    with gateway(auth, url, clock=clock, expiry_sweep_seconds=0, **settings) as stub:
        yield stub, clock
