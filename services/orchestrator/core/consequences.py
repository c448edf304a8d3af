"""What the validated policy claims of an answer mean for one proposed change (pure, no grpc).

The orchestrator attaches these consequences to the proposal it asks the scheduler-gateway to
store: a fee that applies to this change, a cited rule that makes the change a staff review task,
a term that applies without either, or - when no supported claim could be established - terms
that are unverified (a staff task, never a guess). The rules and their version are data
(services/orchestrator/data/consequence_rules.yaml); numbers (amounts, notice periods, windows)
are read exactly from the claim text, and only supported, cited claims are read at all.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import yaml

from services.orchestrator.core.conflicts import qualifiers

RULES_FILE = Path(__file__).resolve().parent.parent / "data" / "consequence_rules.yaml"

FEE = "fee"
REVIEW_REQUIRED = "review_required"
POLICY_TERM = "policy_term"
TERMS_UNVERIFIED = "terms_unverified"

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "ten": 10, "twelve": 12,
                 "fifteen": 15, "twenty": 20, "twenty-four": 24, "thirty": 30, "forty-eight": 48, "seventy-two": 72,
                 "en": 1, "ett": 1, "to": 2, "tre": 3, "fire": 4}
_NUMBER = r"(\d+(?:[.,]\d+)?|" + "|".join(sorted(map(re.escape, _NUMBER_WORDS), key=len, reverse=True)) + ")"
# A duration; "working days" / "virkedager" count Monday to Friday only.
_DURATION = re.compile(
    _NUMBER + r"[ -]?(working days?|business days?|virkedag(?:er)?|minutes?|mins?|minutter|hours?|hrs?|timer|"
    r"days?|dager|døgn|weeks?|uker)\b", re.IGNORECASE)
_UNIT_HOURS = {"mi": 1 / 60, "ho": 1.0, "hr": 1.0, "ti": 1.0, "da": 24.0, "dø": 24.0, "we": 168.0, "uk": 168.0}


@dataclasses.dataclass(frozen=True)
class Rules:
    version: str
    kinds: dict[str, tuple[re.Pattern, ...]]
    review: tuple[re.Pattern, ...]
    review_by_negation: tuple[re.Pattern, ...]
    review_negations: tuple[re.Pattern, ...]
    inside_window: tuple[str, ...]
    outside_window: tuple[str, ...]
    money: re.Pattern


def _pattern(entry: str) -> re.Pattern:
    if entry.startswith("re:"):
        return re.compile(entry[3:], re.IGNORECASE)
    return re.compile(rf"(?<!\w){re.escape(entry)}(?!\w)", re.IGNORECASE)


@functools.lru_cache(maxsize=4)
def load_rules(path: Path = RULES_FILE) -> Rules:
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return Rules(
        version=str(raw["version"]),
        kinds={kind: tuple(_pattern(p) for p in patterns) for kind, patterns in raw["kinds"].items()},
        review=tuple(_pattern(p) for p in raw["review"]),
        review_by_negation=tuple(_pattern(p) for p in raw["review_by_negation"]),
        review_negations=tuple(_pattern(p) for p in raw["review_negations"]),
        inside_window=tuple(raw["inside_window"]),
        outside_window=tuple(raw["outside_window"]),
        money=_pattern(raw["money"]),
    )


@dataclasses.dataclass(frozen=True)
class PolicyClaim:
    """A claim of the policy part as shown to the user: supported and cited."""

    text: str
    citations: tuple[Any, ...]  # passed through to the consequence unchanged
    context: str = ""  # the cited passages' titles and headings: qualifiers only, never numbers
    part_id: str = ""


@dataclasses.dataclass(frozen=True)
class Change:
    kind: str  # book | reschedule | cancel
    now: dt.datetime
    # The appointment's start for reschedule and cancel; the slot's for a booking (None: unknown).
    starts_at: dt.datetime | None
    time_zone: str = "UTC"
    appointment_type: str = ""
    specialty: str = ""


@dataclasses.dataclass(frozen=True)
class Consequence:
    kind: str
    text: str
    citations: tuple[Any, ...] = ()
    explanation: str = ""
    part_id: str = ""


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """The router lexicon's appointment types and specialties (phrases per key)."""

    appointment_types: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    specialties: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)


def derive(change: Change, claims: Sequence[PolicyClaim], *, policy_established: bool, unverified_reason: str = "",
           vocabulary: Vocabulary | None = None, rules: Rules | None = None) -> list[Consequence]:
    """The consequences of the change, in claim order. `policy_established` False (the policy part
    abstained, was unavailable, conflicted or is unresolved) gives one TERMS_UNVERIFIED instead."""
    rules = rules or load_rules()
    if not policy_established:
        return [Consequence(TERMS_UNVERIFIED, "The policy terms for this change could not be verified.",
                            explanation=unverified_reason or "no supported policy claim")]
    out: list[Consequence] = []
    for claim in claims:
        if not claim.citations or not _about(change, claim, rules, vocabulary or Vocabulary()):
            continue
        out.append(_consequence(change, claim, rules))
    return out


