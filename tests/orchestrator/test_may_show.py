"""grounding.may_show: which claims of an attempt may be shown. The claims after an answer's lead were
chosen to qualify it; when the lead's source may not state it (AUTHORITY_MISMATCH), they are not shown
alone (the Tōtara probe's q03: "This gives us time to confirm your address ..." for "how early do I need
to arrive?"). A lead withheld as unsupported leaves the supported claims after it distinguishable."""

from __future__ import annotations

from services.orchestrator.core import model as m
from services.orchestrator.core.grounding import may_show

GIVEN = (m.LabelledPassage("S1", m.Passage(m.PassageIdentity("p1"), "Please arrive 10 minutes early. This gives us time.")),)
LEAD = m.Claim("c1", "Please arrive 10 minutes early.", ("S1",), m.ClaimType.ARRIVAL_RULE)
REASON = m.Claim("c2", "This gives us time.", ("S1",), m.ClaimType.GENERAL_POLICY)
SUPPORTED = m.ClaimValidation("c2", support=m.Support.SUPPORTED, citations=(m.Citation("S1", "p1"),))


def test_the_claims_after_a_lead_its_source_may_not_state_are_not_shown_alone():
    refused = m.ClaimValidation("c1", findings=(m.Finding(m.FailureReason.AUTHORITY_MISMATCH),), withheld=True,
                                support=m.Support.SUPPORTED, citations=(m.Citation("S1", "p1"),))
    assert may_show((LEAD, REASON), {"c1": refused, "c2": SUPPORTED}, GIVEN) == frozenset()


def test_a_lead_withheld_as_unsupported_leaves_the_supported_claims_after_it():
    unsupported = m.ClaimValidation("c1", support=m.Support.UNSUPPORTED, citations=(m.Citation("S1", "p1"),))
    assert may_show((LEAD, REASON), {"c1": unsupported, "c2": SUPPORTED}, GIVEN) == frozenset({"c2"})


def test_a_follower_its_source_may_not_state_leaves_the_lead():
    shown = m.ClaimValidation("c1", support=m.Support.SUPPORTED, citations=(m.Citation("S1", "p1"),))
    refused = m.ClaimValidation("c2", findings=(m.Finding(m.FailureReason.AUTHORITY_MISMATCH),), withheld=True)
    assert may_show((LEAD, REASON), {"c1": shown, "c2": refused}, GIVEN) == frozenset({"c1"})
