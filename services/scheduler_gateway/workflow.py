"""The patient's appointments and the proposals that change them (no grpc): validation, scope from
the principal, expiry, and who may decide what. The store (sql_workflow.py) does each change in one
transaction; this module decides whether a call may happen and what it asks the store to do.

A proposal is workflow state: it records the change (book, reschedule, cancel), the slots offered
and the appointment at the versions they were read, the policy consequences the assistant derived
from validated citations, and an expiry. Only the patient (or, when a cited rule or unverified
terms require review, staff of the proposal's locations) confirms it; the assistant never does.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Callable, Sequence

from citetrace import vocab as roles
from citetrace.kit.auth import Principal
from citetrace.kit.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from citetrace.kit.telemetry import stage
from citetrace.kit.timestamps import utc_now
from citetrace.kit.validation import pattern

from services.scheduler_gateway import access
from services.scheduler_gateway.core import (
    MAX_ID_LENGTH,
    SERVICE,
    bad_page_token,
    checked_page_size,
    decode_token,
    encode_token,
    scope_of,
    short_hash,
)
from services.scheduler_gateway.domain import (
    APPOINTMENT_BOOKED,
    APPOINTMENT_STATUSES,
    BOOK,
    CANCEL,
    CHANGE_KINDS,
    CONSEQUENCE_KINDS,
    EXPIRED,
    FREE,
    PENDING,
    PROPOSAL_STATUSES,
    REVIEW_KINDS,
    TERMS_UNVERIFIED,
    UTC,
    AppointmentQuery,
    AppointmentRecord,
    Consequence,
    Decision,
    NewProposal,
    ProposalOutcome,
    ProposalQuery,
    ProposalRecord,
    SlotChoice,
    SlotRecord,
)
from services.scheduler_gateway.sql_workflow import ProposalExpired, SqlWorkflowStore

MAX_OPTIONS = 10
MAX_CONSEQUENCES = 10
MAX_TEXT = 2000
MAX_NOTE = 2000
TRACE_ID = pattern("trace_id")  # field_rules.yaml; matched whole
SUPPORTED = "SUPPORTED"


@dataclasses.dataclass(frozen=True)
class WorkflowLimits:
    # A proposal the patient confirms lives this long (and never past the slot or appointment start).
    proposal_ttl_seconds: int = 900
    # A review task waits this long for staff.
    review_task_ttl_seconds: int = 2 * 86400
    default_page_size: int = 20


@dataclasses.dataclass(frozen=True)
class ProposeInput:
    kind: str
    appointment_id: str = ""
    expected_appointment_version: int = 0
    slots: tuple[SlotChoice, ...] = ()
    consequences: tuple[Consequence, ...] = ()
    ask_trace_id: str = ""
    patient_ref: str = ""
    consequence_rules_version: str = ""
    idempotency_key: str = ""


@dataclasses.dataclass(frozen=True)
class Page:
    items: list
    next_page_token: str


class WorkflowCore:
    def __init__(self, store: SqlWorkflowStore, limits: WorkflowLimits | None = None,
                 clock: Callable[[], dt.datetime] = utc_now) -> None:
        self.store = store
        self.limits = limits or WorkflowLimits()
        self.clock = clock
        # Called after every write that committed action events (wakes the relay to trace).
        self.on_events: Callable[[], None] = lambda: None

    # -- appointments ----------------------------------------------------------------------------

    def list_appointments(self, principal: Principal, patient_ref: str, statuses: Sequence[str],
                          include_past: bool, specialty: str, page_size: int, page_token: str) -> Page:
        access.require_record_role(principal, "reading appointments")
        patient = access.patient_of(principal, patient_ref, required=False)
        size = checked_page_size(page_size, self.limits.default_page_size)
        wanted = tuple(sorted(set(statuses))) or (APPOINTMENT_BOOKED,)
        for status in wanted:
            if status not in APPOINTMENT_STATUSES:
                raise InvalidArgument("UNKNOWN_APPOINTMENT_STATUS", f"unknown appointment status {status!r}",
                                      field="statuses")
        fingerprint = short_hash(principal.tenant_id, principal.subject, patient, wanted, include_past,
                                 specialty.strip().lower())
        cursor = _decode_cursor(page_token, fingerprint) if page_token else None
        now = self.clock()
        with stage(SERVICE, "scheduler.list_appointments", tenant=principal.tenant_id) as span:
            rows = self.store.list_appointments(AppointmentQuery(
                tenant_id=principal.tenant_id, location_ids=scope_of(principal, ""), patient_ref=patient,
                statuses=wanted, specialty=specialty.strip().lower() or None,
                starts_after=None if include_past else now, cursor=cursor, limit=size + 1))
            span.set_attribute("citetrace.appointments_returned", min(len(rows), size))
        next_token = ""
        if len(rows) > size:
            rows = rows[:size]
            last = rows[-1]
            next_token = encode_token({"v": 1, "f": fingerprint, "s": last.start.isoformat(), "i": last.appointment_id})
        return Page(rows, next_token)

    def get_appointment(self, principal: Principal, appointment_id: str) -> AppointmentRecord:
        access.require_record_role(principal, "reading appointments")
        appointment_id = _required_id(appointment_id, "appointment_id")
        found = self.store.get_appointment(principal.tenant_id, appointment_id, scope_of(principal, ""),
                                           self._patient_filter(principal))
        if found is None:
            raise _appointment_not_found(appointment_id)
        return found

    def _patient_filter(self, principal: Principal) -> str | None:
        """Reads by ID: a patient sees only their own rows; staff and services their scope's."""
        return access.patient_of(principal, "", required=False)

    # -- proposals -------------------------------------------------------------------------------

    def propose(self, principal: Principal, request: ProposeInput) -> ProposalRecord:
        if not (principal.acting_service or access.is_staff(principal)):
            raise PermissionDenied(
                "PROPOSALS_COME_FROM_THE_ASSISTANT_OR_STAFF",
                "a change proposal is made by the assistant acting for you (its policy consequences come from "
                "validated citations) or by staff; ask the assistant")
        if request.kind not in CHANGE_KINDS:
            raise InvalidArgument("MISSING_CHANGE_KIND", "kind must be book, reschedule or cancel", field="kind")
        consequences = _checked_consequences(request.consequences)
        trace_id = request.ask_trace_id.strip()
        if trace_id and not TRACE_ID.fullmatch(trace_id):
            raise InvalidArgument("INVALID_TRACE_ID", "ask_trace_id must be 1-128 characters of [0-9A-Za-z._:-]",
                                  field="ask_trace_id")
        if len(request.consequence_rules_version) > 128:
            raise InvalidArgument("VALUE_TOO_LONG", "consequence_rules_version is at most 128 characters",
                                  field="consequence_rules_version")
        scope = scope_of(principal, "")
        now = self.clock()
        appointment = self._proposed_appointment(principal, request, scope, now)
        patient = appointment.patient_ref if appointment is not None else access.patient_of(
            principal, request.patient_ref, required=True)
        options = self._proposed_slots(principal, request, scope, appointment, now)
        review = [c for c in consequences if c.kind in REVIEW_KINDS]
        ttl = self.limits.review_task_ttl_seconds if review else self.limits.proposal_ttl_seconds
        limits = [now + dt.timedelta(seconds=ttl)]
        if appointment is not None:
            limits.append(appointment.start)
        if options:
            limits.append(max(o.start for o in options))
        locations = {o.location_id for o in options}
        if appointment is not None:
            locations.add(appointment.slot.location_id)
        idem = access.idempotency(
            principal, request.idempotency_key, "ProposeChange", kind=request.kind,
            appointment_id=request.appointment_id, appointment_version=request.expected_appointment_version,
            slots=[(c.slot_id, c.expected_version) for c in request.slots], patient_ref=patient,
            consequences=[(c.kind, c.text, c.citations) for c in consequences], ask_trace_id=trace_id)
        new = NewProposal(
            tenant_id=principal.tenant_id, proposal_id=f"prop-{uuid.uuid4().hex}", kind=request.kind,
            patient_ref=patient, appointment=appointment, options=tuple(options), consequences=consequences,
            review_required=bool(review), review_reason=_review_reason(review), created_at=now,
            expires_at=min(limits), created_by_ref=access.actor_ref(principal), ask_trace_id=trace_id,
            consequence_rules_version=request.consequence_rules_version.strip(),
            policy_version_ids=tuple(sorted({c.get("version_id", "") for q in consequences for c in q.citations}
                                            - {""})),
            location_ids=frozenset(locations))
        with stage(SERVICE, "scheduler.propose_change", tenant=principal.tenant_id) as span:
            record = self.store.create_proposal(new, idem)
            span.set_attribute("citetrace.review_required", record.review_required)
        self.on_events()
        return record

    def _proposed_appointment(self, principal: Principal, request: ProposeInput, scope, now) -> AppointmentRecord | None:
        if request.kind == BOOK:
            if request.appointment_id:
                raise InvalidArgument("UNEXPECTED_APPOINTMENT", "a booking names no appointment_id",
                                      field="appointment_id")
            return None
        appointment_id = _required_id(request.appointment_id, "appointment_id")
        if request.expected_appointment_version < 1:
            raise InvalidArgument("MISSING_EXPECTED_VERSION",
                                  "expected_appointment_version is required: the version the appointment was read at",
                                  field="expected_appointment_version")
        requested_patient = access.patient_of(principal, request.patient_ref, required=False)
        appointment = self.store.get_appointment(principal.tenant_id, appointment_id, scope, requested_patient)
        if appointment is None:
            raise _appointment_not_found(appointment_id)
        if appointment.status != APPOINTMENT_BOOKED:
            raise FailedPrecondition("APPOINTMENT_NOT_BOOKED",
                                     f"appointment {appointment_id} is {appointment.status}: nothing to change",
                                     field="appointment_id")
        if appointment.version != request.expected_appointment_version:
            raise FailedPrecondition(
                "APPOINTMENT_CHANGED",
                f"appointment {appointment_id} is at version {appointment.version}, not "
                f"{request.expected_appointment_version}: read it again", field="appointment_id")
        if appointment.start <= now:
            raise FailedPrecondition("APPOINTMENT_STARTED", f"appointment {appointment_id} has already started",
                                     field="appointment_id")
        return appointment

    def _proposed_slots(self, principal: Principal, request: ProposeInput, scope,
                        appointment: AppointmentRecord | None, now) -> list[SlotRecord]:
        if request.kind == CANCEL:
            if request.slots:
                raise InvalidArgument("UNEXPECTED_SLOTS", "a cancellation offers no slots", field="slots")
            return []
        if not request.slots:
            raise InvalidArgument("MISSING_SLOTS", f"a {request.kind} offers 1..{MAX_OPTIONS} slots", field="slots")
        if len(request.slots) > MAX_OPTIONS:
            raise InvalidArgument("TOO_MANY_SLOTS", f"at most {MAX_OPTIONS} slots may be offered", field="slots")
        ids = [_required_id(c.slot_id, "slots.slot_id") for c in request.slots]
        if len(set(ids)) != len(ids):
            raise InvalidArgument("DUPLICATE_SLOT", "a slot is offered twice", field="slots")
        live = self.store.get_slots(principal.tenant_id, scope, ids)
        options = []
        for choice in request.slots:
            slot = live.get(choice.slot_id)
            if slot is None:
                raise NotFound("SLOT_NOT_FOUND", f"slot {choice.slot_id!r} was not found", field="slots")
            if slot.version != choice.expected_version or slot.status != FREE or slot.start <= now:
                raise FailedPrecondition(
                    "SLOT_NO_LONGER_AVAILABLE",
                    f"slot {choice.slot_id} is no longer available (taken, changed or started); search again",
                    field="slots", slot_id=choice.slot_id)
            if appointment is not None and slot.specialty != appointment.slot.specialty:
                raise InvalidArgument(
                    "SLOT_NOT_COMPATIBLE",
                    f"slot {slot.slot_id} is {slot.specialty}; the appointment is {appointment.slot.specialty}",
                    field="slots")
            options.append(slot)
        return options

    def get_proposal(self, principal: Principal, proposal_id: str) -> ProposalRecord:
        access.require_record_role(principal, "reading proposals")
        return self._visible(principal, proposal_id)

    def _visible(self, principal: Principal, proposal_id: str) -> ProposalRecord:
        proposal_id = _required_id(proposal_id, "proposal_id")
        found = self.store.get_proposal(principal.tenant_id, proposal_id, scope_of(principal, ""),
                                        self._patient_filter(principal))
        if found is None:
            # Another patient's or tenant's proposal, or one outside the staff member's locations.
            raise NotFound("PROPOSAL_NOT_FOUND", f"proposal {proposal_id!r} was not found", field="proposal_id")
        return self._with_expiry(found)

    def _with_expiry(self, proposal: ProposalRecord) -> ProposalRecord:
        """A pending proposal past its expiry reads as expired before the sweeper records it."""
        if proposal.status == PENDING and self.clock() >= proposal.expires_at:
            return dataclasses.replace(proposal, status=EXPIRED, outcome_reason="PROPOSAL_EXPIRED")
        return proposal

    def list_proposals(self, principal: Principal, statuses: Sequence[str], review_required_only: bool,
                       patient_ref: str, page_size: int, page_token: str) -> Page:
        access.require_record_role(principal, "reading proposals")
        patient = access.patient_of(principal, patient_ref, required=False)
        size = checked_page_size(page_size, self.limits.default_page_size)
        wanted = tuple(sorted(set(statuses))) or (PENDING,)
        for status in wanted:
            if status not in PROPOSAL_STATUSES:
                raise InvalidArgument("UNKNOWN_PROPOSAL_STATUS", f"unknown proposal status {status!r}",
                                      field="statuses")
        fingerprint = short_hash(principal.tenant_id, principal.subject, patient, wanted, review_required_only)
        before = _decode_cursor(page_token, fingerprint) if page_token else None
        rows = self.store.list_proposals(ProposalQuery(
            tenant_id=principal.tenant_id, location_ids=scope_of(principal, ""), patient_ref=patient,
            statuses=wanted, review_required_only=review_required_only, before=before, limit=size + 1))
        next_token = ""
        if len(rows) > size:
            rows = rows[:size]
            next_token = encode_token({"v": 1, "f": fingerprint, "s": rows[-1].created_at.isoformat(),
                                       "i": rows[-1].proposal_id})
        return Page([self._with_expiry(r) for r in rows], next_token)

    def confirm(self, principal: Principal, proposal_id: str, slot_id: str, note: str,
                idempotency_key: str) -> ProposalOutcome:
        proposal = self._decidable(principal, proposal_id, "confirming")
        if proposal.review_required and not access.is_staff(principal):
            raise PermissionDenied(
                "REVIEW_BY_STAFF_REQUIRED",
                f"proposal {proposal.proposal_id} is a review task ({proposal.review_reason}): staff confirm it",
                proposal_id=proposal.proposal_id)
        chosen = self._chosen_slot(proposal, slot_id.strip())
        idem = access.idempotency(principal, idempotency_key, "ConfirmProposal", proposal_id=proposal.proposal_id,
                                  slot_id=chosen, note=note)
        decision = Decision(principal.tenant_id, proposal.proposal_id, access.actor_ref(principal), self.clock(),
                            slot_id=chosen, note=_note(note))
        with stage(SERVICE, "scheduler.confirm_proposal", tenant=principal.tenant_id) as span:
            try:
                outcome = self.store.confirm_proposal(decision, idem)
            except ProposalExpired:
                self.on_events()
                raise _expired(proposal) from None
            span.set_attribute("citetrace.result", outcome.result)
        self.on_events()
        return outcome

    def reject(self, principal: Principal, proposal_id: str, note: str, idempotency_key: str) -> ProposalRecord:
        proposal = self._decidable(principal, proposal_id, "rejecting")
        idem = access.idempotency(principal, idempotency_key, "RejectProposal", proposal_id=proposal.proposal_id,
                                  note=note)
        decision = Decision(principal.tenant_id, proposal.proposal_id, access.actor_ref(principal), self.clock(),
                            note=_note(note))
        with stage(SERVICE, "scheduler.reject_proposal", tenant=principal.tenant_id):
            try:
                record = self.store.reject_proposal(decision, idem)
            except ProposalExpired:
                self.on_events()
                raise _expired(proposal) from None
        self.on_events()
        return record

    def _decidable(self, principal: Principal, proposal_id: str, action: str) -> ProposalRecord:
        if principal.acting_service or not principal.has_any_role((roles.PATIENT, roles.STAFF)):
            raise PermissionDenied(
                "DECIDED_BY_PATIENT_OR_STAFF",
                f"{action} a proposal is for the patient or staff themselves, never a service or the assistant")
        # The raw stored row (not _with_expiry): the store decides expiry inside its transaction.
        proposal_id = _required_id(proposal_id, "proposal_id")
        found = self.store.get_proposal(principal.tenant_id, proposal_id, scope_of(principal, ""),
                                        self._patient_filter(principal))
        if found is None:
            raise NotFound("PROPOSAL_NOT_FOUND", f"proposal {proposal_id!r} was not found", field="proposal_id")
        return found

    @staticmethod
    def _chosen_slot(proposal: ProposalRecord, slot_id: str) -> str:
        if proposal.kind == CANCEL:
            if slot_id:
                raise InvalidArgument("UNEXPECTED_SLOT", "a cancellation takes no slot", field="slot_id")
            return ""
        if not slot_id:
            if len(proposal.options) == 1:
                return proposal.options[0].slot_id
            raise InvalidArgument(
                "SLOT_CHOICE_REQUIRED",
                f"proposal {proposal.proposal_id} offers {len(proposal.options)} slots: name one with slot_id "
                f"({', '.join(o.slot_id for o in proposal.options)})", field="slot_id")
        if proposal.option(slot_id) is None:
            raise InvalidArgument("SLOT_NOT_OFFERED", f"slot {slot_id!r} is not one this proposal offers",
                                  field="slot_id")
        return slot_id

    # -- expiry ----------------------------------------------------------------------------------

    def expire_due(self) -> int:
        expired = self.store.expire_due(self.clock())
        if expired:
            self.on_events()
        return expired


