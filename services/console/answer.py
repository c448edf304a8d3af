"""An AskResponse as the reader sees it: parts with an explanation and a next action per outcome,
claims followed by citation markers. A marker is bound to its citation (passage ID, version, span,
digest), never to a position in a list: numbers are handed out by first appearance of a passage ID
and every marker carries its own identity."""

from __future__ import annotations

import dataclasses
import datetime as dt
import urllib.parse

from citetrace.common.v1 import common_pb2 as c
from citetrace.common.v1 import route_pb2 as r
from citetrace.identity import page_locator, pinned_link
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as orch_pb
from citetrace.vocab import enum_label

SHORT_VERSION = 8


@dataclasses.dataclass(frozen=True)
class Outcome:
    key: str  # css modifier and test hook
    title: str
    explanation: str
    alert: bool = False  # announced at once (role="alert"): emergencies


OUTCOMES: dict[int, Outcome] = {
    c.PART_OUTCOME_ANSWERED: Outcome(
        "answered", "Answered from approved sources",
        "Each statement below is backed by the cited passage of an approved, current source."),
    c.PART_OUTCOME_PARTIALLY_ANSWERED: Outcome(
        "partial", "Partly answered: some statements were withheld",
        "The statements shown are supported by their sources. Statements that could not be verified "
        "were withheld and are listed below, with the reason."),
    c.PART_OUTCOME_ABSTAINED_NO_EVIDENCE: Outcome(
        "abstained", "No approved source answers this",
        "No approved, current source of your clinic covers this question, so nothing was guessed."),
    c.PART_OUTCOME_SOURCE_UNAVAILABLE: Outcome(
        "unavailable", "The source is unavailable right now",
        "The service that holds this information did not answer in time. Nothing was shown in its "
        "place."),
    c.PART_OUTCOME_OUT_OF_SCOPE: Outcome(
        "out-of-scope", "Outside what this assistant answers",
        "This assistant answers questions about appointments and clinic policies, not clinical questions."),
    c.PART_OUTCOME_NEEDS_CLARIFICATION: Outcome(
        "clarification", "One question before answering",
        "The answer depends on a detail the question does not give."),
    c.PART_OUTCOME_CONFLICT: Outcome(
        "conflict", "The sources disagree",
        "Two current approved sources state this differently. Both are shown and neither was chosen; "
        "the disagreement goes to the policy owner."),
    c.PART_OUTCOME_UNRESOLVED: Outcome(
        "unresolved", "Not yet verified: sent to review",
        "Whether the sources support this could not be decided automatically. A reviewer will check it."),
}
UNKNOWN_OUTCOME = Outcome("unknown", "No answer", "The service returned no outcome for this part.")
EMERGENCY = Outcome(
    "emergency", "This may be an emergency",
    "Emergencies are outside what this assistant can help with; the approved wording follows.", alert=True)

NEXT_ACTIONS: dict[int, str] = {
    c.NEXT_ACTION_CONTACT_SCHEDULING_DESK: "Contact the appointment desk; they can answer this.",
    c.NEXT_ACTION_VIEW_POLICY: "Read the applicable policy.",
    c.NEXT_ACTION_CONTACT_CLINICIAN: "Ask your clinician or care team.",
    c.NEXT_ACTION_CONTACT_EMERGENCY_SERVICES: "Call your local emergency number now.",
    c.NEXT_ACTION_PREPARE_REVIEW_TASK: "A reviewer will check this answer.",
    c.NEXT_ACTION_ROUTE_TO_POLICY_OWNER: "The policy owner has been asked to resolve the disagreement.",
    c.NEXT_ACTION_ANSWER_CLARIFICATION: "Answer the question below to continue.",
    c.NEXT_ACTION_CONFIRM_SLOT: "To book, pick a slot with the appointment desk or your booking app.",
    c.NEXT_ACTION_RETRY_LATER: "Try again in a few minutes.",
    c.NEXT_ACTION_CONFIRM_CHANGE: "A change to your appointment is proposed: confirm or reject it in your booking app.",
    c.NEXT_ACTION_VERIFY_CONTACT_DETAILS: "Contact details change only through the clinic's verification process.",
}

