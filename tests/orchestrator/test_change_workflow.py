"""A change question through the Ask use case (bootstrap-built core, in-memory ports): the
appointment part finds the caller's appointment (or asks which), the slot part searches at its
location in its zone, the policy part's validated claims become the proposal's consequences,
the proposal part asks ProposeChange and answers CONFIRM_CHANGE or PREPARE_REVIEW_TASK; a
contact-detail change only starts the verification workflow. The real gateway behind the same
path: tests/orchestrator/test_change_inprocess.py and tests/e2e/test_reschedule.py."""

from __future__ import annotations

import datetime as dt

import pytest
from citetrace.common.v1 import common_pb2 as c_pb
from citetrace.common.v1 import route_pb2 as r_pb
from citetrace.kit.auth import Principal
from citetrace.kit.errors import FailedPrecondition, Unavailable

from services.orchestrator.bootstrap import Downstream, build_core
from services.orchestrator.core import model as m
from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.parts import AskRequest
from services.orchestrator.settings import Settings

AS_OF = dt.datetime(2026, 11, 30, 13, 0, tzinfo=dt.UTC)
PATIENT = Principal("acme-health", "acme-patient-0001", ("patient",), patient_ref="acme-patient-0001")
ZONE = "America/New_York"
FEE_TEXT = "If you reschedule or cancel with less than 24 hours notice, a $50 fee applies."
REVIEW_TEXT = "Rescheduling an MRI or CT scan needs a coordinator review before the new time is confirmed."


def _appointment(appointment_id, specialty, location_id, name, start, appointment_type="new_patient"):
    return m.Appointment(appointment_id, "acme-patient-0001", m.AppointmentStatus.BOOKED, 2, f"slot-{appointment_id}",
                         location_id, name, "Acme", ZONE, "dr", "Dr. Test", specialty, appointment_type, start,
                         start + dt.timedelta(minutes=30), AS_OF, AS_OF)


class Scheduler:
    def __init__(self, appointments, fail_propose=None):
        self.appointments = appointments
        self.slot_queries, self.proposed, self.fail_propose = [], [], fail_propose

    def list_locations(self, page_token, timeout):
        return [LocationInfo("acme-northside", "Northside Family Clinic", "", ZONE, ("cardiology",)),
                LocationInfo("acme-northgate", "Northgate Clinic", "", ZONE, ("family_medicine", "cardiology")),
                LocationInfo("acme-harbor", "Harbor Imaging Center", "", ZONE, ("imaging",))], ""

    def find_slots(self, query, timeout):
        self.slot_queries.append(query)
        start = query.start_time + dt.timedelta(hours=10)  # 10:00 local (the range starts at local midnight)
        return m.SlotResult((
            m.Slot("free-10", 4, query.location_id, time_zone=ZONE, specialty=query.specialty, start_time=start,
                   status=m.SlotStatus.FREE),
            m.Slot("free-11", 1, query.location_id, time_zone=ZONE, specialty=query.specialty,
                   start_time=start + dt.timedelta(hours=1), status=m.SlotStatus.FREE)), AS_OF)

    def list_appointments(self, query, timeout):
        return m.AppointmentList(tuple(self.appointments), AS_OF)

    def propose_change(self, request, principal, timeout):
        if self.fail_propose:
            raise self.fail_propose
        self.proposed.append((request, principal))
        review = [c for c in request.consequences
                  if c.kind in (m.ConsequenceKind.REVIEW_REQUIRED, m.ConsequenceKind.TERMS_UNVERIFIED)]
        appointment = next((a for a in self.appointments if a.appointment_id == request.appointment_id), None)
        return m.Proposal(f"prop-{len(self.proposed)}", request.kind, m.ProposalStatus.PENDING, principal.patient_ref,
                          appointment, consequences=request.consequences, review_required=bool(review),
                          review_reason=review[0].text if review else "", ask_trace_id=request.ask_trace_id)


class Retrieval:
    def __init__(self, text):
        self.text, self.queries = text, []

    def search(self, query, timeout):
        self.queries.append(query)
        ident = m.PassageIdentity("pass-1", "acme-health", "acme-cancellation-policy", "ver-1", 0, len(self.text),
                                  "d" * 64, "Cancelling", "cancellation_policy")
        return m.SearchResult((m.Hit(m.Passage(ident, self.text, "Cancelling", "Policy"), "S1", fused_rank=1),),
                              m.RetrievalSettings(backend="embedded"))

    def versions_of(self, passage_ids, timeout):
        return [m.VersionInfo("ver-1", m.VersionStatus.APPROVED)]


class Generation:
    def __init__(self, text):
        self.text = text

    def generate(self, request, timeout):
        return m.GenerationResult((m.Claim("c1", self.text, ("S1",), m.ClaimType.CANCELLATION_TERM),),
                                  m.GeneratorInfo("extractive"), 1, 0, labels_offered=("S1",))


class Validator:
    def validate(self, request, timeout):
        ident = request.offered[0].passage.identity
        citation = m.Citation("S1", ident.passage_id, ident.document_id, ident.version_id, ident.start, ident.end,
                              ident.content_sha256, link="/documents/acme-cancellation-policy/versions/ver-1")
        return m.ValidationResult((m.ClaimValidation("c1", support=m.Support.SUPPORTED, citations=(citation,)),),
                                  passed=True, source_policy_version="sp-1")


class Sink:
    def __init__(self):
        self.records = []

    def submit(self, record):
        self.records.append(record)
        return True


class DownRetrieval(Retrieval):
    def __init__(self):
        super().__init__("")

    def search(self, query, timeout):
        raise Unavailable("DOWN", "retrieval is down")


