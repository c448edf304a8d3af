"""The router on the learned gate's analysis (the shipped model), for what only the model's reading
shows: a clause of courtesy alone ("thanks heaps", "hi!!") carries no intent, whatever the model
reads into it. Once "thanks heaps" read as availability (0.9), and the parking question beside it
was taken for that booking's context (the Quillon probe, q04)."""

import datetime as dt

import pytest

from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.model import PartKind
from services.orchestrator.core.router import LexiconRouter
from services.orchestrator.core.routing import Question
from services.orchestrator.understanding.analysis import QuestionAnalyzer
from services.orchestrator.understanding.bench import lexicon_matcher
from services.orchestrator.understanding.encoder import QuestionEncoder
from services.orchestrator.understanding.gate import LearnedScopeGate

AS_OF = dt.datetime(2026, 11, 30, 13, 0, tzinfo=dt.UTC)
CLINICS = [LocationInfo("q-redgum", "Kids' Clinic at Redgum Hospital", "", "Australia/Brisbane",
                        ("general_paediatrics",), aliases=("the hospital clinic", "Tallowood Drive")),
           LocationInfo("q-banksia", "Banksia Street Clinic", "", "Australia/Brisbane", ("general_paediatrics",))]


@pytest.fixture(scope="module")
def gate():
    analyzer = QuestionAnalyzer(QuestionEncoder(), lexicon=lexicon_matcher())
    analyzer.warm_up()
    return LearnedScopeGate(analyzer)


def route(gate, text):
    question = Question.of(text, AS_OF)
    return LexiconRouter().route(question, gate.decide(question.clauses), CLINICS)


def test_thanks_and_greetings_carry_no_intent_and_the_question_beside_them_is_asked(gate):
    result = route(gate, "hi!! we've got dr achterbergs appt at the hospital clinic on tallowood dr next tues for "
                         "our 2yo. is parking free there or do i need to bring coins? thanks heaps")
    assert PartKind.LIVE_SLOT not in [p.kind for p in result.parts]
    (policy,) = result.parts
    assert any("parking" in clause for clause in policy.clauses)
    assert not any(clause.lower().startswith(("hi", "thanks")) for clause in policy.clauses)
    assert any("courtesy only" in e for e in result.explanations)


@pytest.mark.parametrize("text", ["thanks heaps", "hi!!", "cheers mate", "tusen takk"])
def test_a_question_of_courtesy_alone_is_still_answered_as_a_policy_question(gate, text):
    """Nothing else to ask: the part searches every policy intent and the relevance rule decides."""
    result = route(gate, text)
    assert [p.kind for p in result.parts] == [PartKind.OTHER_POLICY]


def test_a_statement_beside_a_question_asking_for_nothing_is_its_context(gate):
    """The model read "trying to avoid my credit card" as a fee question (0.91), and the payment
    question beside it became that part's context (the Aspen Ridge probe, q32)."""
    result = route(gate, "do you guys take cash or checks? trying to avoid my credit card")
    assert [p.kind for p in result.parts] == [PartKind.OTHER_POLICY]
    assert any("asking for nothing: context" in e for e in result.explanations)


@pytest.mark.parametrize("text,kinds", [
    # a request stated, not asked, keeps its part
    ("I need to cancel my appointment tomorrow. Is there a fee?", {PartKind.CANCELLATION_RESCHEDULING}),
    # the first half of a question, not a sentence of its own
    ("Any paediatric appointments tomorrow, and how early should I get there?",
     {PartKind.LIVE_SLOT, PartKind.ARRIVAL_PREPARATION}),
])
def test_a_request_or_half_a_question_is_not_taken_for_context(gate, text, kinds):
    result = route(gate, text)
    assert kinds <= {p.kind for p in result.parts}
    assert not any("asking for nothing" in e for e in result.explanations)
