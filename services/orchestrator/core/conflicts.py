"""Conflict detection among the top hits of a policy part (DESIGN.md §3: two current approved
versions from the same authority that disagree are shown and routed to the policy owner; the
generator is never asked to choose). The rule, kept simple and explainable:

Two of the top N hits conflict when
  1. they come from different documents of the same source class (the same authority),
  2. both state the asked rule: a topic word of the part's intent AND a quantity (a duration,
     an amount of money, or a clock time),
  3. they are about the same thing: the same set of qualifiers (specialty / appointment-type
     words) and overlapping location scopes (empty scope = every location), and
  4. they disagree: for a quantity kind both state, the values differ.
Pure: candidates are plain data."""

from __future__ import annotations

import dataclasses
import itertools
import re

TOPICS = {
    "arrival_preparation": re.compile(r"\b(arriv\w*|early|check[- ]?in|before (your|the) (appointment|visit|scan))\b"),
    "cancellation_rescheduling": re.compile(r"\b(cancel\w*|reschedul\w*|notice|no[- ]show|late fee)\b"),
    "availability": re.compile(r"\b(book\w*|walk[- ]ins?|same[- ]day)\b"),
}
_UNIT_MINUTES = {"mi": 1, "ho": 60, "hr": 60, "da": 1440, "we": 10080}
_DURATION = re.compile(r"\b(\d+(?:\.\d+)?)[ -]?(minutes?|mins?|hours?|hrs?|days?|weeks?)\b")
_MONEY = re.compile(r"(?:\$|usd |nok |nzd |kr\.? ?)(\d+(?:\.\d\d)?)|\b(\d+(?:\.\d\d)?) ?(?:usd|nok|nzd|kr|dollars)\b")
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))? ?(am|pm|a\.m\.|p\.m\.)|\b(\d{1,2}):(\d{2})\b")
_WORDS = {"fifteen": "15", "thirty": "30", "forty-five": "45", "sixty": "60", "ten": "10", "twenty": "20",
          "twenty-four": "24", "forty-eight": "48", "seventy-two": "72", "five": "5"}


@dataclasses.dataclass(frozen=True)
class Candidate:
    label: str
    passage_id: str
    document_id: str
    version_id: str
    source_class: str
    text: str
    location_scope: tuple[str, ...] | None = None  # None: not known


@dataclasses.dataclass(frozen=True)
class Conflict:
    first: Candidate
    second: Candidate
    explanation: str


def _numbers_in_words(text: str) -> str:
    for word, digits in _WORDS.items():
        text = re.sub(rf"\b{word}\b", digits, text)
    return text


def quantities(text: str) -> dict[str, frozenset[str]]:
    """Quantities by kind, normalized: durations in minutes, money, clock times as HH:MM."""
    text = _numbers_in_words(text.lower())
    durations = frozenset(f"{float(n) * _UNIT_MINUTES[unit[:2]]:g}min" for n, unit in _DURATION.findall(text))
    money = frozenset(a or b for a, b in _MONEY.findall(text))
    clocks = set()
    for h12, m12, ampm, h24, m24 in _CLOCK.findall(text):
        if ampm:
            hour = int(h12) % 12 + (12 if ampm.startswith("p") else 0)
            clocks.add(f"{hour:02d}:{int(m12 or 0):02d}")
        else:
            clocks.add(f"{int(h24):02d}:{int(m24):02d}")
    return {k: v for k, v in (("duration", durations), ("money", money), ("clock", frozenset(clocks))) if v}


def qualifiers(text: str, vocabulary: dict[str, tuple[str, ...]]) -> frozenset[str]:
    """Keys of the vocabulary (specialties, appointment types) that the text names."""
    lowered = text.lower()
    return frozenset(
        key for key, phrases in vocabulary.items()
        if any(re.search(rf"(?<![\w-]){re.escape(p)}(?![\w-])", lowered) for p in phrases)
    )


def _scopes_overlap(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> bool:
    if a is None or b is None or not a or not b:
        return True
    return bool(set(a) & set(b))


def detect(candidates: list[Candidate], intent: str, vocabulary: dict[str, tuple[str, ...]],
           top_n: int = 4) -> Conflict | None:
    """The first conflicting pair among the top N candidates (rank order), or None."""
    topic = TOPICS.get(intent)
    if topic is None:
        return None
    stating = []
    for cand in candidates[:top_n]:
        if topic.search(cand.text.lower()):
            found = quantities(cand.text)
            if found:
                stating.append((cand, found, qualifiers(cand.text, vocabulary)))
    for (a, qa, wa), (b, qb, wb) in itertools.combinations(stating, 2):
        if a.document_id == b.document_id or a.source_class != b.source_class:
            continue
        if wa != wb or not _scopes_overlap(a.location_scope, b.location_scope):
            continue
        for kind in sorted(set(qa) & set(qb)):
            if qa[kind] != qb[kind]:
                about = ", ".join(sorted(wa)) or "no qualifier"
                return Conflict(a, b, (
                    f"{a.label} ({a.document_id}) and {b.label} ({b.document_id}): same source class "
                    f"{a.source_class}, both state the {intent} rule ({about}), {kind} "
                    f"{'/'.join(sorted(qa[kind]))} vs {'/'.join(sorted(qb[kind]))}"))
    return None