def _core(appointments, text=FEE_TEXT, retrieval=None, **scheduler):
    ports = Downstream(Scheduler(appointments, **scheduler), retrieval or Retrieval(text), Generation(text),
                       Validator())
    sink = Sink()
    return build_core(Settings(port=0, metrics_port=-1), ports, sink), ports, sink


def kinds(response):
    return [(r_pb.PartKind.Name(p.kind), c_pb.PartOutcome.Name(p.outcome)) for p in response.parts]


SOON = AS_OF + dt.timedelta(hours=20)  # inside the 24-hour notice period


def test_a_reschedule_is_four_parts_and_a_confirmable_proposal_with_the_cited_fee():
    cardio = _appointment("appt-1", "cardiology", "acme-northside", "Northside Family Clinic", SOON)
    family = _appointment("appt-2", "family_medicine", "acme-northgate", "Northgate Clinic", SOON, "follow_up")
    core, ports, sink = _core([cardio, family])
    answer = core.ask(AskRequest(PATIENT, "Can I move my cardiology appointment to tomorrow?", AS_OF))
    response = answer.response
    assert kinds(response) == [("PART_KIND_APPOINTMENT", "PART_OUTCOME_ANSWERED"),
                               ("PART_KIND_LIVE_SLOT", "PART_OUTCOME_ANSWERED"),
                               ("PART_KIND_CANCELLATION_RESCHEDULING", "PART_OUTCOME_ANSWERED"),
                               ("PART_KIND_CHANGE_PROPOSAL", "PART_OUTCOME_ANSWERED")]
    appointment_part, slot_part, policy_part, proposal_part = response.parts
    assert [a.appointment_id for a in appointment_part.appointments] == ["appt-1"]
    # The alternatives are searched at the appointment's location, for its specialty, "tomorrow"
    # in the appointment's zone (1 Dec in New York: 05:00-05:00 UTC).
    (query,) = ports.scheduler.slot_queries
    assert (query.location_id, query.specialty) == ("acme-northside", "cardiology")
    assert query.start_time == dt.datetime(2026, 12, 1, 5, tzinfo=dt.UTC)
    assert {s.slot_id for s in slot_part.slots} == {"free-10", "free-11"}
    assert policy_part.claims[0].citations[0].version_id == "ver-1"
    ((request, principal),) = ports.scheduler.proposed
    assert request.kind == m.ChangeKind.RESCHEDULE and request.appointment_id == "appt-1"
    assert request.expected_appointment_version == 2
    assert request.slots == (("free-10", 4), ("free-11", 1))
    assert principal is PATIENT
    (fee,) = request.consequences
    assert fee.kind == m.ConsequenceKind.FEE and fee.citations[0].passage_id == "pass-1"
    assert "notice period is 24 hours" in fee.explanation
    assert proposal_part.next_action == c_pb.NEXT_ACTION_CONFIRM_CHANGE
    assert proposal_part.proposal.proposal_id == "prop-1" and list(response.proposal_ids) == ["prop-1"]
    assert "prop-1" in proposal_part.answer_text and "$50" in proposal_part.answer_text
    assert response.next_action == c_pb.NEXT_ACTION_CONFIRM_CHANGE
    (record,) = sink.records
    assert record.parts[3].proposal.proposal_id == "prop-1" and record.parts[0].appointments[0].version == 2
    assert request.ask_trace_id == record.trace_id


def test_several_matching_appointments_get_one_clarification_and_no_proposal():
    first = _appointment("appt-1", "cardiology", "acme-northside", "Northside Family Clinic", SOON)
    second = _appointment("appt-2", "family_medicine", "acme-northgate", "Northgate Clinic", SOON)
    core, ports, _ = _core([first, second])
    response = core.ask(AskRequest(PATIENT, "Can I move my appointment to tomorrow?", AS_OF)).response
    appointment_part = response.parts[0]
    assert appointment_part.outcome == c_pb.PART_OUTCOME_NEEDS_CLARIFICATION
    assert appointment_part.clarification_question.startswith("Which appointment do you mean:")
    assert "Northside" in appointment_part.clarification_question and "Northgate" in appointment_part.clarification_question
    proposal_part = response.parts[-1]
    assert proposal_part.kind == r_pb.PART_KIND_CHANGE_PROPOSAL
    assert proposal_part.clarification_question == appointment_part.clarification_question
    assert ports.scheduler.proposed == []
    assert response.next_action == c_pb.NEXT_ACTION_ANSWER_CLARIFICATION


def test_a_cited_review_rule_makes_the_change_a_review_task():
    mri = _appointment("appt-9", "imaging", "acme-harbor", "Harbor Imaging Center",
                       AS_OF + dt.timedelta(days=2), "mri")
    core, ports, _ = _core([mri], text=REVIEW_TEXT)
    response = core.ask(AskRequest(PATIENT, "Can I move my MRI to tomorrow?", AS_OF)).response
    proposal_part = response.parts[-1]
    ((request, _),) = ports.scheduler.proposed
    assert [c.kind for c in request.consequences] == [m.ConsequenceKind.REVIEW_REQUIRED]
    assert proposal_part.next_action == c_pb.NEXT_ACTION_PREPARE_REVIEW_TASK
    assert proposal_part.proposal.review_required
    assert response.next_action == c_pb.NEXT_ACTION_PREPARE_REVIEW_TASK


