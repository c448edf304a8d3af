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
    # a thing to borrow, and what some named thing of the clinic has, does or covers
    ("can i borrow a wheelchair at reception when i get there", "a wheelchair"),
    ("does your wide bore scanner have a weight limit? i'm a big guy", "a weight limit"),
    ("does the discount cover acupuncture for back pain?", "acupuncture"),
    # what one would drop in for (the Tōtara probe's q06: a flu jab at urgent care, answered with its hours)
    ("Can I just pop into the urgent care for a flu jab on Saturday?", "a flu jab"),
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
    "could we walk in for a wheelchair check this arvo?",  # when is no thing: "arvo"
])
def test_nothing_is_missing_when_the_thing_is_mentioned_or_none_is_asked(question):
    read = READ + ["Wheelchair spaces are next to the door."]
    assert relevance.missing_asked_thing(question, read) == ""


def test_a_typing_slip_and_an_inflection_still_mention_the_thing():
    assert relevance.missing_asked_thing("do you offer interpretors?", READ) == ""  # one letter changed
    assert relevance.missing_asked_thing("Do you offer interpreting?", READ) == ""  # a shared 5-letter prefix
    assert relevance.missing_asked_thing("Do you offer acupuncture?", READ) == "acupuncture"


@pytest.mark.parametrize("question", [
    "do you guys do home visits for eye or hearing tests",
    "Can one of your audiologists do home visits to test her hearing?",  # citetrace.lay's reading of "come out to the house"
    "can the pelvic physio do home visits?",
])
def test_a_thing_of_common_words_is_said_only_where_they_are_said_together(question):
    """Four probes by four authors asked for a home visit and were answered with a sentence saying
    "home" and "visit" apart ("go home after your visit"): neither word says much alone."""
    apart = ["Please go home and rest after your visit.", "Eye exams are by appointment only."]
    assert relevance.missing_asked_thing(question, apart) == "home visits"
    for said in ("We offer home visits for housebound patients.", "Our nurses can visit you at home."):
        assert relevance.missing_asked_thing(question, [*apart, said]) == ""


def test_a_number_of_the_thing_is_no_word_to_say_together():
    """Morven q18: "can i bring my 3 year old" is said by "Babies under one year old can come in"."""
    said = ["Babies under one year old can come into the room with you."]
    assert relevance.missing_asked_thing("can i bring my 3 year old with me?", said) == ""


def test_a_thing_with_an_informative_word_needs_only_that_word():
    assert relevance.missing_asked_thing("do you do travel vaccines?", ["Vaccines for travel are given by the nurse."]) == ""
    assert relevance.missing_asked_thing("Is there an EV charger?", ["An EV bay with a charger is in the lot."]) == ""


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


def test_a_unit_with_the_things_words_apart_does_not_say_it_in_other_words(meaning):
    """Harrowgate q37: "Most first visits end with a short treatment and a home program" read near "home
    visits" by those very words and answered "do your physios come to the house?"."""
    apart = (passage("S1", "Your first visit", "Most first visits end with a short treatment and a home program."),)
    question = "do your physios come to the house? my dad cant drive since his hip op"
    assert meaning.generate(GenerationRequest(question, "OTHER", apart)).claims == []
    also = (*apart, passage("S2", "Exercises", "Yes, most patients leave their first visit with two or three exercises."))
    assert meaning.generate(GenerationRequest(question, "OTHER", also)).claims == []  # "visit" alone
    said = (*also, passage("S3", "Housebound patients", "Our physiotherapists also make house calls for patients "
                           "who cannot travel to the clinic."))
    answered = meaning.generate(GenerationRequest(question, "OTHER", said)).claims
    assert answered and "house calls" in answered[0].text, [c.text for c in answered]


def test_a_price_table_does_not_answer_for_a_service_it_does_not_list(meaning):
    generated = meaning.generate(GenerationRequest("Do you offer teeth whitening, and how much does it cost?",
                                                   "OTHER", PASSAGES))
    assert generated.claims == []


SAID = [("translators", "Language help: Interpreters can be arranged at no cost if you tell us when you book."),
        ("an EV charger", "Parking: There is a free electric vehicle charging point in the lot for patients."),
        ("a baby changing room", "Facilities: Our toilets are on the ground floor and have a baby changing table."),
        ("a hearing loop", "Accessibility: Reception has an induction loop for hearing aid users."),
        ("sign language", "Language help: We can book a BSL interpreter for deaf patients.")]
NOT_SAID = [("video appointments", "Nurse advice line: The nurse line gives advice only; it cannot prescribe."),
            ("a weight limit", "MRI: Our scanner is a wide-bore model, which most people find easier."),
            ("a wheelchair", "Parking: Pick up a parking permit from reception."),
            ("eye tests", "Fees: Ask about our sliding-fee discount program if your insurance leaves you with high costs."),
            ("an app", "Paying: You can also pay online in the patient portal.")]


def test_a_thing_said_in_other_words_reads_near_it(meaning):
    """The operating point of extractive.THING_SAID: the thing's own words against the unit."""
    from services.generation.extractive import THING_SAID
    said = [meaning.similarity.similarities(thing, [unit])[0] for thing, unit in SAID]
    not_said = [meaning.similarity.similarities(thing, [unit])[0] for thing, unit in NOT_SAID]
    assert min(said) >= THING_SAID > max(not_said), (said, not_said)


def test_the_question_s_topic_is_not_the_thing_asked_for(meaning):
    """"does the nurse line do video calls?": the nurse line's sentence is near the question (its
    topic), not near "video calls"; before, any unit that near the question let the answer stand."""
    passages = (passage("S1", "Nurse advice line", "The nurse line gives advice only; it cannot prescribe or book "
                        "appointments."),
                passage("S2", "Nurse advice line", "Call the nurse line any time, day or night, to talk it through."))
    generated = meaning.generate(GenerationRequest("does the after hours nurse line do video calls? its easier to "
                                                   "show them", "OTHER", passages))
    assert generated.claims == [], [c.text for c in generated.claims]


def test_the_part_of_the_thing_no_passage_mentions_must_be_said(meaning):
    """"travel vaccines" beside "flu vaccines": the thing as a whole reads near the flu sentence (its
    shared word), its unsaid word "travel" does not (relevance.unsaid_words)."""
    assert relevance.unsaid_words("travel vaccines", READ) == "travel"
    generated = meaning.generate(GenerationRequest("do ye do travel vaccines with the nurse? going abroad in march",
                                                   "OTHER", PASSAGES))
    assert generated.claims == [], [c.text for c in generated.claims]
    assert relevance.asked_things("do you rent out wheelchairs at the front desk?") == [("wheelchairs", ("wheelchair",))]