def _about(change: Change, claim: PolicyClaim, rules: Rules, vocabulary: Vocabulary) -> bool:
    """Whether the claim is about this kind of change and this appointment: a claim naming
    appointment types is about those types only; one naming specialties (and no type) about those."""
    named = {kind for kind, patterns in rules.kinds.items() if any(p.search(claim.text) for p in patterns)}
    if named and change.kind not in named:
        return False
    # The context (title, headings) names what a whole passage is about; the text what a row is.
    for text in (claim.text, claim.context):
        types = qualifiers(text, vocabulary.appointment_types)
        if types:
            if change.appointment_type not in types:
                return False
            continue
        specialties = qualifiers(text, vocabulary.specialties)
        if specialties and change.specialty not in specialties:
            return False
    return True


def _consequence(change: Change, claim: PolicyClaim, rules: Rules) -> Consequence:
    text = " ".join(claim.text.split())
    base = {"text": text, "citations": claim.citations, "part_id": claim.part_id}
    lead = _lead_hours(change)
    if _requires_review(text, rules):
        window = _window(text, rules)
        if window is None or lead is None or _inside(lead, window):
            why = "the cited rule requires a staff review" + (f" ({_describe(window)})" if window else "")
            return Consequence(REVIEW_REQUIRED, explanation=why, **base)
        return Consequence(POLICY_TERM, explanation=f"the review rule does not apply: {_lead_text(lead)}, "
                                                    f"{_describe(window)}", **base)
    amounts = [m.group(0).strip() for m in rules.money.finditer(text)]
    notice = _notice_hours(text, change)
    if amounts and notice is not None and lead is not None:
        if lead < notice:
            return Consequence(FEE, explanation=f"{_lead_text(lead)}; the notice period is {_hours_text(notice)}: "
                                                f"{' / '.join(amounts)} applies", **base)
        return Consequence(POLICY_TERM, explanation=f"no fee: {_lead_text(lead)}, the notice period is "
                                                    f"{_hours_text(notice)}", **base)
    return Consequence(POLICY_TERM, explanation="a policy term for this change", **base)


def _requires_review(text: str, rules: Rules) -> bool:
    if any(p.search(text) for p in rules.review_by_negation):
        return True
    if any(p.search(text) for p in rules.review_negations):
        return False
    return any(p.search(text) for p in rules.review)


def _window(text: str, rules: Rules) -> tuple[str, float] | None:
    """('inside'|'outside', hours) when the rule is limited to changes within / beyond a duration."""
    for side, phrases in (("inside", rules.inside_window), ("outside", rules.outside_window)):
        for phrase in phrases:
            match = re.search(rf"(?<!\w){re.escape(phrase)}\s+(?:the\s+)?(?:last\s+)?{_DURATION.pattern}", text,
                              re.IGNORECASE)
            if match:
                hours = _to_hours(match.group(1), match.group(2), None)
                if hours is not None:
                    return side, hours
    return None


def _inside(lead: float, window: tuple[str, float]) -> bool:
    side, hours = window
    return lead < hours if side == "inside" else lead > hours


def _notice_hours(text: str, change: Change) -> float | None:
    """The longest notice period the claim states (a working-day period measured back from the
    appointment); None when it states none."""
    found = [h for m in _DURATION.finditer(text)
             if (h := _to_hours(m.group(1), m.group(2), change)) is not None and h >= 1]
    return max(found) if found else None


def _to_hours(number: str, unit: str, change: Change | None) -> float | None:
    value = _NUMBER_WORDS.get(number.lower())
    if value is None:
        try:
            value = float(number.replace(",", "."))
        except ValueError:
            return None
    unit = unit.lower()
    if unit.startswith(("working", "business", "virkedag")):
        if change is None or change.starts_at is None:
            return value * 24.0
        return _working_days_hours(int(value), change)
    return value * _UNIT_HOURS.get(unit[:2], 0.0) or None


def _working_days_hours(days: int, change: Change) -> float:
    """Hours between the start of the Nth working day (Mon-Fri) before the appointment day and the
    appointment: "2 working days before a Monday appointment" is the previous Thursday."""
    zone = ZoneInfo(change.time_zone or "UTC")
    start = change.starts_at.astimezone(zone)
    day = start.date()
    counted = 0
    while counted < days:
        day -= dt.timedelta(days=1)
        if day.weekday() < 5:
            counted += 1
    deadline = dt.datetime.combine(day, dt.time(0, 0), tzinfo=zone)
    return (start - deadline).total_seconds() / 3600


def _lead_hours(change: Change) -> float | None:
    if change.starts_at is None:
        return None
    return (change.starts_at - change.now).total_seconds() / 3600


def _hours_text(hours: float) -> str:
    return f"{hours:g} hours" if hours < 72 or hours % 24 else f"{hours / 24:g} days ({hours:g} hours)"


def _lead_text(lead: float) -> str:
    return f"the appointment starts in {lead:.1f} hours"


def _describe(window: tuple[str, float] | None) -> str:
    if window is None:
        return ""
    side, hours = window
    return f"changes {'within' if side == 'inside' else 'more than'} {_hours_text(hours)} of the appointment"