def test_a_cancellation_has_no_slot_part_and_terms_that_cannot_be_verified_need_review():
    cardio = _appointment("appt-1", "cardiology", "acme-northside", "Northside Family Clinic", SOON)
    core, ports, _ = _core([cardio])
    answer = core.ask(AskRequest(PATIENT, "Please cancel my cardiology appointment", AS_OF)).response
    assert [r_pb.PartKind.Name(p.kind) for p in answer.parts] == \
        ["PART_KIND_APPOINTMENT", "PART_KIND_CANCELLATION_RESCHEDULING", "PART_KIND_CHANGE_PROPOSAL"]
    ((request, _),) = ports.scheduler.proposed
    assert request.kind == m.ChangeKind.CANCEL and request.slots == ()
    assert answer.parts[-1].next_action == c_pb.NEXT_ACTION_CONFIRM_CHANGE

    core2, ports2, _ = _core([cardio], retrieval=DownRetrieval())
    answer2 = core2.ask(AskRequest(PATIENT, "Please cancel my cardiology appointment", AS_OF)).response
    assert answer2.parts[1].outcome == c_pb.PART_OUTCOME_SOURCE_UNAVAILABLE
    ((request2, _),) = ports2.scheduler.proposed
    assert [c.kind for c in request2.consequences] == [m.ConsequenceKind.TERMS_UNVERIFIED]
    assert answer2.parts[-1].next_action == c_pb.NEXT_ACTION_PREPARE_REVIEW_TASK


def test_a_booking_offers_the_named_time_only():
    core, ports, _ = _core([])
    response = core.ask(AskRequest(PATIENT, "Book the 10:00 cardiology appointment at Northside tomorrow",
                                   AS_OF)).response
    assert [r_pb.PartKind.Name(p.kind) for p in response.parts] == ["PART_KIND_LIVE_SLOT", "PART_KIND_CHANGE_PROPOSAL"]
    ((request, _),) = ports.scheduler.proposed
    assert request.kind == m.ChangeKind.BOOK and request.slots == (("free-10", 4),)
    assert response.parts[-1].next_action == c_pb.NEXT_ACTION_CONFIRM_CHANGE
    nothing = core.ask(AskRequest(PATIENT, "Book the 15:00 cardiology appointment at Northside tomorrow",
                                  AS_OF)).response
    assert nothing.parts[-1].outcome == c_pb.PART_OUTCOME_ABSTAINED_NO_EVIDENCE
    assert len(ports.scheduler.proposed) == 1


def test_an_appointment_changed_meanwhile_proposes_nothing_and_says_why():
    cardio = _appointment("appt-1", "cardiology", "acme-northside", "Northside Family Clinic", SOON)
    core, _, _ = _core([cardio], fail_propose=FailedPrecondition("APPOINTMENT_CHANGED", "version 3, not 2"))
    response = core.ask(AskRequest(PATIENT, "Can I move my cardiology appointment to tomorrow?", AS_OF)).response
    part = response.parts[-1]
    assert part.outcome == c_pb.PART_OUTCOME_UNRESOLVED and not part.proposal.proposal_id
    assert "changed while" in part.answer_text and not response.proposal_ids
    # The other parts keep their own outcomes.
    assert response.parts[1].outcome == c_pb.PART_OUTCOME_ANSWERED


def test_a_new_phone_number_starts_verification_and_is_stored_nowhere():
    core, ports, sink = _core([])
    response = core.ask(AskRequest(PATIENT, "Please use my new phone number 555-0199 from now on", AS_OF)).response
    assert kinds(response) == [("PART_KIND_CONTACT_DETAILS", "PART_OUTCOME_ANSWERED")]
    assert response.next_action == c_pb.NEXT_ACTION_VERIFY_CONTACT_DETAILS
    assert "555-0199" not in response.parts[0].answer_text
    assert ports.scheduler.proposed == [] and ports.retrieval.queries == []


def test_citetrace_ask_prints_the_proposal_id_and_how_to_confirm_it():
    from apps.cli.ask import render

    cardio = _appointment("appt-1", "cardiology", "acme-northside", "Northside Family Clinic", SOON)
    core, _, _ = _core([cardio])
    response = core.ask(AskRequest(PATIENT, "Can I move my cardiology appointment to tomorrow?", AS_OF)).response
    text = render(response)
    assert "appointment appt-1 (version 2), cardiology at Northside Family Clinic" in text
    assert "FEE: If you reschedule or cancel with less than 24 hours notice, a $50 fee applies. [1]" in text
    assert "proposal prop-1: confirm with `citetrace propose confirm prop-1`" in text
    assert "\nproposal: prop-1\n" in text and text.splitlines()[-1].startswith("trace: ")


def test_a_retried_ask_with_its_key_replays_the_answer_and_proposes_once(tmp_path):
    """Issue 18 item 3 (Ask side): the stored answer, the same trace ID, no second record and no
    second proposal; the key with another question is ALREADY_EXISTS; no key: a new answer."""
    import pytest
    from citetrace.kit.errors import AlreadyExists, InvalidArgument

    cardio = _appointment("appt-1", "cardiology", "acme-northside", "Northside Family Clinic", SOON)
    ports = Downstream(Scheduler([cardio]), Retrieval(FEE_TEXT), Generation(FEE_TEXT), Validator())
    sink = Sink()
    core = build_core(Settings(port=0, metrics_port=-1, data_dir=tmp_path), ports, sink)
    question = "Can I move my cardiology appointment to tomorrow?"
    first = core.ask(AskRequest(PATIENT, question, AS_OF, idempotency_key="retry-1"))
    again = core.ask(AskRequest(PATIENT, question, AS_OF, idempotency_key="retry-1"))
    first.response.trace_delivered = first.trace_delivered  # as the servicer sets it
    assert again.response.replayed and not first.response.replayed  # the retry is told (issue 17 §4)
    first.response.replayed = True
    assert again.response == first.response and again.result is None and again.trace_delivered
    assert list(again.response.proposal_ids) == list(first.response.proposal_ids)
    assert len(ports.scheduler.proposed) == 1 and len(sink.records) == 1
    with pytest.raises(AlreadyExists) as reused:
        core.ask(AskRequest(PATIENT, "Please cancel my cardiology appointment", AS_OF, idempotency_key="retry-1"))
    assert reused.value.reason == "IDEMPOTENCY_KEY_REUSED"
    other = Principal("acme-health", "acme-patient-0009", ("patient",), patient_ref="acme-patient-0009")
    with pytest.raises(AlreadyExists):  # another caller's request under the tenant's key
        core.ask(AskRequest(other, question, AS_OF, idempotency_key="retry-1"))
    with pytest.raises(InvalidArgument):
        core.ask(AskRequest(PATIENT, question, AS_OF, idempotency_key="not a key!"))
    core.ask(AskRequest(PATIENT, question, AS_OF))
    # Two answers and the three refusals, each with its own record (issue 16 point 4).
    assert len(ports.scheduler.proposed) == 2 and len(sink.records) == 5
    assert len({r.trace_id for r in sink.records}) == 5


