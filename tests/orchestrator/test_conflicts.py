"""Conflict detection: two approved documents of the same authority disagreeing on the asked rule."""

from __future__ import annotations

import pytest

from services.orchestrator.core import conflicts
from services.orchestrator.core.conflicts import Candidate, detect, rule_quantities
from services.orchestrator.core.router import load_lexicon

LEX = load_lexicon()
VOCAB = {**LEX.specialties, **LEX.appointment_types}
ARRIVAL = "arrival_preparation"


def cand(label, doc, text, source_class="scheduling_policy", scope=None, context=""):
    return Candidate(label, f"pid-{label}", doc, f"ver-{doc}", source_class, text, context, scope)


def find(cands, intent=ARRIVAL, asked=frozenset()):
    return detect(cands, intent, VOCAB, asked, LEX.type_implies_specialty)


# The deliberate pair of the sample corpus (deploy/samples/corpus/acme-health).
HARBOR = cand("S1", "acme-harbor-mri-arrival",
              "Patients with an MRI appointment at Harbor Imaging Center must arrive 45 minutes before the\n"
              "appointment time to change and complete the safety questionnaire.", scope=("acme-harbor",))
IMAGING = cand("S2", "acme-imaging-preparation",
               "Arrive 30 minutes before your MRI appointment to complete the metal-safety screening.",
               source_class="preparation_instructions", scope=("acme-harbor",),
               context="Imaging preparation instructions > MRI")


def test_the_sample_mri_arrival_pair_conflicts():
    found = find([HARBOR, IMAGING], asked=frozenset({"mri", "imaging"}))
    assert found is not None
    assert {found.first.document_id, found.second.document_id} == {"acme-harbor-mri-arrival",
                                                                  "acme-imaging-preparation"}
    assert "lead time 45min vs 30min" in found.explanation


def test_agreeing_documents_do_not_conflict():
    a = cand("S1", "d1", "Arrive 15 minutes early for cardiology.")
    b = cand("S2", "d2", "Cardiology: please arrive fifteen minutes before your visit.")
    assert find([a, b]) is None


def test_a_class_that_is_no_authority_for_the_rule_does_not_conflict():
    a = cand("S1", "d1", "Arrive 15 minutes early.")
    b = cand("S2", "d2", "Arrive 30 minutes early.", source_class="handbook")
    assert find([a, b]) is None
    c = cand("S3", "d3", "Arrive 20 minutes early.", source_class="handbook")
    assert find([b, c]) is not None  # the same class always counts as the same authority


def test_different_asked_qualifiers_are_different_rules():
    a = cand("S1", "d1", "Arrive 15 minutes early for cardiology.")
    b = cand("S2", "d2", "Arrive 45 minutes early for an MRI.")
    assert find([a, b]) is None
    assert find([a, b], asked=frozenset({"mri"})) is None  # only one of them is about MRI


def test_location_specific_rule_overrides_a_tenant_wide_one():
    general = cand("S1", "policy", "Please arrive 15 minutes before your appointment.", scope=())
    specific = cand("S2", "northgate", "Please arrive 30 minutes early to complete paperwork.",
                    scope=("acme-northgate",))
    assert find([general, specific]) is None
    other = cand("S3", "northgate-2", "Arrive 20 minutes early.", scope=("acme-northgate",))
    assert find([specific, other]) is not None
    elsewhere = cand("S4", "northside", "Arrive 20 minutes early.", scope=("acme-northside",))
    assert find([specific, elsewhere]) is None


def test_same_document_never_conflicts_and_only_top_n_count():
    a = cand("S1", "d1", "Arrive 15 minutes early.")
    b = cand("S2", "d1", "Arrive 30 minutes early.")
    assert find([a, b]) is None
    filler = [cand(f"S{i}", f"f{i}", "Parking is free.") for i in range(2, 6)]
    late = cand("S6", "d9", "Arrive 30 minutes early.")
    assert detect([a, *filler, late], ARRIVAL, VOCAB, top_n=4) is None


def test_fasting_times_are_not_arrival_times():
    text = "Do not eat for 4 hours before a CT scan with contrast. Arrive 30 minutes before your scan."
    assert rule_quantities(text, ARRIVAL) == {"lead time": frozenset({"30min"})}


def test_cancellation_notice_and_fee():
    a = cand("S1", "policy-a", "Cancel at least 24 hours before your appointment.", "cancellation_policy")
    b = cand("S2", "policy-b", "Cancellations need 48 hours notice.", "cancellation_policy")
    found = detect([a, b], "cancellation_rescheduling", VOCAB)
    assert found is not None and "1440min vs 2880min" in found.explanation
    assert detect([a, b], "provider_information", VOCAB) is None
    assert rule_quantities("A late cancellation costs $50.", "cancellation_rescheduling")["fee"] == {"50"}


