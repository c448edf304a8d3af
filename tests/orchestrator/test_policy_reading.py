"""A slot request that names nothing to book may ask what a policy says ("Do I need to book for the
Saturday clinic or can I just turn up?"; core/router.py `_names_nothing_to_book`). The policy part
planned for that reading asks the generator for a confident lead only (GenerateRequest.confident_only),
is shown beside the slot part's question when it answers, and leaves the answer when it does not, with
the route's explanations saying so."""

from __future__ import annotations

from test_change_workflow import AS_OF, PATIENT, Generation, Retrieval, Scheduler, Sink, Validator, kinds
from test_router import ACME, route

from services.orchestrator.bootstrap import Downstream, build_core
from services.orchestrator.core import change
from services.orchestrator.core import model as m
from services.orchestrator.core.change_requests import ChangeRequest
from services.orchestrator.core.parts import AskRequest
from services.orchestrator.settings import Settings

WALK_IN = "No appointment is needed for the Saturday clinic: just come to the check-in desk."
QUESTION = "Do I need to book for the Saturday clinic or can I just turn up?"


class RecordingGeneration(Generation):
    """Answers with its text, or (answers=False) finds nothing that answers; keeps every request."""

    def __init__(self, text, answers=True):
        super().__init__(text)
        self.answers, self.requests = answers, []

    def generate(self, request, timeout):
        self.requests.append(request)
        if not self.answers:
            return m.GenerationResult((), m.GeneratorInfo("extractive"), 1, 0, labels_offered=("S1",))
        return super().generate(request, timeout)


def _core(answers=True):
    ports = Downstream(Scheduler([]), Retrieval(WALK_IN), RecordingGeneration(WALK_IN, answers), Validator())
    sink = Sink()
    return build_core(Settings(port=0, metrics_port=-1), ports, sink), ports, sink


def test_a_booking_question_that_names_nothing_to_book_is_also_read_as_a_policy_question():
    core, ports, _ = _core()
    answer = core.ask(AskRequest(PATIENT, QUESTION, AS_OF))
    response = answer.response
    assert kinds(response) == [("PART_KIND_LIVE_SLOT", "PART_OUTCOME_NEEDS_CLARIFICATION"),
                               ("PART_KIND_OTHER_POLICY", "PART_OUTCOME_ANSWERED")]
    assert [claim.text for claim in response.parts[1].claims] == [WALK_IN]
    # Only a lead the generator is confident in may answer a reading the question may not have.
    assert ports.generation.requests and all(r.confident_only for r in ports.generation.requests)


def test_the_policy_reading_that_finds_no_answer_leaves_the_answer_and_the_route_says_so():
    core, ports, sink = _core(answers=False)
    answer = core.ask(AskRequest(PATIENT, QUESTION, AS_OF))
    assert kinds(answer.response) == [("PART_KIND_LIVE_SLOT", "PART_OUTCOME_NEEDS_CLARIFICATION")]
    assert ports.generation.requests, "the reading was never asked"
    explanations = list(answer.response.route.explanations)
    assert any("policy reading did not answer" in e and "not shown" in e for e in explanations)


def test_a_slot_request_that_names_what_to_book_is_not_read_as_a_policy_question():
    core, ports, _ = _core()
    answer = core.ask(AskRequest(PATIENT, "Can I book cardiology at Northside on Saturday?", AS_OF))
    assert [k for k, _ in kinds(answer.response)] == ["PART_KIND_LIVE_SLOT"]
    assert ports.generation.requests == []


def test_a_change_request_replaces_the_policy_reading_with_its_own_terms():
    """A change to the caller's own appointment plans its own parts (the change terms among them):
    the policy reading gives way to them."""
    routed = route(QUESTION, AS_OF, ACME)
    assert any(p.only_if_answered for p in routed.parts), "the question is no longer read both ways"
    change.plan(routed, ChangeRequest("reschedule", routed.parts[0].clauses[0], "test: a reschedule"), 14, AS_OF)
    assert routed.change is not None
    assert not any(p.only_if_answered for p in routed.parts)