GENERAL_TEXT = "You can reschedule an appointment once without a fee if you do so at least 24 hours in advance."


class ScopedRetrieval(Retrieval):
    """The tenant-wide rescheduling term (ranked first) and Harbor's own review rule (scoped to
    acme-harbor in the store of record)."""

    SCOPES = {"pass-1": ("ver-1", ()), "pass-2": ("ver-2", ("acme-harbor",))}

    def __init__(self, local_text=REVIEW_TEXT, general_text=GENERAL_TEXT, says_versions=False,
                 general_heading="Rescheduling"):
        super().__init__(general_text)
        self.local_text = local_text
        self.general_heading = general_heading
        self.says_versions = says_versions  # the search reports each hit's version (SearchResponse.versions)
        self.version_lookups = []

    def search(self, query, timeout):
        self.queries.append(query)
        hits = []
        for n, (doc, text) in enumerate((("acme-cancellation-policy", self.text),
                                         ("acme-imaging-changes", self.local_text)), start=1):
            ident = m.PassageIdentity(f"pass-{n}", "acme-health", doc, f"ver-{n}", 0, len(text), "d" * 64,
                                      "Rescheduling", "cancellation_policy")
            heading = self.general_heading if n == 1 else "Rescheduling"
            hits.append(m.Hit(m.Passage(ident, text, heading, doc), f"S{n}", fused_rank=n))
        versions = self.versions_of_hits(["pass-1", "pass-2"]) if self.says_versions else ()
        return m.SearchResult(tuple(hits), m.RetrievalSettings(backend="embedded"), tuple(versions))

    def versions_of(self, passage_ids, timeout):
        self.version_lookups.append(tuple(passage_ids))
        return self.versions_of_hits(passage_ids)

    def versions_of_hits(self, passage_ids):
        return [m.VersionInfo(self.SCOPES[p][0], m.VersionStatus.APPROVED, self.SCOPES[p][1]) for p in passage_ids]


class FirstPassageGeneration:
    """Like a generator with a small claim budget: one claim, from the best-ranked passage offered."""

    def __init__(self):
        self.offered = []

    def generate(self, request, timeout):
        first = request.passages[0]
        self.offered.append(tuple(lp.label for lp in request.passages))
        return m.GenerationResult((m.Claim("c1", first.passage.text, (first.label,), m.ClaimType.CANCELLATION_TERM),),
                                  m.GeneratorInfo("extractive"), len(request.passages), 0,
                                  labels_offered=tuple(lp.label for lp in request.passages))


class CitingValidator:
    """Supports a claim whose text is its cited passage's (the validator's citations, by label)."""

    def validate(self, request, timeout):
        by_label = {lp.label: lp.passage for lp in request.offered}
        out = []
        for claim in request.claims:
            passage = by_label[claim.evidence_labels[0]]
            ident = passage.identity
            citation = m.Citation(claim.evidence_labels[0], ident.passage_id, ident.document_id, ident.version_id,
                                  ident.start, ident.end, ident.content_sha256)
            ok = claim.text == passage.text
            out.append(m.ClaimValidation(claim.claim_id, support=m.Support.SUPPORTED if ok else m.Support.UNSUPPORTED,
                                         citations=(citation,) if ok else ()))
        return m.ValidationResult(tuple(out), passed=all(v.support == m.Support.SUPPORTED for v in out),
                                  source_policy_version="sp-1")


def _scoped_core(appointments, tmp_path=None, local_text=REVIEW_TEXT, general_text=GENERAL_TEXT,
                 says_versions=False):
    ports = Downstream(Scheduler(appointments), ScopedRetrieval(local_text, general_text, says_versions),
                       FirstPassageGeneration(), CitingValidator())
    sink = Sink()
    settings = Settings(port=0, metrics_port=-1, **({"data_dir": tmp_path} if tmp_path else {}))
    return build_core(settings, ports, sink), ports, sink


