"""What a question asks ABOUT (relevance.key_terms): "you" as patients type it is no topic. "ye"
was the whole topic of "How much notice do ye need if I have to cancel?" once the intent's own
words were set aside, so no sentence covered the question (the independent Juniper probe,
tests/e2e/unseen/juniper, 2026-12-06)."""

from __future__ import annotations

import pytest
from citetrace.textnorm import thing_absent

from services.generation import relevance
from services.generation.relevance import coverage, key_terms, terms


@pytest.mark.parametrize("question", [
    "How much notice do ye need if I have to cancel?",
    "how much notice do u need if i want to cancel",
    "do youse need much notice to cancel?",
])
def test_you_as_patients_type_it_is_no_topic(question):
    found = key_terms(question, "CANCELLATION_RESCHEDULING")
    assert not found & terms("u ye youse"), found
    # A sentence stating the notice period covers what is asked (its kind words are the intent's).
    assert coverage(found, terms("Please give us at least 24 hours' notice if you need to cancel.")) == 1.0


def test_a_topic_word_stays_a_key_term():
    assert terms("cash") <= key_terms("do u take cash?", "OTHER")


@pytest.mark.parametrize("question,kind", [
    ("how much notice do u need if i want to cancel", "duration"),
    ("How long is a first physio session?", "duration"),
    ("What time do you open on Saturdays?", "duration"),
    ("what notice do you need to cancel an appointment?", "duration"),
    ("What's the notice period for cancelling?", "duration"),
    ("how much is the deposit", "price"),
    ("whats the charge if i dont show up", "price"),
    ("what would it cost me to see the nurse", "price"),
    ("Hva koster en time hos fysioterapeut?", "price"),
    ("how many sessions do I get", ""),
    ("I'm new, how much before the start time should I show up?", "lead time"),
    ("Got an ultrasound booked next Tuesday, how early should I rock up?", "lead time"),
    ("Can I park at the clinic?", ""),
    ("How do I cancel?", ""),
    # "how much" of something else than money asks no price: water to drink, blood taken
    ("how much water do i have to drink before my pelvic ultrasound", ""),
    ("how much blood do they take for the test", ""),
    ("hvor mye vann skal jeg drikke før ultralyden", ""),
    # and of money it does, whoever pays or gives back
    ("how much does insurance cover", "price"),
    ("how much will medicare give me back for physio", "price"),
    ("How much do you charge to fill out the form", "price"),
    ("how much for a filling?", "price"),
    ("hvor mye må jeg betale for legeerklæring?", "price"),
    # a deadline or a first moment asks a time; "the latest news" does not
    ("whats the latest i can cancel without being charged anything?", "duration"),
    ("what's the earliest we can come in?", "duration"),
    ("is there a deadline to reschedule", "duration"),
    ("where can i read the latest newsletter", ""),
])
def test_the_amount_a_question_asks_for(question, kind):
    from services.generation.relevance import asked_amount

    assert asked_amount(question) == kind


@pytest.mark.parametrize("text,kind,states", [
    ("Please tell us at least 24 hours before your appointment.", "duration", True),
    ("Most results are back within a week.", "duration", True),
    ("Moving an appointment counts as cancelling it, so the same notice applies.", "duration", False),
    ("If you cancel with less notice than that, we charge a fee of €30.", "duration", False),
    ("If you cancel with less notice than that, we charge a fee of €30.", "price", True),
    ("Flu vaccines are free of charge for card holders.", "price", True),
    ("Wear loose clothing to your physiotherapy session.", "price", False),
    ("Northgate: Monday to Saturday, 9:00 to 17:00.", "duration", True),
    ("Results can be collected after 2pm.", "duration", True),
    ("Most results are back within a few working days.", "duration", True),
    ("Most blood test results are back with us within 5 working days.", "duration", True),
    ("We will waive the fee once in each calendar year.", "duration", False),
    ("Please arrive fifteen minutes early.", "duration", True),
    ("Kom fem minutter før timen.", "duration", True),
    ("Svar innen tre virkedager.", "duration", True),
    ("Ikke spis etter kl. 22 kvelden før.", "duration", True),
    ("Talk to the front desk about your time slot.", "duration", False),
])
def test_what_states_an_amount(text, kind, states):
    from services.generation.relevance import states_amount

    assert states_amount(text, kind) is states


