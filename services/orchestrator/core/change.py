"""A question that asks for a change to the caller's own appointment (DESIGN.md §3, issue 18):
"Can I move my cardiology appointment to tomorrow?" is answered by four authorities, each in its
own part with its own outcome -

  APPOINTMENT       the caller's matching appointment (scheduler-gateway ListAppointments with the
                    caller's token), or one clarification when several match;
  LIVE_SLOT         the alternatives at that appointment's location (the slot part, rebased on the
                    appointment: its location, specialty, type and zone);
  CANCELLATION_...  the change terms (the policy part: cited and validated);
  CHANGE_PROPOSAL   a proposal in the scheduler-gateway's proposal store (ProposeChange) with the
                    consequences the validated claims have for this change (core/consequences.py):
                    CONFIRM_CHANGE for the patient, or PREPARE_REVIEW_TASK when a cited rule (or
                    unverifiable terms) makes it a staff review task.

The assistant never executes a change: confirmation is the patient's (ConfirmProposal), review the
staff's. A contact-detail change ("use my new phone number") is one CONTACT_DETAILS part that
starts the verification workflow; nothing from the message is stored or sent anywhere.

`plan` restructures a routed question (pure); the Ask use case runs APPOINTMENT parts first,
`rebase`s the route on the appointment found, then the other parts, then CHANGE_PROPOSAL parts
(which read the earlier parts' results from their context)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from zoneinfo import ZoneInfo

from citetrace.kit.errors import DeadlineExceeded, DomainError, FailedPrecondition, NotFound, Unavailable

from services.orchestrator.core import consequences as rules
from services.orchestrator.core import dates
from services.orchestrator.core.change_requests import (
    BOOK,
    CANCEL,
    CONTACT,
    RESCHEDULE,
    ChangeRequest,
    load_rules,
)
from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.conversation import OfferedSlots
from services.orchestrator.core.model import (
    Appointment,
    AppointmentQuery,
    ChangeKind,
    ConsequenceKind,
    Intent,
    NextAction,
    Outcome,
    PartKind,
    PartResult,
    PolicyConsequence,
    Proposal,
    ProposalRequest,
    Slot,
    Support,
)
from services.orchestrator.core.parts import PartContext, unavailable
from services.orchestrator.core.ports import Scheduler
from services.orchestrator.core.routing import PartPlan, Route
from services.orchestrator.core.slot_part import EPOCH
from services.orchestrator.core.text import fold

POLICY = PartKind.CANCELLATION_RESCHEDULING
CHANGE_KINDS = {BOOK: ChangeKind.BOOK, RESCHEDULE: ChangeKind.RESCHEDULE, CANCEL: ChangeKind.CANCEL}
MAX_OPTIONS = 6
# Stages of a change question: the appointment first, the parts that depend on it, the proposal last.
FIRST_STAGE = frozenset({PartKind.APPOINTMENT})
LAST_STAGE = frozenset({PartKind.CHANGE_PROPOSAL})


class ChangePlanner:
    """The routing stage's change step: the detector (core/change_requests.py) on the in-scope
    clauses, then `plan`."""

    def __init__(self, detect: Callable[[str], ChangeRequest | None], horizon_days: int) -> None:
        self.detect = detect
        self.horizon_days = horizon_days

    def plan(self, route: Route, as_of: dt.datetime) -> None:
        if not route.in_scope or route.scope.emergency:
            return
        plan(route, self.detect(" ".join(route.scope.in_scope_clauses)), self.horizon_days, as_of)


def plan(route: Route, request: ChangeRequest | None, horizon_days: int, as_of: dt.datetime) -> None:
    """The parts of a change request, in the order they are answered: APPOINTMENT (reschedule,
    cancel), LIVE_SLOT (reschedule, book), the change terms (reschedule, cancel), CHANGE_PROPOSAL;
    parts the question asks besides the change stay after them. A contact-detail change replaces
    the parts of its clause with one CONTACT_DETAILS part. Nothing when no change is asked."""
    if request is None or not route.in_scope or route.scope.emergency:
        return
    route.change = request
    clause = request.clause
    # A policy reading of a slot request (PartPlan.only_if_answered) gives way to the change's own parts.
    rest = [p for p in route.parts if (p.boundary is not None or not _only(p, clause)) and not p.only_if_answered]
    if request.kind == CONTACT:
        route.parts = [PartPlan("", Intent.OTHER, PartKind.CONTACT_DETAILS, [clause]), *rest]
        route.explanations.append(f"change request: {request.explanation}: the verification workflow, nothing stored")
        _number(route)
        return
    kind = CHANGE_KINDS[request.kind]
    slot = next((p for p in route.parts if p.kind == PartKind.LIVE_SLOT), None)
    policy = next((p for p in route.parts if p.kind == POLICY), None)
    rest = [p for p in rest if p is not slot and p is not policy]
    parts: list[PartPlan] = []
    clauses = [clause]
    if kind != ChangeKind.BOOK:
        parts.append(PartPlan("", Intent.CANCELLATION_RESCHEDULING, PartKind.APPOINTMENT, clauses))
    if kind != ChangeKind.CANCEL:
        if slot is None:
            slot = PartPlan("", Intent.AVAILABILITY, PartKind.LIVE_SLOT, clauses)
            slot.range_start, slot.range_end = as_of, as_of + dt.timedelta(days=horizon_days)
        if kind == ChangeKind.RESCHEDULE:
            # The appointment names the location, specialty and type: nothing to ask for them.
            slot.clarification, slot.missing = None, []
        parts.append(slot)
    if kind != ChangeKind.BOOK:
        if policy is None:
            policy = PartPlan("", Intent.CANCELLATION_RESCHEDULING, POLICY, [clause],
                              search_intents=(Intent.CANCELLATION_RESCHEDULING,))
        # The terms of this kind of change, whatever words the caller used for it ("move it to
        # Friday", "flytte"): the rule's question, narrowed by the appointment type when named.
        terms = load_rules().terms_question.get(request.kind, "")
        if terms:
            what = " ".join(w for w in (route.appointment_type.replace("_", " "), "appointment") if w)
            policy.clauses = [terms.format(what=what)]
        policy.query = " ".join(policy.clauses)
        if kind == ChangeKind.RESCHEDULE:
            policy.clarification, policy.missing = None, []
        parts.append(policy)
    parts.append(PartPlan("", Intent.CANCELLATION_RESCHEDULING, PartKind.CHANGE_PROPOSAL, clauses))
    route.parts = [*parts, *rest]
    if Intent.CANCELLATION_RESCHEDULING not in route.intents:
        route.intents.append(Intent.CANCELLATION_RESCHEDULING)
    route.explanations.append(f"change request: {request.explanation}: parts "
                              + ", ".join(p.kind for p in parts))
    _number(route)


def _only(plan: PartPlan, clause: str) -> bool:
    return bool(plan.clauses) and all(fold(c) == fold(clause) for c in plan.clauses)


def _number(route: Route) -> None:
    for number, part in enumerate(route.parts, start=1):
        part.part_id = f"p{number}"


def found_appointment(earlier: tuple[PartResult, ...]) -> Appointment | None:
    """The one appointment the APPOINTMENT part settled on (None: none, or it asked which)."""
    for part in earlier:
        if part.kind == PartKind.APPOINTMENT and part.outcome == Outcome.ANSWERED and len(part.appointments) == 1:
            return part.appointments[0]
    return None


def rebase(route: Route, earlier: tuple[PartResult, ...], as_of: dt.datetime) -> None:
    """After the APPOINTMENT part: the location, specialty, type and zone of the appointment found
    are the route's (the slot part searches alternatives there, the policy part that clinic's
    terms); the slot part's dates are read again in the appointment's zone."""
    appointment = found_appointment(earlier)
    if appointment is None:
        return
    known = {loc.location_id: loc for loc in route.clinic_choices}
    route.location = known.get(appointment.location_id) or LocationInfo(
        appointment.location_id, appointment.location_name, appointment.clinic_name, appointment.time_zone or "UTC",
        (appointment.specialty,), (appointment.appointment_type,))
    route.specialty = appointment.specialty or route.specialty
    route.appointment_type = appointment.appointment_type or route.appointment_type
    route.zone = ZoneInfo(appointment.time_zone or route.location.time_zone or "UTC")
    route.explanations.append(f"appointment {appointment.appointment_id}: location {appointment.location_id}, "
                              f"specialty {appointment.specialty}, type {appointment.appointment_type}")
    text = fold(" ".join(route.scope.in_scope_clauses))
    for part in route.parts:
        if part.kind == PartKind.LIVE_SLOT:
            found = dates.resolve(text, as_of, route.zone)
            if found is not None:
                part.range_start, part.range_end = found.utc_bounds(route.zone)


def offered_slots(route: Route, parts: list[PartResult]) -> OfferedSlots | None:
    """The slots an answered slot part of this turn showed, with where, what and when it searched
    (what a bare "book the 10:00" in the next turn refers to); None when no slot was shown."""
    for plan, part in zip(route.parts, parts, strict=False):
        if part.kind != PartKind.LIVE_SLOT or part.outcome != Outcome.ANSWERED or not part.slots:
            continue
        first = part.slots[0]
        location = route.location
        return OfferedSlots(
            tuple(s.slot_id for s in part.slots), first.location_id,
            first.location_name or (location.display_name if location else ""), first.time_zone or "UTC",
            route.specialty or first.specialty, route.appointment_type,
            plan.range_start.astimezone(dt.UTC).isoformat() if plan.range_start else "",
            plan.range_end.astimezone(dt.UTC).isoformat() if plan.range_end else "")
    return None


def follow_offer(route: Route, offered: OfferedSlots, explanation: str) -> None:
    """A booking that names no clinic or specialty of its own ("book the 10:00") in reply to a slot
    answer books among that answer's slots: its location, specialty, type and dates, and only the
    slots it showed (checked live again by the slot part; the proposal offers only those)."""
    change_request = route.change
    if change_request is None or change_request.kind != BOOK:
        return
    slot = next((p for p in route.parts if p.kind == PartKind.LIVE_SLOT), None)
    if slot is None or slot.clarification is None:
        return  # the question says where and what itself: a booking of its own
    known = {loc.location_id: loc for loc in route.clinic_choices}
    route.location = known.get(offered.location_id) or LocationInfo(
        offered.location_id, offered.location_name, "", offered.time_zone, (offered.specialty,))
    route.specialty = offered.specialty
    route.appointment_type = offered.appointment_type
    route.zone = ZoneInfo(offered.time_zone or "UTC")
    if offered.range_start and offered.range_end:
        slot.range_start = dt.datetime.fromisoformat(offered.range_start)
        slot.range_end = dt.datetime.fromisoformat(offered.range_end)
    slot.clarification, slot.missing = None, []
    route.slot_choices = offered.slot_ids
    route.explanations.append(f"{explanation}: {', '.join(offered.slot_ids)} at {offered.location_id}, "
                              f"specialty {offered.specialty}")


class AppointmentPart:
    """The caller's own appointment the change is about: ListAppointments with the caller's token
    (the gateway takes the patient from it), narrowed by what the question names."""

    def __init__(self, scheduler: Scheduler, page_size: int = 20) -> None:
        self.scheduler = scheduler
        self.page_size = page_size

    def answer(self, plan: PartPlan, ctx: PartContext, out: PartResult) -> PartResult:
        route, wording = ctx.route, ctx.wording
        try:
            listed = ctx.calls("scheduler_gateway", "scheduler.list_appointments", self.scheduler.list_appointments,
                               AppointmentQuery(page_size=self.page_size))
        except (Unavailable, DeadlineExceeded) as err:
            return unavailable(out, ctx, "scheduler_gateway", err)
        except DomainError as err:
            return unavailable(out, ctx, "scheduler_gateway", err)
        matching = matches(listed.appointments, route)
        out.appointments = matching
        if not matching:
            return out.settle(Outcome.ABSTAINED_NO_EVIDENCE, wording.say("appointment", "none"),
                              NextAction.CONTACT_SCHEDULING_DESK)
        if len(matching) > 1:
            out.clarification_question = wording.say(
                "appointment", "which", candidates=wording.alternatives(describe(a, wording) for a in matching))
            return out.settle(Outcome.NEEDS_CLARIFICATION, out.clarification_question, NextAction.ANSWER_CLARIFICATION)
        return out.settle(Outcome.ANSWERED, wording.say("appointment", "one", appointment=describe(matching[0], wording)),
                          NextAction.NONE)


def matches(appointments: tuple[Appointment, ...], route: Route) -> tuple[Appointment, ...]:
    """The appointments the question can mean: those of the specialty, type and clinic it names
    (each only when named), among those a "which appointment" question offered when it answers one."""
    out = []
    for a in appointments:
        if route.appointment_choices and a.appointment_id not in route.appointment_choices:
            continue
        if route.specialty and a.specialty != route.specialty:
            continue
        if route.appointment_type and a.appointment_type != route.appointment_type:
            continue
        if route.location is not None and a.location_id != route.location.location_id:
            continue
        out.append(a)
    return tuple(out)


def describe(a: Appointment, wording) -> str:
    zone = ZoneInfo(a.time_zone or "UTC")
    start = (a.start_time or EPOCH).astimezone(zone)
    return wording.say("appointment", "described", specialty=wording.specialty(a.specialty),
                       when=wording.date("slot_with_day", start), place=a.location_name or a.location_id)


class ProposalPart:
    """The change as a proposal: the appointment, the slots and the validated terms of the earlier
    parts become ProposeChange (acting for the caller); the gateway stores it pending."""

    def __init__(self, scheduler: Scheduler, vocabulary: rules.Vocabulary | None = None,
                 consequence_rules: rules.Rules | None = None) -> None:
        self.scheduler = scheduler
        self.vocabulary = vocabulary or rules.Vocabulary()
        self.rules = consequence_rules

    def answer(self, plan: PartPlan, ctx: PartContext, out: PartResult) -> PartResult:
        request, wording, route = ctx.request, ctx.wording, ctx.route
        change: ChangeRequest = route.change
        kind = CHANGE_KINDS[change.kind]
        by_kind = {p.kind: p for p in ctx.earlier}
        appointment = found_appointment(ctx.earlier)
        if kind != ChangeKind.BOOK and appointment is None:
            return self._blocked(out, by_kind.get(PartKind.APPOINTMENT), ctx)
        options: tuple[Slot, ...] = ()
        if kind != ChangeKind.CANCEL:
            slot_part = by_kind.get(PartKind.LIVE_SLOT)
            if slot_part is None or slot_part.outcome != Outcome.ANSWERED:
                return self._blocked(out, slot_part, ctx)
            options = tuple(s for s in slot_part.slots
                            if (appointment is None or s.slot_id != appointment.slot_id)
                            and (not route.slot_choices or s.slot_id in route.slot_choices))
            if change.time is not None:
                options = tuple(s for s in options if _local_time(s) == change.time)
            if not options:
                out.error = "no open slot to offer" + (f" at {change.time:%H:%M}" if change.time else "")
                return out.settle(Outcome.ABSTAINED_NO_EVIDENCE, wording.say("change", "no_slot"),
                                  NextAction.CONTACT_SCHEDULING_DESK)
            options = options[:MAX_OPTIONS]
        consequences = self._consequences(kind, appointment, options, by_kind.get(POLICY), ctx)
        proposed = ProposalRequest(
            kind=kind, appointment_id=appointment.appointment_id if appointment else "",
            expected_appointment_version=appointment.version if appointment else 0,
            slots=tuple((s.slot_id, s.version) for s in options), consequences=consequences,
            ask_trace_id=ctx.trace_id, consequence_rules_version=(self.rules or rules.load_rules()).version,
            # One proposal per Ask part: a retried call (the deadline's retry) finds the first.
            idempotency_key=f"ask-{ctx.trace_id}-{plan.part_id}" if ctx.trace_id else "")
        principal = request.principal
        try:
            proposal = ctx.calls("scheduler_gateway", "scheduler.propose_change",
                                 lambda req, timeout: self.scheduler.propose_change(req, principal, timeout), proposed)
        except (FailedPrecondition, NotFound) as err:
            # e.g. APPOINTMENT_CHANGED between the read and the proposal: nothing was stored.
            out.error = f"scheduler_gateway: {err.code.value} {err.reason}: {err}"
            return out.settle(Outcome.UNRESOLVED, wording.say("change", "changed_meanwhile"),
                              NextAction.CONTACT_SCHEDULING_DESK)
        except DomainError as err:
            return unavailable(out, ctx, "scheduler_gateway", err)
        out.proposal = proposal
        return self._say(out, proposal, ctx)

    def _blocked(self, out: PartResult, blocking: PartResult | None, ctx: PartContext) -> PartResult:
        """The part it depends on could not settle what to change: the same question, or nothing to propose."""
        if blocking is not None and blocking.outcome == Outcome.NEEDS_CLARIFICATION:
            out.clarification_question = blocking.clarification_question
            return out.settle(Outcome.NEEDS_CLARIFICATION, blocking.clarification_question,
                              NextAction.ANSWER_CLARIFICATION)
        out.error = f"nothing to propose: the {blocking.kind if blocking else 'needed'} part is " \
                    f"{blocking.outcome if blocking else 'missing'}"
        if blocking is not None and blocking.outcome == Outcome.SOURCE_UNAVAILABLE:
            return out.settle(Outcome.SOURCE_UNAVAILABLE, ctx.wording.unavailable("scheduler_gateway"),
                              NextAction.RETRY_LATER)
        return out.settle(Outcome.ABSTAINED_NO_EVIDENCE, ctx.wording.say("change", "nothing_to_propose"),
                          NextAction.CONTACT_SCHEDULING_DESK)

    def _consequences(self, kind: ChangeKind, appointment: Appointment | None, options: tuple[Slot, ...],
                      policy: PartResult | None, ctx: PartContext) -> tuple[PolicyConsequence, ...]:
        """What the policy part's shown (validated, supported, cited) claims mean for this change;
        a booking asks no terms. Terms that could not be established make it a review task."""
        if policy is None:
            return ()
        subject = appointment or Appointment("", start_time=options[0].start_time if options else None,
                                             time_zone=options[0].time_zone if options else "",
                                             specialty=options[0].specialty if options else "",
                                             appointment_type=options[0].appointment_type if options else "")
        change = rules.Change(kind.value.lower(), ctx.request.as_of, subject.start_time, subject.time_zone or "UTC",
                              subject.appointment_type, subject.specialty)
        claims = [rules.PolicyClaim(c.text, c.citations, part_id=policy.part_id)
                  for c in policy.claims if c.support == Support.SUPPORTED and c.citations]
        established = policy.outcome in (Outcome.ANSWERED, Outcome.PARTIALLY_ANSWERED) and bool(claims)
        derived = rules.derive(change, claims, policy_established=established,
                               unverified_reason=f"the policy part is {policy.outcome}", vocabulary=self.vocabulary,
                               rules=self.rules)
        if not derived:  # shown claims, none about this change: its terms are not established either
            derived = rules.derive(change, (), policy_established=False, rules=self.rules,
                                   unverified_reason="no validated claim of the policy part is about this change")
        return tuple(PolicyConsequence(ConsequenceKind[c.kind.upper()], c.text, tuple(c.citations),
                                       Support.SUPPORTED if c.citations else Support.UNSPECIFIED, c.explanation,
                                       c.part_id or policy.part_id) for c in derived)

    def _say(self, out: PartResult, proposal: Proposal, ctx: PartContext) -> PartResult:
        wording = ctx.wording
        fees = [c for c in proposal.consequences if c.kind == ConsequenceKind.FEE]
        fee = wording.say("change", "fee", terms=" ".join(c.text for c in fees)) if fees else ""
        values = {"proposal_id": proposal.proposal_id, "fee": fee,
                  "options": wording.listing([_describe_slot(s, wording) for s in proposal.options]),
                  "appointment": describe(proposal.appointment, wording) if proposal.appointment else ""}
        if proposal.review_required:
            return out.settle(Outcome.ANSWERED, wording.say("change", "review", reason=proposal.review_reason,
                                                            **values), NextAction.PREPARE_REVIEW_TASK)
        return out.settle(Outcome.ANSWERED, wording.say("change", proposal.kind.value.lower(), **values),
                          NextAction.CONFIRM_CHANGE)


class ContactPart:
    """Contact details are not memory (seed 002): the verification workflow, nothing stored."""

    def answer(self, plan: PartPlan, ctx: PartContext, out: PartResult) -> PartResult:
        return out.settle(Outcome.ANSWERED, ctx.wording.say("contact", "verify"), NextAction.VERIFY_CONTACT_DETAILS)


def _local_time(slot: Slot) -> dt.time:
    start = (slot.start_time or EPOCH).astimezone(ZoneInfo(slot.time_zone or "UTC"))
    return start.time().replace(second=0, microsecond=0)


def _describe_slot(slot: Slot, wording) -> str:
    start = (slot.start_time or EPOCH).astimezone(ZoneInfo(slot.time_zone or "UTC"))
    who = wording.say("slots", "with_provider", provider=slot.provider_name) if slot.provider_name else ""
    return wording.date("slot_with_day", start) + who