@pytest.mark.parametrize("says_versions", [False, True], ids=["scopes-by-get-passages", "scopes-from-the-search"])
def test_a_change_at_a_location_with_its_own_rule_cites_that_rule_before_the_tenant_wide_one(says_versions):
    """The generator shows only the tenant-wide term of the whole offering; the change's location
    (Harbor) has its own validated rule among the offered passages: it leads the policy part and
    makes the proposal a staff review task. The scopes are the ones the search reported for its hits
    (no second round trip), or, from a retrieval that does not report them, read by GetPassages."""
    mri = _appointment("appt-9", "imaging", "acme-harbor", "Harbor Imaging Center", AS_OF + dt.timedelta(days=2),
                       "mri")
    core, ports, sink = _scoped_core([mri], says_versions=says_versions)
    response = core.ask(AskRequest(PATIENT, "Can I move my MRI to tomorrow?", AS_OF)).response
    assert bool(ports.retrieval.version_lookups) is not says_versions
    policy_part, proposal_part = response.parts[2], response.parts[3]
    assert ports.generation.offered == [("S1", "S2"), ("S2",)]  # the whole offering, then Harbor's own passage
    assert [(cl.text, cl.citations[0].document_id) for cl in policy_part.claims] == [
        (REVIEW_TEXT, "acme-imaging-changes"), (GENERAL_TEXT, "acme-cancellation-policy")]
    assert len({cl.claim_id for cl in policy_part.claims}) == 2
    ((request, _),) = ports.scheduler.proposed
    assert [c.kind for c in request.consequences][0] == m.ConsequenceKind.REVIEW_REQUIRED
    assert request.consequences[0].citations[0].document_id == "acme-imaging-changes"
    assert proposal_part.next_action == c_pb.NEXT_ACTION_PREPARE_REVIEW_TASK
    # Both passes' claims are in the record with the validator's verdicts, attempts numbered apart.
    (record,) = sink.records
    attempts = [(cr.claim.claim_id, cr.attempt, cr.shown) for cr in record.parts[2].claims]
    assert attempts == [("c1", 1, True), ("loc-c1", 2, True)]


def test_a_tenant_wide_rule_the_locations_own_rule_overrides_is_not_shown_beside_it():
    """Harbor asks 48 hours where the tenant-wide term says 24: shown together they contradict, and at
    Harbor its own rule holds. The tenant-wide claim stays in the record with its verdict, unshown."""
    harbor_text = "Appointments at Harbor must be rescheduled at least 48 hours in advance."
    mri = _appointment("appt-9", "imaging", "acme-harbor", "Harbor Imaging Center", AS_OF + dt.timedelta(days=2),
                       "mri")
    core, _, sink = _scoped_core([mri], local_text=harbor_text)
    response = core.ask(AskRequest(PATIENT, "Can I move my MRI to tomorrow?", AS_OF)).response
    assert [cl.text for cl in response.parts[2].claims] == [harbor_text]
    assert response.parts[2].outcome == c_pb.PART_OUTCOME_ANSWERED  # superseded, not withheld
    assert not response.parts[2].withheld
    (record,) = sink.records
    attempts = [(cr.claim.claim_id, cr.attempt, cr.shown) for cr in record.parts[2].claims]
    assert attempts == [("c1", 1, False), ("loc-c1", 2, True)]


@pytest.mark.parametrize("general", [
    # For another appointment type (an MRI), Harbor's own rule for every appointment there: whom each
    # rule is for differs, so neither replaces the other.
    "An MRI scan can be rescheduled without a fee if you do so at least 24 hours in advance.",
    # Another kind of quantity: a notice period does not override a fee.
    "A late change costs a $25 fee.",
])
def test_a_tenant_wide_rule_the_locations_own_does_not_override_stays_beside_it(general):
    harbor_text = "Appointments at Harbor must be rescheduled at least 48 hours in advance."
    mri = _appointment("appt-9", "imaging", "acme-harbor", "Harbor Imaging Center", AS_OF + dt.timedelta(days=2),
                       "mri")
    core, _, _ = _scoped_core([mri], local_text=harbor_text, general_text=general)
    response = core.ask(AskRequest(PATIENT, "Can I move my MRI to tomorrow?", AS_OF)).response
    assert [cl.text for cl in response.parts[2].claims] == [harbor_text, general]


def test_a_change_where_no_offered_passage_is_the_locations_own_asks_nothing_more():
    cardio = _appointment("appt-1", "cardiology", "acme-northside", "Northside Family Clinic", SOON)
    core, ports, _ = _scoped_core([cardio])
    response = core.ask(AskRequest(PATIENT, "Can I move my cardiology appointment to tomorrow?", AS_OF)).response
    assert ports.generation.offered == [("S1", "S2")]
    assert [cl.text for cl in response.parts[2].claims] == [GENERAL_TEXT]
    assert response.parts[3].next_action == c_pb.NEXT_ACTION_CONFIRM_CHANGE


def test_a_which_appointment_reply_in_the_conversation_continues_the_change(tmp_path):
    cardio = _appointment("appt-1", "cardiology", "acme-northside", "Northside Family Clinic", SOON)
    mri = _appointment("appt-9", "imaging", "acme-harbor", "Harbor Imaging Center", AS_OF + dt.timedelta(days=2),
                       "mri")
    core, ports, _ = _scoped_core([cardio, mri], tmp_path)
    first = core.ask(AskRequest(PATIENT, "Can I move my appointment to tomorrow?", AS_OF))
    assert first.response.parts[0].outcome == c_pb.PART_OUTCOME_NEEDS_CLARIFICATION
    assert ports.scheduler.proposed == []
    conversation = first.response.conversation_id
    second = core.ask(AskRequest(PATIENT, "the MRI one", AS_OF, conversation_id=conversation)).response
    assert [r_pb.PartKind.Name(p.kind) for p in second.parts] == [
        "PART_KIND_APPOINTMENT", "PART_KIND_LIVE_SLOT", "PART_KIND_CANCELLATION_RESCHEDULING",
        "PART_KIND_CHANGE_PROPOSAL"]
    assert [a.appointment_id for a in second.parts[0].appointments] == ["appt-9"]
    ((request, _),) = ports.scheduler.proposed
    assert request.appointment_id == "appt-9" and request.kind == m.ChangeKind.RESCHEDULE
    assert ports.scheduler.slot_queries[-1].location_id == "acme-harbor"
    assert any("among the appointments appt-1, appt-9" in e for e in second.route.explanations)
    # A reply that names none of the appointments is a new question, not a choice.
    third = core.ask(AskRequest(PATIENT, "Can I move my appointment to tomorrow?", AS_OF)).response
    unrelated = core.ask(AskRequest(PATIENT, "thanks", AS_OF, conversation_id=third.conversation_id)).response
    assert not any(p.kind == r_pb.PART_KIND_CHANGE_PROPOSAL and p.proposal.proposal_id for p in unrelated.parts)
    assert len(ports.scheduler.proposed) == 1


