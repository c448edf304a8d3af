"""A clinic's own passage overrides the tenant-wide answer only when its claim shares a subject with
it (policy_part._clinic_answers): "cashless" shares "cash" with "we take cash" (the Quillon probe,
q36: the group takes cash, the hospital clinic is cashless)."""

from services.orchestrator.core.policy_part import _content_stems


def test_an_override_in_words_shares_its_subject_with_the_rule_it_overrides():
    """The orchestrator's subject check (a clinic's claim must share a content word with the
    answer it would override): "cashless" shares "cash" with "we take cash"."""
    assert _content_stems("The Kids' Clinic is cashless.") & _content_stems("We take EFTPOS, Visa and cash.")


def test_a_sentence_that_says_its_rule_is_the_groups_states_none_of_its_own():
    from services.orchestrator.core.conflicts import says_the_same_as_elsewhere
    for same in ("Reglene for fastende prøver er de samme som ellers.",
                 "The fee amounts themselves are the same as at our other clinic.",
                 "As at our other clinics, there is no fee for a late cancellation or a missed appointment."):
        assert says_the_same_as_elsewhere(same), same
    for own in ("The Riverside front desk does not accept cash.",
                "Parking is the same as the street rate.",
                "Her er det ikke drop-in."):
        assert not says_the_same_as_elsewhere(own), own
