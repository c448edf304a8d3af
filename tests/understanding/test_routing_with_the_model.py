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