def test_book_the_ten_oclock_in_reply_to_a_slot_answer_books_among_that_answers_slots(tmp_path):
    core, ports, _ = _scoped_core([], tmp_path)
    first = core.ask(AskRequest(PATIENT, "Are there any cardiology appointments at Northside tomorrow?", AS_OF))
    slot_part = next(p for p in first.response.parts if p.kind == r_pb.PART_KIND_LIVE_SLOT)
    assert {s.slot_id for s in slot_part.slots} == {"free-10", "free-11"}
    searched = ports.scheduler.slot_queries[-1]
    # Alone, the booking says neither where nor what: it asks, and proposes nothing.
    alone = core.ask(AskRequest(PATIENT, "Book the 10:00", AS_OF)).response
    assert alone.next_action == c_pb.NEXT_ACTION_ANSWER_CLARIFICATION and ports.scheduler.proposed == []
    # As a reply to the slot answer: that answer's clinic, specialty and day, the 10:00 among its slots.
    reply = core.ask(AskRequest(PATIENT, "Book the 10:00", AS_OF,
                                conversation_id=first.response.conversation_id)).response
    assert [r_pb.PartKind.Name(p.kind) for p in reply.parts] == ["PART_KIND_LIVE_SLOT", "PART_KIND_CHANGE_PROPOSAL"]
    again = ports.scheduler.slot_queries[-1]
    assert (again.location_id, again.specialty, again.start_time, again.end_time) == (
        "acme-northside", "cardiology", searched.start_time, searched.end_time)
    ((request, _),) = ports.scheduler.proposed
    assert request.kind == m.ChangeKind.BOOK and request.slots == (("free-10", 4),)
    assert reply.parts[-1].next_action == c_pb.NEXT_ACTION_CONFIRM_CHANGE
    assert any("the slots offered by trace" in e for e in reply.route.explanations)


class DeepRetrieval(Retrieval):
    """Nine tenant-wide passages, the first the 24-hour term; Harbor's own 48-hour rule ranked tenth
    (a clinic's page shares fewer of the question's words than the tenant-wide policy). `texts` and
    `harbor_rank` (1-based) set other passages."""

    HARBOR = "Appointments at Harbor must be cancelled at least 48 hours in advance."

    def __init__(self, texts=None, harbor_rank=10):
        super().__init__(GENERAL_TEXT)
        self.texts = texts or [GENERAL_TEXT, *(f"Reception note {n}: our phone line opens at 8." for n in range(2, 10)),
                               self.HARBOR]
        self.harbor_rank = harbor_rank

    def search(self, query, timeout):
        self.queries.append(query)
        hits = []
        for n, text in enumerate(self.texts[: query.k], start=1):
            ident = m.PassageIdentity(f"pass-{n}", "acme-health", f"doc-{n}", f"ver-{n}", 0, len(text), "d" * 64,
                                      "Visit", "scheduling_policy")
            hits.append(m.Hit(m.Passage(ident, text, "Visit", f"doc-{n}"), f"S{n}", fused_rank=n))
        return m.SearchResult(tuple(hits), m.RetrievalSettings(backend="embedded"))

    def versions_of(self, passage_ids, timeout):
        return [m.VersionInfo(f"ver-{p.split('-')[1]}", m.VersionStatus.APPROVED,
                              ("acme-harbor",) if p == f"pass-{self.harbor_rank}" else ()) for p in passage_ids]


def test_a_clinics_own_rule_ranked_below_the_offered_passages_still_makes_the_answer_depend_on_the_clinic():
    """No clinic named, three possible: the search goes clinic_rules_search_k deep so Harbor's 48 hours
    (rank 10, below search_k = 8) is compared with the tenant-wide 24 hours shown: which clinic?"""
    ports = Downstream(Scheduler([]), DeepRetrieval(), Generation(GENERAL_TEXT), Validator())
    core = build_core(Settings(port=0, metrics_port=-1), ports, Sink())
    response = core.ask(AskRequest(PATIENT, "How late can I cancel my appointment without a fee?", AS_OF)).response
    (part,) = response.parts
    # The part's intent clinic_rules_search_k deep, then the clinics' pages of the other policy intents
    # (search_k deep) for the quantity check.
    assert [q.k for q in ports.retrieval.queries] == [16, 8]
    assert m.Intent.CANCELLATION_RESCHEDULING not in ports.retrieval.queries[1].intents
    assert part.outcome == c_pb.PART_OUTCOME_NEEDS_CLARIFICATION
    assert "Harbor Imaging Center" in part.clarification_question
    shallow = Downstream(Scheduler([]), DeepRetrieval(), Generation(GENERAL_TEXT), Validator())
    core = build_core(Settings(port=0, metrics_port=-1, clinic_rules_search_k=8), shallow, Sink())
    response = core.ask(AskRequest(PATIENT, "How late can I cancel my appointment without a fee?", AS_OF)).response
    assert response.parts[0].outcome == c_pb.PART_OUTCOME_ANSWERED  # rank 10 unseen at depth 8