PART_KINDS: dict[int, str] = {
    r.PART_KIND_LIVE_SLOT: "Available appointments",
    r.PART_KIND_ARRIVAL_PREPARATION: "Arrival and preparation",
    r.PART_KIND_CANCELLATION_RESCHEDULING: "Cancelling and rescheduling",
    r.PART_KIND_PROVIDER_DESCRIPTION: "About the provider",
    r.PART_KIND_CLINICAL_BOUNDARY: "Clinical question",
    r.PART_KIND_OTHER_POLICY: "Clinic policy",
    r.PART_KIND_APPOINTMENT: "Your appointment",
    r.PART_KIND_CHANGE_PROPOSAL: "Proposed change",
    r.PART_KIND_CONTACT_DETAILS: "Contact details",
}

REASONS: dict[int, str] = {
    c.FAILURE_REASON_CITATION_GAP: "it states a rule without citing a source",
    c.FAILURE_REASON_CITATION_UNKNOWN: "it cites a source that was not offered",
    c.FAILURE_REASON_DUPLICATE_CLAIM_ID: "its identifier was used twice",
    c.FAILURE_REASON_DUPLICATE_PASSAGE_ID: "one passage was offered twice",
    c.FAILURE_REASON_DANGLING_EVIDENCE_REF: "its evidence reference does not resolve",
    c.FAILURE_REASON_VERSION_MISMATCH: "the cited version differs from the stored one",
    c.FAILURE_REASON_SPAN_DIGEST_MISMATCH: "the cited text no longer matches its digest",
    c.FAILURE_REASON_LOCATOR_MISMATCH: "the cited location does not match the source",
    c.FAILURE_REASON_STALE_VERSION: "the cited version is not approved or not in effect",
    c.FAILURE_REASON_AUTHORITY_MISMATCH: "this kind of source may not establish this kind of statement",
    c.FAILURE_REASON_SCOPE_VIOLATION: "the cited source is outside your access",
    c.FAILURE_REASON_CHECK_UNAVAILABLE: "the check could not run (source store unavailable)",
    c.FAILURE_REASON_UNSUPPORTED_CLAIM: "the cited passage does not state it",
    c.FAILURE_REASON_PASSAGE_NEEDS_REVIEW: "the cited passage's extraction awaits review",
}


def reason_text(reason: int) -> str:
    return REASONS.get(reason, enum_label(c.FailureReason, reason, "FAILURE_REASON_").lower().replace("_", " "))


def short_version(version_id: str) -> str:
    return version_id[:SHORT_VERSION]


def evidence_url(citation: c.Citation) -> str:
    """The console route that renders the evidence panel of one citation (its own identity in the
    URL: the panel never looks a marker up by position)."""
    query = urllib.parse.urlencode({"chars": f"{citation.start}-{citation.end}",
                                    "sha256": citation.content_sha256})
    base = pinned_link(citation.document_id, citation.version_id)
    return f"{base}/passages/{citation.passage_id}?{query}"


@dataclasses.dataclass(frozen=True)
class Marker:
    number: int
    citation: c.Citation

    @property
    def title(self) -> str:
        return self.citation.title or self.citation.document_id

    @property
    def pages(self) -> str:
        """ "p. 3 (viewer page 9)" for a paged source, else empty."""
        cit = self.citation
        return page_locator(cit.page_start, cit.page_end, cit.page_label_start, cit.page_label_end)

    @property
    def accessible_name(self) -> str:
        pages = f", {self.pages}" if self.pages else ""
        return f"Source {self.number}: {self.title}{pages}, version {short_version(self.citation.version_id)}"

    @property
    def link(self) -> str:
        """The citation's pinned link as the service built it (it may carry more locators, e.g. a
        page) when it points at this citation's document and version; else built here."""
        cit = self.citation
        base = pinned_link(cit.document_id, cit.version_id)
        if cit.link.startswith(base + "#") and f"chars={cit.start}-{cit.end}" in cit.link:
            return cit.link
        return pinned_link(cit.document_id, cit.version_id, cit.start, cit.end, page=cit.page_start)

    @property
    def evidence_url(self) -> str:
        return evidence_url(self.citation)


