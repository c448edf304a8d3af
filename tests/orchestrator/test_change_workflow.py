"""A change question through the Ask use case (bootstrap-built core, in-memory ports): the
appointment part finds the caller's appointment (or asks which), the slot part searches at its
location in its zone, the policy part's validated claims become the proposal's consequences,
the proposal part asks ProposeChange and answers CONFIRM_CHANGE or PREPARE_REVIEW_TASK; a
contact-detail change only starts the verification workflow. The real gateway behind the same
path: tests/orchestrator/test_change_inprocess.py and tests/e2e/test_reschedule.py."""

from __future__ import annotations

import datetime as dt

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