FASTING_TEXT = "If your doctor has asked for a fasting test, do not eat anything for 8 hours before your blood test."
HARBOR_ARRIVAL = "At Harbor, please arrive 20 minutes before your appointment to check in."


def test_a_clinic_stating_the_asked_rule_the_answer_leaves_out_makes_the_answer_depend_on_the_clinic():
    """'How early do I have to be there?' answered tenant-wide with a fasting time (no arrival lead time)
    while Harbor's own page states one: which clinic? A fasting question names no arrival and asks none;
    Harbor's page is then read like any other clinic page, and a generator that finds nothing there
    about going without food leaves the answer standing."""
    def ask(question):
        ports = Downstream(Scheduler([]), DeepRetrieval([FASTING_TEXT, HARBOR_ARRIVAL], harbor_rank=2),
                           LeadingGeneration({"": FASTING_TEXT}), CitingValidator())
        return core_of(ports).ask(AskRequest(PATIENT, question, AS_OF)).response.parts[0]

    def core_of(ports):
        return build_core(Settings(port=0, metrics_port=-1), ports, Sink())

    there = ask("How early do I have to be there before my appointment?")
    assert there.outcome == c_pb.PART_OUTCOME_NEEDS_CLARIFICATION
    assert "Harbor Imaging Center" in there.clarification_question
    fasting = ask("How long do I have to go without food before my blood test?")
    assert fasting.outcome == c_pb.PART_OUTCOME_ANSWERED
    assert [cl.text for cl in fasting.claims] == [FASTING_TEXT]


def test_at_a_named_clinic_its_own_statement_answers_even_where_it_agrees_with_the_tenant_wide_rule():
    """The generator chose the tenant-wide claim; the clinic's own passage was found and states the
    rule there: the clinic's statement is the answer (its own page holds there, agreeing or not), the
    tenant-wide claim stays in the record with its verdict, unshown."""
    general = "Missed appointment (no call, no show): $60."
    harbor = "Harbor charges the same $60 for a missed appointment."
    ports = Downstream(Scheduler([]), ScopedRetrieval(harbor, general), FirstPassageGeneration(), CitingValidator())
    sink = Sink()
    core = build_core(Settings(port=0, metrics_port=-1), ports, sink)
    response = core.ask(AskRequest(PATIENT, "What is the fee for a missed appointment at Harbor Imaging Center?",
                                   AS_OF)).response
    assert ports.generation.offered == [("S1", "S2"), ("S2",)]
    assert [(cl.text, cl.citations[0].document_id) for cl in response.parts[0].claims] == [
        (harbor, "acme-imaging-changes")]
    assert response.parts[0].outcome == c_pb.PART_OUTCOME_ANSWERED
    (record,) = sink.records
    assert [(cr.claim.text, cr.shown) for cr in record.parts[0].claims] == [(general, False), (harbor, True)]


class LeadingGeneration:
    """A generator that answers only the questions it is told to: `leads` maps words of a question
    (as the generator reads it: without the resolved clinic's name) to the passage text it answers
    with, the first that is offered; any other question gets no claim (a generator that finds
    nothing in the passages about it)."""

    def __init__(self, leads):
        self.leads, self.asked = leads, []

    def generate(self, request, timeout):
        self.asked.append((request.question, tuple(lp.label for lp in request.passages)))
        chosen = [lp for words, lead in self.leads.items() if words in request.question
                  for lp in request.passages if lp.passage.text == lead]
        claims = (m.Claim("c1", chosen[0].passage.text, (chosen[0].label,), m.ClaimType.GENERAL_POLICY),) \
            if chosen else ()
        return m.GenerationResult(claims, m.GeneratorInfo("extractive"), len(request.passages), 0,
                                  labels_offered=tuple(lp.label for lp in request.passages))


CHILDREN_GENERAL = ("Children under 16 must be accompanied by a parent, a legal guardian, or another adult "
                    "the parent has named in a signed note.")
CHILDREN_HARBOR = ("Everyone under 19 must be brought by a parent or legal guardian; we can't accept a signed "
                   "note for another adult.")
CHILDREN_QUESTION = "Can our nanny bring my daughter to Harbor Imaging Center if I write a permission note?"
CHILDREN_ASKED = "if I write a permission note"


def _children(leads):
    ports = Downstream(Scheduler([]), ScopedRetrieval(CHILDREN_HARBOR, CHILDREN_GENERAL), LeadingGeneration(leads),
                       CitingValidator())
    sink = Sink()
    response = build_core(Settings(port=0, metrics_port=-1), ports, sink).ask(
        AskRequest(PATIENT, CHILDREN_QUESTION, AS_OF)).response
    return response.parts[0], ports.generation.asked, sink


def test_at_a_named_clinic_its_counterpart_of_the_tenant_wide_claim_answers_when_the_question_finds_nothing_there():
    """Asked of the clinic's own passages, the question finds nothing (worded unlike the page); the
    tenant-wide claim shown, asked of them, finds the clinic's version of that rule: it is the answer."""
    part, asked, sink = _children({CHILDREN_ASKED: CHILDREN_GENERAL, CHILDREN_GENERAL: CHILDREN_HARBOR})
    question = asked[0][0]
    assert "Harbor" not in question  # the resolved clinic is no topic (question_for_generation)
    assert asked == [(question, ("S1", "S2")), (question, ("S2",)), (CHILDREN_GENERAL, ("S2",))]
    assert [cl.text for cl in part.claims] == [CHILDREN_HARBOR]
    assert part.claims[0].citations[0].document_id == "acme-imaging-changes"
    (record,) = sink.records
    assert [(cr.claim.text, cr.shown) for cr in record.parts[0].claims] == [
        (CHILDREN_GENERAL, False), (CHILDREN_HARBOR, True)]