def test_units_are_normalized():
    assert rule_quantities("arrive 1 hour early", ARRIVAL) == rule_quantities("arrive 60 minutes early", ARRIVAL)


@pytest.mark.parametrize("text", ["We need at least 48 hours' notice to cancel.", "Cancelling needs 2 days’ notice.",
                                  "We need 48 hours notice to cancel."])
def test_a_possessive_unit_is_a_notice_period(text):
    """ "48 hours' notice": the apostrophe is English, not the end of the quantity (a clinic's
    override written so was invisible, and its patients were given the tenant-wide 24 hours)."""
    assert rule_quantities(text, "cancellation_rescheduling") == {"notice period": frozenset({"2880min"})}


@pytest.mark.parametrize("text,intent,expected", [
    ("To cancel, please let us know 2 days beforehand.", "cancellation_rescheduling",
     {"notice period": frozenset({"2880min"})}),
    ("Please arrive 20 minutes beforehand to check in.", ARRIVAL, {"lead time": frozenset({"20min"})}),
])
def test_beforehand_states_a_rule_quantity(text, intent, expected):
    """ "24 hours beforehand" is the tenant-wide notice period as much as "24 hours before": unread, an
    answer stating it could not be compared with a clinic's own 48 hours."""
    assert rule_quantities(text, intent) == expected


@pytest.mark.parametrize("text,intent,expected", [
    ("Timer på Holmvik må avbestilles senest 48 timer før.", "cancellation_rescheduling",
     {"notice period": frozenset({"2880min"})}),
    ("Du må avbestille senest 24 timer før timen.", "cancellation_rescheduling",
     {"notice period": frozenset({"1440min"})}),
    ("Møt opp 20 minutter før timen.", ARRIVAL, {"lead time": frozenset({"20min"})}),
    ("Ikke-møtt-gebyret er 450 kr for en legetime.", "cancellation_rescheduling", {"fee": frozenset({"450"})}),
])
def test_bokmal_rule_quantities(text, intent, expected):
    """A bokmål clinic page states its own notice, lead time and fee in bokmål ("48 timer før"):
    unread, its override of the tenant-wide rule was invisible (the lyngstad probe)."""
    assert rule_quantities(text, intent) == expected


def test_a_conflict_only_on_the_quantity_the_question_asks_for():
    # Two MRI documents of the same authority disagree on the lead time: a conflict for "when
    # should I arrive", none for a question about jewellery (it asks for no lead time).
    a = Candidate("S1", "p1", "doc-a", "v1", "preparation_instructions", "MRI: arrive 30 minutes before your scan.",
                  "Imaging preparation > MRI")
    b = Candidate("S2", "p2", "doc-b", "v2", "scheduling_policy", "MRI patients arrive 45 minutes early.",
                  "MRI arrival")
    asked = frozenset({"mri", "imaging"})
    implies = LEX.type_implies_specialty
    assert detect([a, b], ARRIVAL, VOCAB, asked, implies, question="When should I arrive for my MRI?") is not None
    assert detect([a, b], ARRIVAL, VOCAB, asked, implies,
                  question="Do I have to take off my jewellery for the MRI?") is None
    assert detect([a, b], ARRIVAL, VOCAB, asked, implies) is not None  # no question given: condition 5 off


# A clinic's own rule beside the tenant-wide one (issue 14's "two clinics' rules mixed"): with
# `overrides`, the pair is reported when they share no quantity, so an answer naming no clinic
# would be the wrong rule for that clinic's patients. The wording is the independent probe's
# (tests/e2e/unseen/larchmont): the tenant-wide sentence carries no arrival word of its own.
EVERYWHERE = cand("S1", "lar-visiting", "Aim to get to reception about 15 minutes before your appointment time.",
                  scope=(), context="Coming to see us > When to arrive")
AT_BAYSIDE = cand("S2", "lar-bayside", "Please arrive 30 minutes before your appointment, rather than the usual 15.",
                  scope=("lar-bayside",), context="Visiting Bayside > Security check-in and arrival time")
ASKED = "how early do i need to get there before my appointment?"


def test_a_heading_about_arriving_makes_its_sentences_arrival_rules():
    assert rule_quantities(EVERYWHERE.text, ARRIVAL) == {}
    assert rule_quantities(EVERYWHERE.text, ARRIVAL, EVERYWHERE.context) == {"lead time": frozenset({"15min"})}


