"""Signal 3 (relevance.missing_asked_thing): an offer or existence question names the thing it asks
for; evidence that never mentions it answers nothing, however close the topic, unless a unit says
it in other words (as close in meaning as a lead by meaning alone). The passages and questions are
written for these tests (not the sample corpus, the eval or a probe)."""

from __future__ import annotations

import pytest

from services.generation import relevance
from services.generation.core import GenerationRequest, OfferedPassage
from services.generation.extractive import ExtractiveBackend
from services.generation.semantic import EmbeddedUnitSimilarity

TITLE = "Visiting the Thornbury Surgery (synthetic)"


def passage(label: str, section: str, text: str) -> OfferedPassage:
    return OfferedPassage(label, f"p-{label}", text, "handbook", f"{TITLE} > {section}", TITLE)


PASSAGES = (
    passage("S1", "Parking", "Parking in the surgery's own lot is free for up to two hours."),
    passage("S2", "Vaccines", "The practice nurse gives flu vaccines on Tuesday mornings."),
    passage("S3", "Language help", "Interpreters can be arranged at no cost if you tell us when you book."),
    passage("S4", "Fees", "Service: Adult check-up; Self-pay price: $95"),
)
READ = [f"{p.title} {p.heading_context} {p.text}" for p in PASSAGES]


@pytest.mark.parametrize("question,thing", [
    ("Is there an EV charger in the lot?", "an EV charger"),
    ("Do you offer teeth whitening, and how much does it cost?", "teeth whitening"),
    ("do ye do travel vaccines with the nurse?", "travel vaccines"),
    ("Can I bring my dog into the waiting room?", "my dog"),
    ("Do you give a senior discount on check-ups?", "a senior discount"),
    ("Har dere ladestasjon for elbil?", "ladestasjon"),
    ("Kan jeg ta med hunden min?", "hunden min"),
])
def test_a_thing_the_passages_never_mention_is_missing(question, thing):
    assert relevance.missing_asked_thing(question, READ) == thing


@pytest.mark.parametrize("question", [
    "Is there parking at the surgery?",  # parking: the same stem
    "Do you do flu vaccines?",
    "Is there a wheelchiar space in the parking lot?",  # a typing slip of "wheelchair" (the sentence added below)
    "Is there a fee for a late change?",  # only the kind of question: nothing to look for
    "Is there any chance you can see me on a Saturday?",  # a possibility and a day: nothing asked for
    "Har dere åpent fredag ettermiddag?",  # when, not what
    "Can I have a coffee before my blood test?",  # "can I have": not an offer question
    "When should I arrive?",
])
def test_nothing_is_missing_when_the_thing_is_mentioned_or_none_is_asked(question):
    read = READ + ["Wheelchair spaces are next to the door."]
    assert relevance.missing_asked_thing(question, read) == ""


def test_a_typing_slip_and_an_inflection_still_mention_the_thing():
    assert relevance.missing_asked_thing("do you offer interpretors?", READ) == ""  # one letter changed
    assert relevance.missing_asked_thing("Do you offer interpreting?", READ) == ""  # a shared 5-letter prefix
    assert relevance.missing_asked_thing("Do you offer acupuncture?", READ) == "acupuncture"


def test_the_place_asked_about_is_not_the_thing():
    question = "Is there an EV charger at Thornbury Surgery?"
    assert relevance.asked_things(question, ("Thornbury Surgery",)) == [("an EV charger", ("charger", "ev"))]


def test_words_alone_abstain_on_a_close_topic_that_never_mentions_the_thing():
    """Before signal 3 the parking sentence answered the charger question (it shares "lot")."""
    generated = ExtractiveBackend().generate(GenerationRequest("Is there an EV charger in the lot?", "OTHER",
                                                               PASSAGES))
    assert generated.claims == []
    answered = ExtractiveBackend().generate(GenerationRequest("Is the parking lot free?", "OTHER", PASSAGES))
    assert answered.claims and "free" in answered.claims[0].text


@pytest.fixture(scope="module")
def meaning() -> ExtractiveBackend:
    similarity = EmbeddedUnitSimilarity()
    similarity.warm_up()
    return ExtractiveBackend(similarity=similarity)


def test_a_unit_that_says_the_thing_in_other_words_still_answers(meaning):
    generated = meaning.generate(GenerationRequest("Do you offer translators?", "OTHER", PASSAGES))
    assert generated.claims and "Interpreters" in generated.claims[0].text


def test_a_price_table_does_not_answer_for_a_service_it_does_not_list(meaning):
    generated = meaning.generate(GenerationRequest("Do you offer teeth whitening, and how much does it cost?",
                                                   "OTHER", PASSAGES))
    assert generated.claims == []
