"""citetrace.lay: a lay description of a clinic service read as the service's name, for the two readers
that match a question to passages (the policy part's search query, the extractive generator)."""

from __future__ import annotations

import pytest
from citetrace import lay


@pytest.mark.parametrize("question,reading", [
    ("Can you get someone to translate for her?", "Can you get an interpreter to translate for her?"),
    ("Could someone come and sign for him at his check-up", "Could an interpreter come and sign for him at his check-up"),
    ("can somebody there interpret for my mum", "can an interpreter there interpret for my mum"),
    ("is there anyone who can translate for my father", "is there an interpreter who can translate for my father"),
    # colloquial words for a booking policy's terms
    ("need to call off my mri, how much heads up do i gotta give", "need to cancel my mri, how much notice do i gotta give"),
    ("i had to call it off", "i had to cancel it"),
    ("I'm in a wheelchair, will I be able to get in?", "I'm in a wheelchair (step-free access), will I be able to get in?"),
    ("mum cant manage the stairs", "mum cant manage the stairs (step-free access)"),
    ("if i rock up 15 mins after my slot", "if i arrive 15 mins after my slot"),
    ("wont be able to make my foot appt next week, hows much warning do yous need?",
     "cancel my foot appt next week, hows much warning do yous need?"),
    ("cant make my mole op on the 14th anymore, how much warning do you need",
     "cancel my mole op on the 14th anymore, how much warning do you need"),
    ("whats the latest i can bail on my appointment without getting dinged",
     "whats the latest i can cancel my appointment without getting charged"),
    ("where am i supposed to leave my car when i go to the downtown office",
     "where am i supposed to park when i go to the downtown office"),
    ("is there somewhere to leave the car at the fernridge clinic", "is there somewhere to park at the fernridge clinic"),
    ("Can one of your audiologists come out to the house to test her hearing?",
     "Can one of your audiologists do home visits to test her hearing?"),
    ("do your physios come to the house?", "do your physios do home visits?"),
    ("could the nurse see him at home", "could the nurse do home visits"),
    # an adult brought along is a companion
    ("can my husband come in the room with me? i get really nervous", "can a companion come in the room with me? i get really nervous"),
    ("can my husband and my sister both come in with me at the Port Ellery clinic?",
     "can a companion both come in with me at the Port Ellery clinic?"),
    ("can i bring my mum along to the scan", "can i bring a companion along to the scan"),
    ("my nana and my aunty both want to come in with me", "a companion both want to come in with me"),
])
def test_a_service_described_in_lay_words_is_read_as_its_name(question, reading):
    assert lay.clinic_reading(question) == reading


@pytest.mark.parametrize("question", [
    # someone who signs or translates a thing, not for a person
    "can someone sign the form for him",
    "i need someone to translate my records into English",
    "can anyone sign off my sick note",
    "someone will sign in for me at reception",
    "can someone come in with me to the scan",  # someone who comes along is no interpreter
    "someone has to drive me home",
    "can you call me back about my results",
    "can I borrow a wheelchair at reception",  # a wheelchair to borrow is no need of step-free access
    "rock climbing injury",
    "can you make my appointment earlier?",  # making an appointment is no cancelling
    "i cant make sense of my letter",
    "I will bail out of the car park",
    "can i leave my bag in the car during the scan",  # something left in the car, not the car
    "can I leave the car running at the drop-off zone",
    "can my son come to the clinic with me",  # coming to the clinic is no home visit
    "do i have to go home straight after",
    "my husband will come to the house to pick me up",  # no clinic's home visit
    "my husband is driving me home",  # the companion doing something else
    "can my wife book for me",
    "my husband wants to drive me home",
    "can i bring my 3 year old with me",  # a child: rules of their own
])
def test_look_alikes_are_read_as_written(question):
    assert lay.clinic_reading(question) == question


def test_the_reading_is_versioned_by_the_phrase_lists_digest():
    assert lay.version().startswith("lay-en-") and len(lay.version()) == len("lay-en-") + 12


def test_a_malformed_phrase_list_is_refused_with_its_line(tmp_path, monkeypatch):
    bad = tmp_path / "lay.tsv"
    bad.write_text("# comment\n\\bfine\\b\tgood\n(unclosed\tx\n", encoding="utf-8")
    monkeypatch.setattr(lay, "PHRASE_FILE", bad)
    lay._entries.cache_clear()
    try:
        with pytest.raises(ValueError, match="line 3"):
            lay.version()
    finally:
        monkeypatch.undo()
        lay._entries.cache_clear()


@pytest.mark.parametrize("text,read", [
    ("Kia ora, my nana and my aunty both want to come in with me, is that ok?",
     "my nana and my aunty both want to come in with me, is that ok?"),
    ("Hi there! how early should I come? Thanks!", "how early should I come?"),
    ("Morning, is the clinic open?", "is the clinic open?"),
    ("Morning appointments, are they free?", "Morning appointments, are they free?"),  # no greeting
    ("hello", "hello"),  # all it says
])
def test_a_greeting_is_not_what_a_question_says(text, read):
    """The Tōtara probe's q37: "Kia ora, ..." found and was answered by a guide's "Kia ora, and welcome."."""
    assert lay.without_greeting(text) == read