def test_a_clinic_rule_sharing_no_quantity_with_the_tenant_wide_one_is_an_override():
    found = detect([EVERYWHERE, AT_BAYSIDE], ARRIVAL, VOCAB, question=ASKED, overrides=True)
    assert found is not None and "one scoped to a location, one tenant-wide" in found.explanation
    # Not a conflict: the clinic's rule overrides the tenant-wide one there.
    assert detect([EVERYWHERE, AT_BAYSIDE], ARRIVAL, VOCAB, question=ASKED) is None


def test_no_override_when_the_rules_share_a_quantity_or_are_equally_specific():
    partly = cand("S2", "northgate", "New patients arrive 30 minutes early; pre-registered patients arrive 15 minutes early.",
                  scope=("northgate",))
    assert detect([EVERYWHERE, partly], ARRIVAL, VOCAB, question=ASKED, overrides=True) is None
    other_wide = cand("S2", "lar-other", "Arrive 30 minutes before your appointment.", scope=())
    assert detect([EVERYWHERE, other_wide], ARRIVAL, VOCAB, question=ASKED, overrides=True) is None
    assert detect([EVERYWHERE, AT_BAYSIDE], ARRIVAL, VOCAB, question="Is parking free?", overrides=True) is None


def test_who_a_rule_is_for_is_read_where_the_rule_is_stated():
    """A reason in another sentence naming services ("... longer physiotherapy and nurse sessions ...")
    does not make a clinic's notice period a rule for those services only: it still overrides the
    tenant-wide one. A rule sentence that names a service still does."""
    everywhere = cand("S1", "fees", "Please cancel at least 24 hours before your appointment.", scope=())
    reason_apart = cand("S2", "branch", "Many appointments here are longer physiotherapy sessions that are hard to "
                        "fill. Please give us at least 48 hours' notice if you need to cancel.", scope=("branch",))
    question = "how much notice do you need if I cancel?"
    found = detect([everywhere, reason_apart], "cancellation_rescheduling", VOCAB, question=question, overrides=True)
    assert found is not None and "notice period" in found.explanation
    for_one = cand("S2", "branch", "Please give us at least 48 hours' notice to cancel a physiotherapy session.",
                   scope=("branch",))
    assert detect([everywhere, for_one], "cancellation_rescheduling", VOCAB, question=question, overrides=True) is None


def test_a_clinic_page_of_any_class_makes_the_tenant_wide_rule_clinic_dependent():
    """A clinic's own page that may not establish the rule (a handbook, for a notice period) still says
    the tenant-wide rule does not hold there: the answer depends on the clinic (the tenant-wide 24 hours
    was told to the patients of a clinic whose page asks for 48). Two documents of different authority
    are still no conflict."""
    everywhere = cand("S1", "policy", "Please cancel at least 24 hours before your appointment.",
                      source_class="cancellation_policy", scope=())
    page = cand("S2", "branch-page", "We need at least 48 hours' notice if you want to cancel at this clinic.",
                source_class="handbook", scope=("branch",))
    question = "how much notice do you need if I cancel?"
    found = detect([everywhere, page], "cancellation_rescheduling", VOCAB, question=question, overrides=True)
    assert found is not None and "notice period" in found.explanation
    assert detect([everywhere, page], "cancellation_rescheduling", VOCAB, question=question) is None


def test_a_reason_in_the_rule_sentence_does_not_say_whom_the_rule_is_for():
    """ "Physiotherapy and evening appointments here have long waiting lists, so we need 48 hours'
    notice": the services name the reason, the rule is for every appointment at the clinic. A rule
    whose own clause names a service is still for that service."""
    everywhere = cand("S1", "fees", "Please cancel at least 24 hours before your appointment.", scope=())
    question = "how much notice do you need if I cancel?"
    for text in ("Physiotherapy and evening appointments here have long waiting lists, so we need at least 48 "
                 "hours' notice to cancel any appointment here.",
                 "Please give us 48 hours' notice to cancel, because physiotherapy slots are hard to fill."):
        branch = cand("S2", "branch", text, scope=("branch",))
        found = detect([everywhere, branch], "cancellation_rescheduling", VOCAB, question=question, overrides=True)
        assert found is not None and "notice period" in found.explanation, text
    for_one = cand("S2", "branch", "Physiotherapy sessions need 48 hours' notice to cancel, so that we can offer "
                   "them to someone else.", scope=("branch",))
    assert detect([everywhere, for_one], "cancellation_rescheduling", VOCAB, question=question, overrides=True) is None


