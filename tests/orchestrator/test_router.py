"""The routing stage with the lexicon router: intents, entities, parts and the one focused
clarification question (rendered from the English wording file)."""

from __future__ import annotations

import datetime as dt

import pytest

from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.model import PartKind
from services.orchestrator.core.router import POLICY_INTENTS, LexiconRouter, load_lexicon
from services.orchestrator.core.routing import Question, clarification_text
from services.orchestrator.core.scope import RuleScopeGate
from services.orchestrator.core.wording import load_catalog

NY = "America/New_York"
ACME = [
    LocationInfo("acme-northside", "Northside Family Clinic", "", NY, ("cardiology", "family_medicine")),
    LocationInfo("acme-northgate", "Northgate Family Clinic", "", NY, ("cardiology", "dermatology", "family_medicine")),
    LocationInfo("acme-harbor", "Harbor Imaging Center", "", NY, ("imaging",)),
]
CEDAR = [LocationInfo("cedar-main", "Cedar Main Street Clinic", "", "Pacific/Auckland", ("family_medicine", "imaging"))]
AS_OF = dt.datetime(2026, 11, 30, 13, 0, tzinfo=dt.UTC)


def route(question, as_of, locations, *, permitted_location_ids=(), location_hint=""):
    """The routing stage's decisions without the scheduler call: the gate once, the permitted
    locations filtered once, then the lexicon router."""
    asked = Question.of(question, as_of, location_hint)
    decision = RuleScopeGate().decide(asked.clauses)
    permitted = None if locations is None else [
        loc for loc in locations if not permitted_location_ids or loc.location_id in permitted_location_ids]
    return LexiconRouter().route(asked, decision, permitted)


def asked(part) -> str:
    return clarification_text(part.clarification, load_catalog().for_locale("en"))


def kinds(result):
    return [p.kind for p in result.parts]


def entity(result, kind):
    return next((e.value for e in result.entities if e.kind == kind), None)


def test_two_part_question_yields_a_slot_part_and_a_policy_part():
    result = route("Can I book cardiology at Northside tomorrow, and when should I arrive?", AS_OF, ACME)
    assert kinds(result) == ["LIVE_SLOT", "ARRIVAL_PREPARATION"]
    slot, policy = result.parts
    assert not slot.missing and not slot.clarification
    assert slot.range_start == dt.datetime(2026, 12, 1, 5, tzinfo=dt.UTC)
    assert slot.range_end == dt.datetime(2026, 12, 2, 5, tzinfo=dt.UTC)
    assert entity(result, "specialty") == "cardiology"
    assert entity(result, "location") == "acme-northside"
    assert "arrive" in policy.query and "cardiology" in policy.query
    assert result.version == load_lexicon().version


def test_heart_doctor_is_cardiology_and_mri_implies_imaging_at_the_only_clinic_offering_it():
    assert entity(route("Can I see a heart doctor at Northgate next Monday?", AS_OF, ACME), "specialty") == "cardiology"
    result = route("Is there an MRI slot on the 3rd?", AS_OF, ACME)
    assert entity(result, "appointment_type") == "mri"
    assert entity(result, "specialty") == "imaging"
    assert entity(result, "location") == "acme-harbor"
    assert entity(result, "date") == "2026-12-03"


def test_availability_without_specialty_asks_exactly_one_question():
    result = route("Any openings this Friday?", AS_OF, ACME)
    part, reading = result.parts
    assert part.missing == ["specialty"]
    assert asked(part).startswith("Which specialty") and asked(part).count("?") == 1
    # The same words may ask what a policy says ("Do I need to book or can I just turn up?"): a
    # policy part that asks nothing and is shown only if it answers.
    assert reading.kind == PartKind.OTHER_POLICY and reading.only_if_answered
    assert reading.clarification is None and reading.search_intents == POLICY_INTENTS


def test_availability_without_location_when_several_offer_it_asks_which_clinic():
    result = route("Can I book cardiology tomorrow?", AS_OF, ACME)
    (part,) = result.parts
    assert part.missing == ["location"]
    assert "Northside Family Clinic" in asked(part) and "Northgate Family Clinic" in asked(part)
    assert "Harbor" not in asked(part)  # it does not offer cardiology


def test_ambiguous_clinic_asks_which_clinic():
    result = route("Can I book cardiology at the family clinic tomorrow?", AS_OF, ACME)
    (part,) = result.parts
    assert part.missing == ["location"]
    assert asked(part) == "Which clinic do you mean: Northgate Family Clinic or Northside Family Clinic?"


