"""A clinic's own passage overrides the tenant-wide answer only when its claim shares a subject with
it (policy_part._clinic_answers): "cashless" shares "cash" with "we take cash" (the Quillon probe,
q36: the group takes cash, the hospital clinic is cashless)."""

from services.orchestrator.core.policy_part import _content_stems


def test_an_override_in_words_shares_its_subject_with_the_rule_it_overrides():
    """The orchestrator's subject check (a clinic's claim must share a content word with the
    answer it would override): "cashless" shares "cash" with "we take cash"."""
    assert _content_stems("The Kids' Clinic is cashless.") & _content_stems("We take EFTPOS, Visa and cash.")