@pytest.mark.parametrize("question", ["hvor sent kan jeg avbestille legetimen uten aa maatte betale gebyr?",
                                      "hvor mange timer i forveien må jeg avbestille?"])
def test_a_bokmal_question_asks_for_the_notice_period(question):
    """ "hvor sent kan jeg avbestille" asks the notice period as "how late can I cancel" does: unread,
    Holmvik's 48 hours against the tenant-wide 24 was no override for it (the lyngstad probe), and its
    patients were told the 24."""
    everywhere = cand("S1", "lyn-avbestilling", "Du må avbestille senest 24 timer før timen.", scope=())
    holmvik = cand("S2", "lyn-holmvik", "Timer på Holmvik må avbestilles senest 48 timer før.", scope=("lyn-holmvik",))
    found = detect([everywhere, holmvik], "cancellation_rescheduling", VOCAB, question=question, overrides=True)
    assert found is not None and "notice period" in found.explanation


@pytest.mark.parametrize(("question", "intent", "expected"), [
    ("how early do i have to be there before my appointment", "arrival_preparation", {"lead time"}),
    ("When should I arrive for my scan?", "arrival_preparation", {"lead time"}),
    ("how long do i need to go without food before the blood test", "arrival_preparation", set()),
    ("how long do i have to hang around afterwards when i get my flu jab?", "arrival_preparation", set()),
    ("hvor sent kan jeg avbestille timen?", "cancellation_rescheduling", {"notice period"}),
    ("What does a late cancellation cost?", "cancellation_rescheduling", {"fee"}),
    ("Do I bring my insurance card?", "arrival_preparation", set()),
])
def test_a_question_asks_for_the_rule_only_when_it_names_its_topic(question, intent, expected):
    assert conflicts.asks_the_rule(question, intent) == expected


def test_a_table_row_is_one_sentence():
    """The item and its amount stay together; a row without the rule's topic states no rule."""
    table = ("| Item | Fee |\n|---|---|\n| Missed appointment (no call, no show) | $60 |\n"
             "| Late cancellation (less than three business days' notice) | $100 |\n| IV sedation | $395 |")
    assert rule_quantities(table, "cancellation_rescheduling") == {
        "fee": frozenset({"60", "100"}), "notice period": frozenset({"4320min"})}
    assert rule_quantities("| IV sedation, first 30 minutes | $395 |", "cancellation_rescheduling") == {}


@pytest.mark.parametrize(("text", "intent"), [
    ("We send a reminder text 3 days before every appointment.", "cancellation_rescheduling"),
    ("The app now shows your reminder texts too, which arrive 3 days before each appointment, so you can "
     "cancel or move things with one tap.", "cancellation_rescheduling"),
    ("The app now shows your reminder texts too, which arrive 3 days before each appointment.", "arrival_preparation"),
    ("Reply CANCEL to the reminder text we send two days before your appointment.", "cancellation_rescheduling"),
])
def test_when_the_clinic_sends_a_message_is_no_rule_quantity(text, intent):
    """A time before the appointment at which a reminder goes out is neither the patient's lead time
    nor a notice period: read as one, the newsletter's "reminder texts, which arrive 3 days before"
    conflicted with "arrive 10 minutes before" and with "cancel at least 24 hours before" (the
    thornbury probe)."""
    assert rule_quantities(text, intent, "Cancelling and arriving") == {}


def test_a_notice_period_beside_a_message_is_still_read():
    text = "We call patients 2 days before to confirm, so please cancel at least 48 hours before your appointment."
    assert rule_quantities(text, "cancellation_rescheduling") == {"notice period": frozenset({"2880min"})}
    reply = "To cancel, reply to the text at least 24 hours before your appointment."
    assert rule_quantities(reply, "cancellation_rescheduling") == {"notice period": frozenset({"1440min"})}
    everywhere = cand("S1", "policy", "Please cancel at least 24 hours before your appointment.", scope=())
    reminder = cand("S2", "newsletter", "Your reminder texts, which arrive 3 days before each appointment, let you "
                    "cancel with one tap.", scope=())
    assert detect([everywhere, reminder], "cancellation_rescheduling", VOCAB,
                  question="whats the latest i can cancel?") is None


