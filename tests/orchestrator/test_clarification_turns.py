"""Clarification as a turn (issue 14): an ambiguous clinic gets ONE question from every part that
depends on it; the reply ("Northside") in the same conversation answers the original question for
that clinic only; each turn is its own trace record linked to the previous one; the envelope is the
caller's alone."""

from __future__ import annotations

import datetime as dt

import pytest
from citetrace.kit.auth import Principal
from citetrace.kit.errors import NotFound, Unavailable
from test_use_case import AS_OF, Generation, Sink, Validator, _hit

from services.orchestrator.bootstrap import Downstream, build_core
from services.orchestrator.core import model as m
from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.parts import AskRequest
from services.orchestrator.settings import Settings

PATIENT = Principal("acme-health", "subj-1", ("patient",))
OTHER = Principal("acme-health", "subj-2", ("patient",))
NORTHSIDE = LocationInfo("acme-northside", "Northside Family Clinic", "", "UTC", ("cardiology",), (), ("Northside",))
NORTHGATE = LocationInfo("acme-northgate", "Northgate Family Clinic", "", "UTC", ("cardiology",), (), ("Northgate",))


class Scheduler:
    def __init__(self) -> None:
        self.queries = []

    def list_locations(self, page_token, timeout):
        return [NORTHSIDE, NORTHGATE], ""

    def find_slots(self, query, timeout):
        self.queries.append(query)
        start = query.start_time + dt.timedelta(hours=2)
        return m.SlotResult((m.Slot("s1", 1, query.location_id, time_zone="UTC", specialty=query.specialty,
                                    start_time=start, status=m.SlotStatus.FREE),), AS_OF)


class Retrieval:
    def __init__(self) -> None:
        self.queries = []

    def search(self, query, timeout):
        self.queries.append(query)
        return m.SearchResult(tuple(_hit(n) for n in range(1, 4)), m.RetrievalSettings(backend="embedded"))

    def versions_of(self, passage_ids, timeout):
        return [m.VersionInfo("v1", m.VersionStatus.APPROVED)]


@pytest.fixture
def core(tmp_path):
    ports = Downstream(Scheduler(), Retrieval(), Generation(), Validator())
    sink = Sink()
    settings = Settings(port=0, metrics_port=-1, data_dir=tmp_path)
    return build_core(settings, ports, sink), ports, sink


def _outcomes(answer):
    return [p.outcome for p in answer.result.parts]


def test_ambiguous_clinic_one_question_then_the_reply_answers_the_original(core):
    orchestrator, ports, sink = core
    first = orchestrator.ask(AskRequest(PATIENT, "Can I book cardiology at the family clinic tomorrow, and when "
                                                 "should I arrive?", AS_OF))
    questions = {p.clarification_question for p in first.result.parts}
    assert _outcomes(first) == [m.Outcome.NEEDS_CLARIFICATION, m.Outcome.NEEDS_CLARIFICATION]
    assert len(questions) == 1 and "Northside Family Clinic" in questions.pop()
    assert not ports.retrieval.queries and not ports.scheduler.queries, "nothing searched for two clinics"
    conversation = first.response.conversation_id
    assert conversation.startswith("conv_")

    second = orchestrator.ask(AskRequest(PATIENT, "Northside", AS_OF, conversation_id=conversation))
    assert second.response.conversation_id == conversation
    assert _outcomes(second) == [m.Outcome.ANSWERED, m.Outcome.ANSWERED]
    assert ports.scheduler.queries[-1].location_id == "acme-northside"
    assert ports.retrieval.queries[-1].location_ids == ("acme-northside",)
    first_record, second_record = sink.records
    assert second_record.conversation_id == first_record.conversation_id == conversation
    assert second_record.previous_turn_trace_id == first_record.trace_id
    assert any("the reply names location acme-northside" in e for e in second_record.route.explanations)


def test_the_conversation_is_the_callers_alone(core):
    orchestrator, _, _ = core
    first = orchestrator.ask(AskRequest(PATIENT, "When should I arrive at the family clinic?", AS_OF))
    with pytest.raises(NotFound) as err:
        orchestrator.ask(AskRequest(OTHER, "Northside", AS_OF, conversation_id=first.response.conversation_id))
    assert err.value.reason == "CONVERSATION_NOT_FOUND"
    with pytest.raises(NotFound):
        orchestrator.ask(AskRequest(PATIENT, "Northside", AS_OF, conversation_id="conv_unknown"))


def test_a_reply_reporting_an_emergency_is_not_bound_to_the_pending_question(core):
    orchestrator, _, _ = core
    first = orchestrator.ask(AskRequest(PATIENT, "When should I arrive at the family clinic?", AS_OF))
    reply = orchestrator.ask(AskRequest(PATIENT, "Northside, but I have crushing chest pain right now", AS_OF,
                                        conversation_id=first.response.conversation_id))
    assert reply.result.next_action == m.NextAction.CONTACT_EMERGENCY_SERVICES


class FailingOnce:
    """A trace sink whose first submit fails (the outbox write of a withheld answer)."""

    def __init__(self, sink) -> None:
        self.sink, self.failed = sink, False

    def submit(self, record):
        if not self.failed:
            self.failed = True
            raise OSError("outbox disk full")
        return self.sink.submit(record)


def test_a_withheld_reply_leaves_the_pending_question_for_its_retry(core):
    """The replicas flake's cause (issue 21 §3): a reply turn whose record is withheld has moved the
    conversation on; its retry under the same key continues from the turn before it (bound to the
    pending question, linked to the first turn's trace), not from the dead attempt."""
    orchestrator, _, sink = core
    first = orchestrator.ask(AskRequest(PATIENT, "Can I book cardiology at the family clinic tomorrow, and when "
                                                 "should I arrive?", AS_OF))
    conversation = first.response.conversation_id
    orchestrator.trace_sink = FailingOnce(sink)
    reply = AskRequest(PATIENT, "Northside", AS_OF, conversation_id=conversation, idempotency_key="reply-1")
    with pytest.raises(Unavailable) as err:
        orchestrator.ask(reply)
    assert err.value.reason == "TRACE_NOT_RECORDED"
    retried = orchestrator.ask(reply)  # the client's retry, same key
    assert _outcomes(retried) == [m.Outcome.ANSWERED, m.Outcome.ANSWERED], "still bound to the pending question"
    assert sink.records[-1].previous_turn_trace_id == first.result.trace_id