def _required_id(value: str, field: str) -> str:
    value = value.strip()
    if not value:
        raise InvalidArgument(f"MISSING_{field.split('.')[-1].upper()}", f"{field} is required", field=field)
    if len(value) > MAX_ID_LENGTH:
        raise InvalidArgument("VALUE_TOO_LONG", f"{field} is at most {MAX_ID_LENGTH} characters", field=field)
    return value


def _note(note: str) -> str:
    if len(note) > MAX_NOTE:
        raise InvalidArgument("VALUE_TOO_LONG", f"note is at most {MAX_NOTE} characters", field="note")
    return note.strip()


def _appointment_not_found(appointment_id: str) -> NotFound:
    # The same answer for another patient's, another tenant's, an out-of-scope or no appointment.
    return NotFound("APPOINTMENT_NOT_FOUND", f"appointment {appointment_id!r} was not found", field="appointment_id")


def _expired(proposal: ProposalRecord) -> FailedPrecondition:
    return FailedPrecondition(
        "PROPOSAL_EXPIRED",
        f"proposal {proposal.proposal_id} expired at {proposal.expires_at.isoformat()}: ask again for current options",
        status="expired")


def _review_reason(review: list[Consequence]) -> str:
    if not review:
        return ""
    first = review[0]
    if first.kind == TERMS_UNVERIFIED:
        return "the policy terms for this change could not be verified: " + (first.explanation or first.text)
    return first.text