@pytest.mark.parametrize("word,thing", [
    ("cashless", "cash"), ("paperless", "paper"), ("smokefree", "smoke"), ("scentfree", "scent"),
    ("unless", ""), ("less", ""), ("free", ""), ("cash", ""), ("regardless", "regard"),
])
def test_the_thing_a_word_says_is_absent(word, thing):
    assert thing_absent(word) == thing


def test_a_sentence_that_says_a_thing_is_absent_is_about_that_thing():
    """ "The clinic is cashless" answers "do you take cash?" (in the negative): its terms hold "cash",
    so it covers the question's key term as a sentence naming cash does."""
    assert "cash" in relevance.terms("The Kids' Clinic is cashless.")
    assert relevance.covers("cash", relevance.terms("The Kids' Clinic is cashless."))
    assert "cash" not in relevance.terms("Pay at the cashier on Level 2.")



def test_a_deadline_word_says_what_kind_of_question_it_is_not_its_topic():
    """"latest" in "whats the latest i can cancel" asks for a deadline (a duration): left as a key term
    it was the question's whole topic, no sentence covered it, and the part abstained (Quillon q19)."""
    assert key_terms("whats the latest i can cancel without being charged anything?", "CANCELLATION_RESCHEDULING") == \
        frozenset()
    assert "latest" not in key_terms("what's the latest arrival time for my scan", "ARRIVAL_PREPARATION")


@pytest.mark.parametrize("question", [
    "What time should I be at the clinic for my eye test?",
    "how early should i get there before my hearing screening",
    "When do I need to arrive for my MRI?",
])
def test_the_visit_a_when_to_come_question_is_for_is_no_topic(question):
    """The visit after "for/before my" is the occasion of the question (the independent Corrib probe,
    q34): a rule for every visit answers it, so a sentence need not name the visit to cover it."""
    found = key_terms(question, "ARRIVAL_PREPARATION")
    assert coverage(found, terms("Please arrive 10 minutes before your appointment time.")) == 1.0, found


@pytest.mark.parametrize("question", [
    "booked in at the clinic tues, how early b4 my appt should i get there",
    "my appointment is on thursday morning, what time should i show up?",
    "hey so what time should i show up on Friday afternoon?",
])
def test_when_the_visit_is_is_no_topic_of_when_to_come(question):
    """The day of the visit is its occasion too (Corrib q07, "tues"): how early to come does not depend on it."""
    found = key_terms(question, "ARRIVAL_PREPARATION")
    assert coverage(found, terms("Please arrive 10 minutes before your appointment time.")) == 1.0, found


@pytest.mark.parametrize("question", [
    "hiya need to cancel my coil fitting next week, how much notice do you need?",
    "need to cancel my mri, how much notice do i gotta give",
    "need to cancel my sons cleaning, its for thursday. how much notice r u supposed to give",
    "I have to move my physio on friday morning, is there a fee?",
])
def test_the_visit_a_cancellation_is_for_is_no_topic(question):
    """The visit cancelled or moved is the occasion (Morven q15, Aspen Ridge q07): the notice for every
    appointment answers it, so a sentence need not name the visit to cover the question."""
    found = key_terms(question, "CANCELLATION_RESCHEDULING")
    assert coverage(found, terms("Please give us at least 48 hours' notice if you can't come, or a fee applies.")) \
        == 1.0, found


def test_what_a_cancellation_question_asks_about_beyond_the_visit_stays_its_topic():
    assert "app" in key_terms("can i cancel my physio in the app?", "CANCELLATION_RESCHEDULING")
    assert "refund" in key_terms("if I cancel my scan do I get a refund?", "CANCELLATION_RESCHEDULING")


