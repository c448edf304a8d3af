"""Clinic/location matching by fuzzy similarity that does not confuse nearly identical names
("Northside Family Clinic" vs "Northgate Family Clinic"): each location's names are reduced to
their distinctive words (generic words such as "family", "clinic" removed), compared with windows
of the question, and a match is accepted only with a margin over the runner-up. A close call, or a
mention of only the shared generic part ("the family clinic"), is ambiguous: the caller is asked.
Pure: the locations are passed in (from scheduler-gateway ListLocations)."""

from __future__ import annotations

import dataclasses
import re
from difflib import SequenceMatcher

GENERIC_WORDS = frozenset({
    "clinic", "clinics", "family", "center", "centre", "medical", "health", "healthcare", "the", "of",
    "hospital", "office", "practice", "klinikk", "legesenter", "senter", "synthetic",
})
ACCEPT = 0.86  # best score needed to resolve
MARGIN = 0.12  # best must beat the runner-up by this much
MENTION = 0.75  # below this a location is not considered mentioned at all

_WORD = re.compile(r"[a-z0-9æøåéü]+")


@dataclasses.dataclass(frozen=True)
class LocationInfo:
    location_id: str
    name: str
    clinic_name: str = ""
    time_zone: str = "UTC"
    specialties: tuple[str, ...] = ()
    appointment_types: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()

    @property
    def display_name(self) -> str:
        return self.name or self.clinic_name or self.location_id


@dataclasses.dataclass(frozen=True)
class LocationMatch:
    status: str  # resolved | ambiguous | none
    location: LocationInfo | None = None
    candidates: tuple[LocationInfo, ...] = ()
    score: float = 0.0
    surface: str = ""
    explanation: str = ""


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _distinctive(name: str) -> list[str]:
    return [w for w in words(name) if w not in GENERIC_WORDS]


def _names(loc: LocationInfo) -> list[str]:
    local_id = re.split(r"[-_]", loc.location_id, maxsplit=1)[-1]  # "acme-northside" -> "northside"
    return [n for n in (loc.name, loc.clinic_name, *loc.aliases, local_id.replace("-", " ").replace("_", " ")) if n]


def _variants(loc: LocationInfo, taken: frozenset[str], exclude: frozenset[str]) -> list[tuple[str, list[str]]]:
    """(label, distinctive words) for each name of a location, plus each distinctive word of 5+
    letters that no other location uses and that is not domain vocabulary (e.g. "harbor")."""
    out: list[tuple[str, list[str]]] = []
    for name in _names(loc):
        toks = _distinctive(name)
        if toks and (name, toks) not in out:
            out.append((name, toks))
        if len(toks) > 1:
            for tok in toks:
                if len(tok) >= 5 and tok not in taken and tok not in exclude and (tok, [tok]) not in out:
                    out.append((tok, [tok]))
    return out


def _score_variant(q_words: list[str], target: list[str]) -> tuple[float, str]:
    """Best similarity of the variant's distinctive words (joined without spaces) to any window of
    the question of n-1..n+1 words (also joined without spaces: "north side" ~ "northside")."""
    joined = "".join(target)
    n = len(target)
    best, surface = 0.0, ""
    # One matcher per variant: the target's index (seq2) is built once, each window is seq1; a
    # window whose cheap upper bound cannot beat the best so far is not scored (same result).
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(joined)
    for size in {max(1, n - 1), n, n + 1}:
        for i in range(0, max(0, len(q_words) - size) + 1):
            window = q_words[i:i + size]
            candidate = "".join(window)
            if abs(len(candidate) - len(joined)) > max(3, len(joined) // 2):
                continue
            matcher.set_seq1(candidate)
            if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
                continue
            ratio = matcher.ratio()
            if len(joined) < 5 and ratio < 1.0:  # short names ("main") must be written exactly
                continue
            if ratio > best:
                best, surface = ratio, " ".join(window)
    return best, surface


def score(question: str, loc: LocationInfo, others: list[LocationInfo] = (),
          exclude: frozenset[str] = frozenset()) -> tuple[float, str, str]:
    """(score, matched surface, variant name) of the best variant of a location."""
    q_words = words(question)
    taken = frozenset(w for other in others if other.location_id != loc.location_id
                      for name in _names(other) for w in _distinctive(name))
    best = (0.0, "", "")
    for label, toks in _variants(loc, taken, exclude):
        value, surface = _score_variant(q_words, toks)
        if value > best[0]:
            best = (value, surface, label)
    return best


def _generic_mentions(question: str, locations: list[LocationInfo]) -> tuple[str, list[LocationInfo]]:
    """A shared generic tail ("family clinic") named in the question and the locations having it."""
    text = " ".join(words(question))
    tails: dict[str, list[LocationInfo]] = {}
    for loc in locations:
        toks = words(loc.name)
        generic = [w for w in toks if w in GENERIC_WORDS and w != "the"]
        if len(generic) >= 2:
            tails.setdefault(" ".join(generic), []).append(loc)
    for tail, locs in sorted(tails.items(), key=lambda kv: -len(kv[0])):
        if len(locs) > 1 and re.search(rf"\b{re.escape(tail)}\b", text):
            return tail, locs
    return "", []


def match(question: str, locations: list[LocationInfo], exclude: frozenset[str] = frozenset()) -> LocationMatch:
    """Resolves the clinic named in a question, or reports ambiguity, or none. `exclude`: domain
    words (specialties, appointment types) that never identify a clinic on their own."""
    if not locations:
        return LocationMatch("none", explanation="no locations known")
    ranked = sorted(
        ((score(question, loc, locations, exclude), loc) for loc in locations), key=lambda item: (-item[0][0], item[1].location_id)
    )
    (best, surface, label), top = ranked[0]
    runner_up = ranked[1][0][0] if len(ranked) > 1 else 0.0
    runner_loc = ranked[1][1] if len(ranked) > 1 else None
    detail = (f"fuzzy match {best:.2f} to '{label}'" +
              (f", runner-up {runner_loc.location_id} {runner_up:.2f}" if runner_loc else ""))
    if best >= ACCEPT and best - runner_up >= MARGIN:
        return LocationMatch("resolved", top, (top,), best, surface, detail)
    if best >= MENTION:
        close = tuple(loc for (value, _, _), loc in ranked if value >= MENTION and best - value < MARGIN)
        if len(close) > 1 or best < ACCEPT:
            close = close if len(close) > 1 else (top,)
            return LocationMatch("ambiguous", None, close, best, surface,
                                 f"{detail}: below the acceptance {ACCEPT} or within the margin {MARGIN}")
    tail, locs = _generic_mentions(question, locations)
    if locs:
        return LocationMatch("ambiguous", None, tuple(locs), 0.0, tail,
                             f"'{tail}' names {len(locs)} locations")
    return LocationMatch("none", explanation=f"no location named ({detail})")
