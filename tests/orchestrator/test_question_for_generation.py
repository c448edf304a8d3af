"""The question the generator reads (policy_part.question_for_generation): the name of the clinic
the route resolved is left out when no offered passage names that clinic (retrieval kept only that
clinic's and the tenant-wide passages, so the name tells none of them apart, and a generator that
refuses evidence about "somewhere else" would refuse every tenant-wide rule); it stays when a
passage names it (a row per clinic), and a place the route did not resolve always stays."""

from __future__ import annotations

from types import SimpleNamespace

from services.orchestrator.core import model as m
from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.policy_part import MAX_PLACE_NAMES, question_for_generation
from services.orchestrator.core.routing import Entity, PartPlan

QUARRY = LocationInfo("lar-quarry", "Larchmont Quarry Street Clinic", aliases=("Quarry Street",))
BAYSIDE = LocationInfo("lar-bayside", "Larchmont Bayside Clinic", aliases=("Bayside", "Harbour Road", "Quarry Street"))


def offered(*texts: str) -> tuple[m.LabelledPassage, ...]:
    return tuple(m.LabelledPassage(f"S{i}", m.Passage(m.PassageIdentity(f"p{i}"), text, "Visiting > When to arrive",
                                                       "Coming to see us"))
                 for i, text in enumerate(texts, start=1))


def plan(question: str) -> PartPlan:
    return PartPlan("p1", m.Intent.ARRIVAL_PREPARATION, m.PartKind.ARRIVAL_PREPARATION, [question])


def route(location=QUARRY, surface="quarry street"):
    entities = [Entity("location", surface, location.location_id, 1.0, "exact")] if location else []
    return SimpleNamespace(location=location, entities=entities, clinic_choices=(QUARRY, BAYSIDE))


def test_a_resolved_clinic_no_passage_names_is_left_out():
    asked = question_for_generation(plan("How early should I get to the Quarry Street clinic?"), route(),
                                    offered("Aim to get to reception about 15 minutes before your appointment time."))
    assert asked.text == "How early should I get to the clinic?"
    # The clinic's own names still go over: a passage naming it by any of them is its own.
    assert asked.place_names == ("Larchmont Quarry Street Clinic", "Quarry Street")


def test_a_clinic_a_passage_names_stays_and_is_handed_over_as_a_place_name():
    question = "Is Quarry Street open on Sundays?"
    asked = question_for_generation(plan(question), route(), offered(
        "Quarry Street: Monday to Friday. Bayside: every day."))
    assert asked.text == question
    # The name picks the row, but it is no topic: the generator does not count it as covered. The
    # caller's spelling goes first, then the tenant's names of the clinic.
    assert asked.place_names == ("quarry street", "Larchmont Quarry Street Clinic", "Quarry Street")


def test_a_place_the_route_did_not_resolve_stays():
    question = "Do you have a clinic in Oslo?"
    asked = question_for_generation(plan(question), route(location=None), offered("Parking is free."))
    assert asked == (question, (), ())


def test_a_clinic_with_many_aliases_stays_within_the_generators_limit():
    many = LocationInfo("lar-quarry", "Larchmont Quarry Street Clinic", aliases=tuple(f"Alias {i}" for i in range(150)))
    asked = question_for_generation(plan("Is Quarry Street open on Sundays?"), route(many), offered("Quarry Street: daily."))
    assert len(asked.place_names) == MAX_PLACE_NAMES
    assert asked.place_names[0] == "quarry street"  # the caller's spelling is never the one cut


def test_the_callers_other_clinics_go_over_by_their_names_without_the_resolved_ones():
    """GenerateRequest.other_place_names: a paragraph about several clinics holds sentences about the
    others; a name the resolved clinic also goes by ("Quarry Street") is not another's."""
    asked = question_for_generation(plan("How early should I get to the Quarry Street clinic?"), route(),
                                    offered("Aim to get to reception about 15 minutes before your appointment time."))
    assert asked.other_place_names == ("Larchmont Bayside Clinic", "Bayside", "Harbour Road")
    assert question_for_generation(plan("Do you have a clinic in Oslo?"), route(location=None),
                                   offered("Parking is free.")).other_place_names == ()


def test_a_clinic_is_named_by_a_name_with_a_word_of_its_own_written_whole():
    oakfield = LocationInfo("jun-oakfield", "Juniper Oakfield Clinic", aliases=("Oakfield", "the shopping centre clinic"))
    assert oakfield.named_in("At the Oakfield clinic you can use the car park, which is free for the first 3 hours.")
    assert not oakfield.named_in("Both clinics are wheelchair accessible.")  # only generic words
    assert not oakfield.named_in("The shopping centre is closed on Sundays.")  # a part of a name