@dataclasses.dataclass(frozen=True)
class ClaimView:
    claim_id: str
    text: str
    markers: tuple[Marker, ...]
    unresolved: bool


@dataclasses.dataclass(frozen=True)
class WithheldView:
    claim_id: str
    reasons: tuple[str, ...]
    support: str


@dataclasses.dataclass(frozen=True)
class ConflictView:
    text: str
    marker: Marker


@dataclasses.dataclass(frozen=True)
class SlotView:
    slot_id: str
    when: str
    where: str
    who: str
    what: str


@dataclasses.dataclass(frozen=True)
class PartView:
    part_id: str
    kind: str
    outcome: Outcome
    outcome_name: str
    answer_text: str
    claims: tuple[ClaimView, ...]
    withheld: tuple[WithheldView, ...]
    conflicts: tuple[ConflictView, ...]
    slots: tuple[SlotView, ...]
    slots_as_of: str
    clarification_question: str
    next_action: str
    policy_link: str


@dataclasses.dataclass(frozen=True)
class AnswerView:
    trace_id: str
    parts: tuple[PartView, ...]
    sources: tuple[Marker, ...]  # one per cited passage, in marker order
    next_action: str
    emergency: bool


def _slot_view(slot: c.Slot) -> SlotView:
    start = slot.start_time.ToDatetime(dt.UTC)
    try:
        from zoneinfo import ZoneInfo

        local = start.astimezone(ZoneInfo(slot.time_zone)) if slot.time_zone else start
    except (KeyError, ValueError):
        local = start
    when = local.strftime("%a %d %b %Y, %H:%M") + (f" ({slot.time_zone})" if slot.time_zone else " UTC")
    where = ", ".join(x for x in (slot.clinic_name, slot.location_name or slot.location_id) if x)
    return SlotView(slot.slot_id, when, where, slot.provider_name or slot.provider_id,
                    " ".join(x for x in (slot.specialty, slot.appointment_type) if x))


def _timestamp_text(ts) -> str:
    if not ts.seconds and not ts.nanos:
        return ""
    return ts.ToDatetime(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def build_answer(response: orch_pb.AskResponse) -> AnswerView:
    numbers: dict[str, Marker] = {}

    def marker(citation: c.Citation) -> Marker:
        found = numbers.get(citation.passage_id)
        if found is None:
            found = Marker(len(numbers) + 1, citation)
            numbers[citation.passage_id] = found
        return found

    emergency = response.next_action == c.NEXT_ACTION_CONTACT_EMERGENCY_SERVICES
    parts = []
    for part in response.parts:
        outcome = OUTCOMES.get(part.outcome, UNKNOWN_OUTCOME)
        if part.next_action == c.NEXT_ACTION_CONTACT_EMERGENCY_SERVICES:
            outcome = EMERGENCY
            emergency = True
        claims = tuple(
            ClaimView(claim.claim_id, claim.text, tuple(marker(cit) for cit in claim.citations),
                      claim.support == c.SUPPORT_VERDICT_UNRESOLVED)
            for claim in part.claims)
        parts.append(PartView(
            part_id=part.part_id,
            kind=PART_KINDS.get(part.kind, "Answer"),
            outcome=outcome,
            outcome_name=enum_label(c.PartOutcome, part.outcome, "PART_OUTCOME_"),
            answer_text=part.answer_text,
            claims=claims,
            withheld=tuple(WithheldView(w.claim_id, tuple(reason_text(x) for x in w.reasons),
                                        enum_label(c.SupportVerdict, w.support, "SUPPORT_VERDICT_"))
                           for w in part.withheld),
            conflicts=tuple(ConflictView(" ".join(x.text.split()), marker(x.citation)) for x in part.conflicts),
            slots=tuple(_slot_view(s) for s in part.slots),
            slots_as_of=_timestamp_text(part.slots_as_of),
            clarification_question=part.clarification_question,
            next_action=NEXT_ACTIONS.get(part.next_action, ""),
            policy_link=part.policy_link,
        ))
    return AnswerView(response.trace_id, tuple(parts), tuple(numbers.values()),
                      NEXT_ACTIONS.get(response.next_action, ""), emergency)