def test_single_location_tenant_needs_no_location_and_uses_its_zone():
    result = route("Can I book family medicine tomorrow?", AS_OF, CEDAR)
    (part,) = result.parts
    assert not part.missing
    # Already Tuesday in Auckland at 13:00 UTC Monday: tomorrow is Wednesday 2 December local.
    assert part.range_start == dt.datetime(2026, 12, 1, 11, tzinfo=dt.UTC)


def test_permitted_locations_limit_the_candidates():
    result = route("Can I book cardiology tomorrow?", AS_OF, ACME, permitted_location_ids=("acme-northgate",))
    assert entity(result, "location") == "acme-northgate"
    assert not result.parts[0].missing


def test_mixed_question_routes_the_clinical_clause_to_the_boundary():
    result = route("Can I book cardiology at Northgate tomorrow and should I stop my blood thinner?", AS_OF, ACME)
    assert kinds(result) == ["LIVE_SLOT", "CLINICAL_BOUNDARY"]
    assert result.parts[1].boundary.next_action == "CONTACT_CLINICIAN"
    assert all("thinner" not in c for c in result.parts[0].clauses)
    assert not result.in_scope


def test_emergency_is_the_only_part():
    result = route("I have chest pain, can I book cardiology today?", AS_OF, ACME)
    assert kinds(result) == ["CLINICAL_BOUNDARY"]
    assert result.parts[0].boundary.next_action == "CONTACT_EMERGENCY_SERVICES"


@pytest.mark.parametrize(("question", "kind"), [
    ("How do I cancel my appointment?", "CANCELLATION_RESCHEDULING"),
    ("Can I reschedule my MRI?", "CANCELLATION_RESCHEDULING"),
    ("What should I bring to my first visit?", "ARRIVAL_PREPARATION"),
    ("Do I need to fast before my CT?", "ARRIVAL_PREPARATION"),
    ("Does Dr. Lindqvist speak Spanish?", "PROVIDER_DESCRIPTION"),
    ("Where do I park?", "OTHER_POLICY"),
    ("What are your opening hours?", "OTHER_POLICY"),
    ("Is Dr. Avery available on Friday?", "LIVE_SLOT"),
    ("I need to see a dermatologist next week", "LIVE_SLOT"),
])
def test_policy_intents(question, kind):
    assert kinds(route(question, AS_OF, ACME)) == [kind]


def test_locations_unknown_neither_resolves_nor_asks_for_a_clinic():
    result = route("Can I book cardiology tomorrow?", AS_OF, None)
    (part,) = result.parts
    assert part.missing == [] and not result.locations_known


def test_route_is_deterministic():
    question = "Can I book cardiology tomorrow, and when should I arrive?"
    first, second = route(question, AS_OF, ACME), route(question, AS_OF, ACME)
    assert first.parts == second.parts and first.entities == second.entities


def test_a_clinic_that_does_not_offer_the_specialty_gets_one_question_with_the_alternatives():
    result = route("Can I book dermatology at Northside tomorrow?", AS_OF, ACME)
    (part,) = result.parts
    assert part.missing == ["location"]
    assert asked(part) == "Northside Family Clinic does not offer dermatology. " \
                          "Would you like Northgate Family Clinic instead?"


def test_a_specialty_the_tenant_does_not_offer_asks_which_specialty():
    result = route("Can I book physiotherapy tomorrow?", AS_OF, ACME)
    part, reading = result.parts
    assert part.missing == ["specialty"]
    assert asked(part).startswith("Physiotherapy is not offered here. Which specialty")
    # Nothing the clinics offer is named: the words may ask what a policy says ("does my daughter need
    # a letter from her gp or can i just book her in?"), shown only if a confident answer is found.
    assert reading.only_if_answered and reading.clarification is None


def test_context_of_a_clinical_question_is_not_a_part_of_its_own():
    result = route("I have a cardiology appointment tomorrow. Should I stop my blood thinner before it?", AS_OF, ACME)
    assert kinds(result) == ["CLINICAL_BOUNDARY"]


def test_wording_not_about_the_appointment_does_not_make_an_intent():
    import datetime as _dt

    when = _dt.datetime(2026, 12, 1, 9, tzinfo=_dt.UTC)
    late = route("My shuttle was cancelled so I will be late. Will I still be seen?", when, None)
    assert [p.intent for p in late.parts] == ["arrival_preparation"]
    assert any("is not about the appointment" in e for e in late.explanations)
    both = route("My bus was cancelled, can I cancel my appointment?", when, None)
    assert [p.intent for p in both.parts] == ["cancellation_rescheduling"]


