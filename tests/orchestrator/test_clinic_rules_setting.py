"""CITETRACE_ORCHESTRATOR_CLINIC_RULES_ASKED: how many clinics' own passages a no-clinic answer is
also asked of (policy_part._clinic_answers); 0 turns the check off, a negative count is refused."""

from __future__ import annotations

import pytest
from citetrace.kit.settings import load_settings

from services.orchestrator.core.policy_part import ClinicRules, PolicyPart, PolicySettings
from services.orchestrator.settings import PREFIX, Settings


def test_the_setting_is_read_and_checked():
    assert load_settings(Settings, PREFIX, {}).clinic_rules_asked == 3
    assert load_settings(Settings, PREFIX, {f"{PREFIX}CLINIC_RULES_ASKED": "0"}).clinic_rules_asked == 0
    with pytest.raises(ValueError, match="clinic_rules_asked"):
        load_settings(Settings, PREFIX, {f"{PREFIX}CLINIC_RULES_ASKED": "-1"})


class NoAnswerer:
    def answer(self, *args, **kwargs):
        raise AssertionError("the clinics' passages were asked although the check is off")


def test_zero_asks_no_clinic_passage():
    part = PolicyPart(retrieval=None, answerer=NoAnswerer(), lexicon=None, settings=PolicySettings(clinic_rules_asked=0))
    assert part._clinic_answers(plan=None, ctx=None, aside=ClinicRules(hits=(object(),)), answer=["x"]) == ""


def test_the_search_depth_for_clinic_rules_is_read_and_checked():
    assert load_settings(Settings, PREFIX, {}).clinic_rules_search_k == 16
    assert load_settings(Settings, PREFIX, {f"{PREFIX}CLINIC_RULES_SEARCH_K": "24"}).clinic_rules_search_k == 24
    with pytest.raises(ValueError, match="clinic_rules_search_k"):
        load_settings(Settings, PREFIX, {f"{PREFIX}CLINIC_RULES_SEARCH_K": "0"})