def _checked_consequences(consequences: Sequence[Consequence]) -> tuple[Consequence, ...]:
    if len(consequences) > MAX_CONSEQUENCES:
        raise InvalidArgument("TOO_MANY_CONSEQUENCES", f"at most {MAX_CONSEQUENCES} consequences",
                              field="consequences")
    out = []
    for index, consequence in enumerate(consequences):
        field = f"consequences[{index}]"
        if consequence.kind not in CONSEQUENCE_KINDS:
            raise InvalidArgument("UNKNOWN_CONSEQUENCE_KIND", f"{field}.kind is not set or unknown", field=field)
        text = consequence.text.strip()
        if not text or len(text) > MAX_TEXT or len(consequence.explanation) > MAX_TEXT:
            raise InvalidArgument("INVALID_CONSEQUENCE_TEXT", f"{field}.text must be 1..{MAX_TEXT} characters",
                                  field=field)
        if consequence.kind != TERMS_UNVERIFIED:
            # A consequence stated from policy stands on validated, supported citations.
            if not consequence.citations or any(not c.get("passage_id") or not c.get("version_id")
                                                for c in consequence.citations):
                raise InvalidArgument("UNCITED_CONSEQUENCE",
                                      f"{field} states a policy consequence without citations (passage and version)",
                                      field=field)
            if consequence.support != SUPPORTED:
                raise InvalidArgument("UNSUPPORTED_CONSEQUENCE", f"{field} is not a supported claim", field=field)
        out.append(dataclasses.replace(consequence, text=text))
    return tuple(out)


def _decode_cursor(token: str, fingerprint: str) -> tuple[dt.datetime, str]:
    payload = decode_token(token)
    if payload.get("f") != fingerprint:
        raise bad_page_token()
    try:
        return dt.datetime.fromisoformat(payload["s"]).astimezone(UTC), str(payload["i"])
    except (KeyError, ValueError, TypeError) as exc:
        raise bad_page_token() from exc