def test_the_day_stays_the_topic_when_it_is_what_is_asked():
    assert "saturday" in key_terms("are you open on saturday morning?", "ARRIVAL_PREPARATION")
    assert "saturday" in key_terms("can I get a blood test on saturday?", "OTHER")


@pytest.mark.parametrize("question,topic", [
    ("when do i have to stop eating before my ct with dye?", "ct"),
    ("what am i supposed to wear for my knee physio?", "knee"),
    ("What should I bring to my hearing test?", "hear"),
])
def test_what_to_do_before_a_visit_keeps_the_visit_as_topic(question, topic):
    """Eating, wearing or bringing things for a visit is the visit's own rule: its words stay key terms."""
    assert topic in key_terms(question, "ARRIVAL_PREPARATION")


@pytest.mark.parametrize("question", ["how early b4 my appt should i get there", "can i move my appt to tmrw pls"])
def test_a_generic_word_as_patients_abbreviate_it_is_no_topic(question):
    """"appt" is "appointment" (Saltmarsh q17, Corrib q07): left a key term, no sentence covered it."""
    assert not key_terms(question, "ARRIVAL_PREPARATION") & terms("appt tmrw pls")


@pytest.mark.parametrize("question,thing", [
    ("whats the self pay price for a cortisone shot in my knee?", "cortison"),
    ("what does a crown cost", "crown"),
    ("how much does a hearing aid fitting cost?", "hear"),
    ("hva koster en rotfylling?", "rotfyl"),
])
def test_what_a_price_question_prices_must_be_in_the_passages(question, thing):
    """Aspen Ridge q33: a visit's self-pay price is no price of a cortisone shot the price list leaves out."""
    assert any(thing in informative for _, informative in relevance.asked_things(question))
    assert relevance.missing_asked_thing(question, ["Service: New patient visit; Self-pay price: $245"])


def test_a_price_question_whose_thing_the_passages_price_is_not_missing_it():
    assert not relevance.missing_asked_thing("what does a crown cost?", ["Crown: €650, including the fitting."])
    assert not relevance.missing_asked_thing("what does it cost to cancel late?", ["A late cancellation costs $25."])
    # who it is for is no thing priced
    assert not relevance.missing_asked_thing("do you charge a no show fee for kids", ["A missed appointment costs $65."])


@pytest.mark.parametrize("question", ["Kia ora, how early should I get there?", "g'day, how early should I get there?"])
def test_a_greeting_of_the_locale_is_no_topic(question):
    """Tōtara q37: "Kia ora, and welcome." answered a companion question that began "Kia ora"."""
    found = key_terms(question, "ARRIVAL_PREPARATION")
    assert not found & terms("Kia ora, and welcome."), found


@pytest.mark.parametrize("question,read", [
    ("Kia ora, my nana and my aunty both want to come in with me, is that ok?",
     "my nana and my aunty both want to come in with me, is that ok?"),
    ("Hi there! how early should I come? Thanks!", "how early should I come?"),
    ("Morning, is the clinic open?", "is the clinic open?"),
    ("Morning appointments, are they free?", "Morning appointments, are they free?"),  # no greeting
])
def test_a_greeting_is_not_what_the_question_says(question, read):
    """Tōtara q37: the question read whole was nearest to the guide's opening "Kia ora, and welcome."."""
    from services.generation.relevance import question_sentences

    assert question_sentences(question) == read


@pytest.mark.parametrize("text,states", [
    ("Please arrive 20 minutes before your booked time.", True),
    ("Please arrive at 8:30 p.m. and ring the bell.", True),  # a time to come
    ("Service: Ultrasound and CT (booked only); Hours: Monday to Friday, 7:30 am – 6 pm", False),  # opening hours
    ("Open 9 to 5 on weekdays.", False),
])
def test_a_lead_time_is_no_span_of_opening_hours(text, states):
    """The Tōtara probe's q04: "how early should I rock up?" was led by the radiology centre's opening hours row."""
    from services.generation.relevance import states_amount

    assert states_amount(text, "lead time") is states