def test_at_a_named_clinic_whose_own_passages_state_nothing_of_it_the_tenant_wide_claim_stands():
    part, asked, _ = _children({CHILDREN_ASKED: CHILDREN_GENERAL})
    assert len(asked) == 3  # the whole offering, then the clinic's passages for the question and for the claim
    assert [cl.text for cl in part.claims] == [CHILDREN_GENERAL]
    assert part.outcome == c_pb.PART_OUTCOME_ANSWERED


def test_a_tenant_wide_rule_for_the_asked_appointment_type_is_not_replaced_by_the_clinics_rule_for_every_other():
    """The tenant-wide claim is the MRI rule asked about; the clinic's own passage is its rule for
    every appointment: whom each is for differs, and the precise one stands."""
    general = "Patients booked for an MRI scan should arrive 25 minutes before the appointment."
    harbor = "For every other appointment at Harbor, arrive 10 minutes early."
    ports = Downstream(Scheduler([]), ScopedRetrieval(harbor, general),
                       LeadingGeneration({"arrive for my MRI scan": general, general: harbor}), CitingValidator())
    response = build_core(Settings(port=0, metrics_port=-1), ports, Sink()).ask(
        AskRequest(PATIENT, "How early should I arrive for my MRI scan at Harbor Imaging Center?", AS_OF)).response
    assert len(ports.generation.asked) == 3  # the clinic's counterpart was found, and set aside
    assert [cl.text for cl in response.parts[0].claims] == [general]


def test_a_tenant_wide_rule_for_what_was_asked_stands_where_the_clinics_own_page_says_nothing_of_it():
    """'allergy skin testing' is in no lexicon; the clinic's page never mentions it, the question and
    the tenant-wide rule's heading do: where the clinic's page says nothing, the tenant-wide rule
    applies. A word of how the question is asked ("arrive") is no such thing."""
    general = "Patients booked for allergy skin testing should arrive 25 minutes before the appointment."
    harbor = "For every other appointment at Harbor, arrive 10 minutes early."
    retrieval = ScopedRetrieval(harbor, general, general_heading="Arrival for allergy skin testing")
    ports = Downstream(Scheduler([]), retrieval,
                       LeadingGeneration({"allergy skin testing": general, "arrive": harbor}), CitingValidator())
    response = build_core(Settings(port=0, metrics_port=-1), ports, Sink()).ask(AskRequest(
        PATIENT, "How many minutes before allergy skin testing should I arrive at Harbor Imaging Center?",
        AS_OF)).response
    assert len(ports.generation.asked) == 2  # the clinic's own answer was found, and set aside
    assert [cl.text for cl in response.parts[0].claims] == [general]


def test_a_clinic_page_stating_another_quantity_is_still_read_for_an_override_in_words():
    """ "Can I text back C to cancel?" asks no quantity; Harbor's page states a notice period and, in
    words, that a reply to a reminder text cancels nothing there. The page is read for the override
    (it is not left to the quantity check, which the question gives nothing to compare): the
    tenant-wide "reply C" depends on the clinic."""
    general = "To cancel, reply C to your reminder text or call us."
    harbor = "Give us at least two business days' notice to cancel. Replies to reminder texts can't cancel Harbor appointments."
    ports = Downstream(Scheduler([]), DeepRetrieval([general, harbor], harbor_rank=2),
                       LeadingGeneration({"text back C": general, "to cancel": harbor}), CitingValidator())
    response = build_core(Settings(port=0, metrics_port=-1), ports, Sink()).ask(
        AskRequest(PATIENT, "Can I just text back C to cancel or do I have to phone?", AS_OF)).response
    (part,) = response.parts
    assert part.outcome == c_pb.PART_OUTCOME_NEEDS_CLARIFICATION
    assert "Harbor Imaging Center" in part.clarification_question
    assert [q for q, _ in ports.generation.asked] == ["Can I just text back C to cancel or do I have to phone?"] * 2


class EveryPassageGeneration:
    """One claim per offered passage, its text (a generator that finds every passage about it)."""

    def __init__(self):
        self.offered = []

    def generate(self, request, timeout):
        self.offered.append(tuple(lp.label for lp in request.passages))
        claims = tuple(m.Claim(f"c{i}", lp.passage.text, (lp.label,), m.ClaimType.GENERAL_POLICY)
                       for i, lp in enumerate(request.passages, start=1))
        return m.GenerationResult(claims, m.GeneratorInfo("extractive"), len(request.passages), 0,
                                  labels_offered=tuple(lp.label for lp in request.passages))


def test_a_mixed_answer_at_a_named_clinic_is_the_clinics_own_even_beside_a_more_precise_tenant_wide_claim():
    """The generator itself cited the clinic's passage beside a tenant-wide one (the MRI price beside
    Harbor's missed-appointment charge): the clinic's passage was chosen as about the question, so
    its answer stands alone, whoever the tenant-wide claim is for (the precision guard is only for
    an answer that cited none of the clinic's passages)."""
    general = "Service: MRI scan, self-pay; Charge: $400."
    harbor = "If you miss an appointment at Harbor without telling us, the charge is $60."
    ports = Downstream(Scheduler([]), ScopedRetrieval(harbor, general), EveryPassageGeneration(), CitingValidator())
    response = build_core(Settings(port=0, metrics_port=-1), ports, Sink()).ask(AskRequest(
        PATIENT, "What happens if I don't turn up for my MRI scan at Harbor Imaging Center, do I get charged?",
        AS_OF)).response
    assert ports.generation.offered == [("S1", "S2"), ("S2",)]
    assert [cl.text for cl in response.parts[0].claims] == [harbor]