def test_a_question_with_no_intent_searches_the_union_of_policy_intents():
    import datetime as _dt

    when = _dt.datetime(2026, 12, 1, 9, tzinfo=_dt.UTC)
    other = route("Is parking free at the clinic?", when, None)
    assert [p.intent for p in other.parts] == ["other"]
    assert set(other.parts[0].search_intents) == {"other", "arrival_preparation", "cancellation_rescheduling",
                                                  "provider_information"}
    assert any(e.startswith("search scope:") for e in other.explanations)
    arrival = route("What happens if I'm running 15 minutes late?", when, None)
    assert [(p.intent, p.search_intents) for p in arrival.parts] == [("arrival_preparation", ("arrival_preparation",))]
    nb = route("Barnet mitt er sykt. Må jeg betale gebyr hvis jeg avbestiller i dag?", when, None)
    assert [p.intent for p in nb.parts] == ["cancellation_rescheduling"]
    assert nb.parts[0].clauses[0] == "Barnet mitt er sykt."  # the clause without an intent is context


# A tenant that lists its specialties under its own IDs (the Aspen Ridge and Saltmarsh probes).
OWN_NAMES = [
    LocationInfo("own-north", "North Clinic", "", NY, ("physical_therapy", "orthopedics", "general_practice")),
    LocationInfo("own-south", "South Clinic", "", NY, ("physical_therapy", "sports_medicine")),
]


@pytest.mark.parametrize("question,specialty", [
    ("Can I book physical therapy at North Clinic next week?", "physical_therapy"),  # the lexicon's physiotherapy
    ("any physio slots at the south clinic on friday?", "physical_therapy"),
    ("Can I see a GP at North Clinic tomorrow?", "general_practice"),  # the lexicon's family_medicine
    ("can i book orthopedics at north clinic on friday?", "orthopedics"),  # the tenant's own name
    ("I need to book a sports medicine appointment next week", "sports_medicine"),
])
def test_a_specialty_is_read_in_the_tenants_own_ids(question, specialty):
    """Before, the lexicon's fixed ID went to the scheduler: "Physiotherapy is not offered here.
    Which specialty would you like to book (..., physical therapy, ...)?"."""
    result = route(question, AS_OF, OWN_NAMES)
    assert result.specialty == specialty
    assert entity(result, "specialty") == specialty
    slot = next(p for p in result.parts if p.kind == PartKind.LIVE_SLOT)
    assert slot.clarification is None or slot.clarification.kind != "specialty_not_offered"


def test_the_lexicons_id_stays_when_the_tenant_lists_it_and_two_own_names_decide_nothing():
    assert route("Can I book cardiology at Northside tomorrow?", AS_OF, ACME).specialty == "cardiology"
    result = route("orthopedics or sports medicine, whichever is first next week", AS_OF, OWN_NAMES)
    assert result.specialty == ""


def test_the_qualifiers_asked_are_in_the_tenants_and_the_lexicons_ids():
    """Passages are read with the lexicon's vocabulary ("GP" is family_medicine there): a question
    for the tenant's general_practice still asked for family_medicine (the Saltmarsh probe, q25)."""
    from services.orchestrator.core.policy_part import _asked_qualifiers
    result = route("Can I see a GP at North Clinic tomorrow?", AS_OF, OWN_NAMES)
    assert result.lexicon_specialty == "family_medicine"
    assert _asked_qualifiers(result) >= {"general_practice", "family_medicine"}


def test_a_reply_naming_the_tenants_own_specialty_is_bound():
    router = LexiconRouter()
    assert router.bind_reply("specialty", "orthopedics please", OWN_NAMES) == "orthopedics"
    assert router.bind_reply("specialty", "physio", OWN_NAMES) == "physio"  # the lexicon's word, read on re-routing
    assert router.bind_reply("specialty", "whatever is first", OWN_NAMES) == ""


OWN_TYPES = [
    LocationInfo("own-north", "North Clinic", "", NY, ("orthopedics", "physical_therapy", "imaging"),
                 ("ortho_new_patient", "ortho_follow_up", "pt_new_patient", "mri_scan")),
]


@pytest.mark.parametrize("question,appointment_type", [
    ("can i book an MRI at north clinic next week?", "mri_scan"),
    ("can i book a new patient orthopedics visit at north clinic next week?", "ortho_new_patient"),
    ("can i book a new patient physical therapy visit next week?", "pt_new_patient"),
])
def test_an_appointment_type_is_read_in_the_tenants_own_ids(question, appointment_type):
    """Asked for the lexicon's "mri" or "new_patient", the scheduler had no appointments of that type."""
    result = route(question, AS_OF, OWN_TYPES)
    assert result.appointment_type == appointment_type


def test_a_type_several_tenant_types_match_and_the_specialty_does_not_tell_apart_is_left():
    result = route("can i book a new patient visit next week?", AS_OF, OWN_TYPES)
    assert result.appointment_type == "new_patient"