def test_for_an_override_a_rule_for_every_appointment_applies_to_the_asked_type():
    """ "how early for my scan?": the tenant-wide "arrive 10 minutes before" and the unit's "20 minutes"
    name no appointment type, and each applies to a scan as to any appointment: the answer depends on
    the clinic. Two tenant-wide rules are still compared only when both are for what was asked."""
    everywhere = cand("S1", "faq", "Please arrive 10 minutes before your appointment time.", scope=())
    unit = cand("S2", "unit", "Please arrive 20 minutes before your appointment time.", scope=("unit",))
    question = "how early should i get there for my scan?"
    asked = frozenset({"imaging"})
    found = detect([everywhere, unit], ARRIVAL, VOCAB, asked, question=question, overrides=True)
    assert found is not None and "lead time" in found.explanation
    other = cand("S2", "other-faq", "Please arrive 20 minutes before your appointment time.", scope=())
    assert detect([everywhere, other], ARRIVAL, VOCAB, asked, question=question) is None


# The independent Aspen Ridge probe (tests/e2e/unseen/ASPENRIDGE.md): a group FAQ whose title carries
# the group's name ("... Orthopedics & Imaging"), a rule for everyone beside one for new patients,
# and an imaging center's own page.
GROUP_ARRIVAL = cand("S1", "asp-faq", "Please check in 15 minutes before your scheduled appointment time. New patients "
                     "should plan on 20 minutes.", scope=(),
                     context="Patient FAQ - Aspen Ridge Orthopedics & Imaging > How early should I arrive?")
CENTER_ARRIVAL = cand("S2", "asp-foothills", "Please check in 30 minutes before your appointment time for every scan - "
                      "MRI, CT and X-ray.", scope=("asp-foothills",),
                      context="Imaging Center at Foothills Medical Campus > Arrival and check-in")


def test_a_clinics_rule_for_every_scan_overrides_the_groups_rule_for_everyone():
    """The group's passage holds a rule for everyone (15 minutes) beside one for new patients; the
    center's rule names the kinds it covers ("every scan - MRI, CT and X-ray"), not a subgroup;
    "Imaging" in the group's name says whose rule, not for what."""
    found = detect([GROUP_ARRIVAL, CENTER_ARRIVAL], ARRIVAL, VOCAB, question="how early do i need to get there?",
                   overrides=True)
    assert found is not None and "lead time 15min vs 30min" in found.explanation


def test_a_name_is_no_qualifier_but_a_service_is():
    assert conflicts.qualifiers("Patient FAQ - Aspen Ridge Orthopedics & Imaging", VOCAB) == frozenset()
    assert conflicts.qualifiers("an MRI appointment at Harbor Imaging Center", VOCAB, LEX.type_implies_specialty) == \
        frozenset({"mri", "imaging"})
    assert conflicts.qualifiers("Cardiology Clinic: arrive 20 minutes early", VOCAB) == frozenset({"cardiology"})


def test_naming_everything_a_clinic_offers_narrows_nothing_there_but_an_appointment_type_does():
    """48 hours' notice "to cancel a scan" at a clinic that offers imaging alone is its rule for every
    appointment; "an MRI appointment" at the same kind of clinic is still the MRI's rule."""
    group = cand("S1", "asp-cancel", "Please give us at least 24 hours' notice if you need to cancel.", scope=())
    scan = Candidate("S2", "pid-S2", "asp-foothills", "ver-f", "scheduling_policy",
                     "We need 48 hours' notice to cancel or reschedule a scan.", "Cancelling", ("asp-foothills",),
                     frozenset({"imaging"}))
    question = "how much notice do i have to give if i need to cancel?"
    assert detect([group, scan], "cancellation_rescheduling", VOCAB, question=question, overrides=True) is not None
    mri_only = Candidate("S2", "pid-S2", "acme-harbor", "ver-h", "scheduling_policy",
                         "Patients with an MRI appointment must give 48 hours' notice to cancel.", "Cancelling",
                         ("acme-harbor",), frozenset({"imaging"}))
    assert detect([group, mri_only], "cancellation_rescheduling", VOCAB, implies=LEX.type_implies_specialty,
                  question=question, overrides=True) is None
    unknown = Candidate("S2", "pid-S2", "asp-foothills", "ver-f", "scheduling_policy", scan.text, "Cancelling",
                        ("asp-foothills",))
    assert detect([group, unknown], "cancellation_rescheduling", VOCAB, question=question, overrides=True) is None


@pytest.mark.parametrize("text", ["Please give us two full business days notice to cancel.",
                                  "Cancelling needs 2 clear working days' notice."])
def test_a_day_qualified_twice_is_a_notice_period(text):
    assert rule_quantities(text, "cancellation_rescheduling")["notice period"] == frozenset({"2880min"})
