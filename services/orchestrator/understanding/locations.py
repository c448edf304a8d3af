"""Which clinic a question is about, in a way that cannot mix clinics (issue 14). Pure.

Matches are found at four levels, and a higher level always wins over a lower one: the candidates
are the locations matched at the highest level reached, never a mix of levels.
  1. exact: a location's name or alias, word for word (case and punctuation aside);
  2. canonical: the same after spelling variants are folded ("St." = "Saint", "Mt" = "Mount",
     "North Side" = "Northside", accents and æ/ø/å);
  3. word: a distinctive word of the name (5+ letters, not a generic word like "clinic", not a
     specialty or appointment word) written exactly ("harbor" for "Harbor Imaging Center");
  4. fuzzy: the distinctive words within a similarity of ACCEPT of a window of the question, and
     ahead of every other location by MARGIN ("Lakeveiw" for "Lakeview", unless "Lakeview" and
     "Lakeviev" are both locations: then it is ambiguous).
Within a level, a match covered by a longer match of another location is dropped ("Lakeview
Imaging Center" is not also a mention of "Lakeview"). One candidate: resolved. Several: the
request's explicit location_id resolves the ambiguity when it is one of them, else the question is
ambiguous and the caller asks one clarification, naming exactly those candidates. A clinic named in
the text wins over a different location_id (the route says so). Nothing named: the location_id,
else the only permitted location, else none."""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from collections.abc import Iterable
from difflib import SequenceMatcher

from citetrace.idf import shipped as shipped_idf
from citetrace.textnorm import stem

from services.orchestrator.core.clinics import GENERIC_WORDS, LocationInfo

ACCEPT = 0.86
# A word of a name this common (the IDF of its stem below this) names a place only with a place
# word beside it: "Kids' Clinic" is not named by "my other two kids", but by "at kids" or "the kids
# clinic"; "Harbor" by "at harbor". Rare words ("Northgate", "Redgum") name it alone.
COMMON_IDF = 5.0
_PLACE_BEFORE = frozenset({"at", "in", "to", "from", "near", "outside", "into", "towards", "via"})
_PLACE_AFTER = GENERIC_WORDS | {"one", "site", "branch", "location", "surgery", "centre", "center", "st", "street",
                                "road", "rd"}
MARGIN = 0.08
MIN_WORD = 5
LEVELS = ("exact", "canonical", "word", "fuzzy")

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CANONICAL_WORDS = {"st": "saint", "ste": "sainte", "mt": "mount", "ft": "fort", "n": "north", "s": "south",
                    "e": "east", "w": "west", "ctr": "center", "centre": "center"}
_LETTERS = str.maketrans({"æ": "ae", "ø": "o", "å": "a", "ä": "a", "ö": "o", "ü": "u", "ß": "ss"})


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _fold_word(word: str) -> str:
    word = word.translate(_LETTERS)
    word = "".join(ch for ch in unicodedata.normalize("NFKD", word) if not unicodedata.combining(ch))
    return _CANONICAL_WORDS.get(word, word)


@dataclasses.dataclass(frozen=True)
class Mention:
    location: LocationInfo
    level: str
    start: int  # word index in the question
    end: int
    score: float
    name: str  # which name or word matched


@dataclasses.dataclass(frozen=True)
class Resolution:
    status: str  # resolved | ambiguous | none
    location: LocationInfo | None = None
    candidates: tuple[LocationInfo, ...] = ()
    level: str = ""  # exact | canonical | word | fuzzy | hint | only | ""
    surface: str = ""
    explanation: str = ""

    @property
    def location_id(self) -> str:
        return self.location.location_id if self.location else ""


def _names(loc: LocationInfo) -> list[str]:
    local_id = re.split(r"[-_]", loc.location_id, maxsplit=1)[-1].replace("-", " ").replace("_", " ")
    return [n for n in dict.fromkeys((loc.name, loc.clinic_name, *loc.aliases, local_id)) if n and n.strip()]


def _distinctive(name: str) -> list[str]:
    return [w for w in words(name) if w not in GENERIC_WORDS]


@dataclasses.dataclass(frozen=True)
class _NameForms:
    """One name of a location in the forms every question is matched against."""

    name: str
    words: tuple[str, ...]
    core: tuple[str, ...]  # its distinctive words
    folded: str  # the distinctive words (or all words) folded and joined: the canonical level
    fuzzy_target: str  # the distinctive words folded and joined ("" without any): the fuzzy level


@functools.lru_cache(maxsize=4096)
def _name_forms(loc: LocationInfo) -> tuple[_NameForms, ...]:
    """A location's names in matchable forms, computed once per location (a question is matched
    against every permitted location; their names do not change between questions)."""
    forms = []
    for name in _names(loc):
        toks, core = tuple(words(name)), tuple(_distinctive(name))
        if toks:
            forms.append(_NameForms(name, toks, core, "".join(_fold_word(w) for w in (core or toks)),
                                    "".join(_fold_word(w) for w in core)))
    return tuple(forms)


def _find(seq: list[str], sub: tuple[str, ...] | list[str]) -> Iterable[int]:
    n, sub = len(sub), list(sub)
    for i in range(len(seq) - n + 1):
        if seq[i:i + n] == sub:
            yield i


def _common_word_alone(q: list[str], mention: Mention) -> bool:
    """A mention that is one common word, less than the whole name it matched, with no place word
    beside it."""
    start, end = mention.start, mention.end
    whole = mention.level != "word" and words(mention.name) == q[start:end]  # a word mention names its word
    if end - start != 1 or whole:
        return False
    if shipped_idf().idf(stem(q[start])) >= COMMON_IDF:
        return False
    before = q[start - 1] if start > 0 else ""
    after = q[end] if end < len(q) else ""
    return before not in _PLACE_BEFORE and after not in _PLACE_AFTER


def mentions(question: str, locations: list[LocationInfo], exclude: frozenset[str] = frozenset(),
             *, reply: bool = False) -> list[Mention]:
    """Every mention of every location, at every level it reaches. `reply`: the text answers
    "which clinic?", so a common word of a name names it alone too ("kids")."""
    q = words(question)
    q_folded = [_fold_word(w) for w in q]
    found: list[Mention] = []
    for loc in locations:
        for form in _name_forms(loc):
            toks, core, name = form.words, form.core, form.name
            for variant in (toks, core):
                if not variant or (variant is core and core == toks):
                    continue
                for i in _find(q, variant):
                    found.append(Mention(loc, "exact", i, i + len(variant), 1.0, name))
            for size in range(1, len(core or toks) + 2):
                for i in range(len(q_folded) - size + 1):
                    if "".join(q_folded[i:i + size]) == form.folded:
                        found.append(Mention(loc, "canonical", i, i + size, 1.0, name))
            for word in core:
                if len(word) >= MIN_WORD and word not in exclude:
                    for i in _find(q, [word]):
                        found.append(Mention(loc, "word", i, i + 1, 1.0, word))
            if core:
                score, start, end = _fuzzy(q_folded, form.fuzzy_target, len(core))
                if score >= ACCEPT:
                    found.append(Mention(loc, "fuzzy", start, end, score, name))
    return found if reply else [m for m in found if not _common_word_alone(q, m)]


def _fuzzy(q: list[str], target: str, n: int) -> tuple[float, int, int]:
    """Best similarity of `target` (joined distinctive words) to any window of n-1..n+1 question
    words joined without spaces, when it reaches ACCEPT (else 0); short targets must be written
    exactly. A window whose upper bounds (length, then letters) stay below ACCEPT or the best so
    far is never aligned: alignment is the expensive step, and most windows share few letters."""
    if len(target) < MIN_WORD:
        return 0.0, 0, 0
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)
    best = (0.0, 0, 0)
    for size in {max(1, n - 1), n, n + 1}:
        for i in range(len(q) - size + 1):
            window = "".join(q[i:i + size])
            if abs(len(window) - len(target)) > max(2, len(target) // 4):
                continue
            matcher.set_seq1(window)
            bar = max(best[0], ACCEPT - 1e-9)
            if matcher.real_quick_ratio() <= bar or matcher.quick_ratio() <= bar:
                continue
            ratio = matcher.ratio()
            if ratio > best[0]:
                best = (ratio, i, i + size)
    return best if best[0] >= ACCEPT else (0.0, 0, 0)


def _drop_covered(level_mentions: list[Mention]) -> list[Mention]:
    """A mention inside a strictly longer mention of another location is not a mention of its own."""
    keep = []
    for m in level_mentions:
        covered = any(o.location.location_id != m.location.location_id and o.start <= m.start and o.end >= m.end
                      and (o.end - o.start) > (m.end - m.start) for o in level_mentions)
        if not covered:
            keep.append(m)
    return keep


def _generic_tail(question: str, locations: list[LocationInfo]) -> tuple[str, list[LocationInfo]]:
    """A shared generic tail ("the family clinic") named in the question and the locations it fits."""
    text = " ".join(words(question))
    tails: dict[str, list[LocationInfo]] = {}
    for loc in locations:
        generic = [w for w in words(loc.name) if w in GENERIC_WORDS and w != "the"]
        if len(generic) >= 2:
            tails.setdefault(" ".join(generic), []).append(loc)
    for tail, locs in sorted(tails.items(), key=lambda kv: -len(kv[0])):
        if len(locs) > 1 and re.search(rf"\b{re.escape(tail)}\b", text):
            return tail, locs
    return "", []


def resolve(question: str, locations: list[LocationInfo], *, location_id: str = "",
            exclude: frozenset[str] = frozenset(), reply: bool = False) -> Resolution:
    """`locations`: the caller's permitted locations. `location_id`: the request's explicit hint
    (already checked to be permitted). `exclude`: domain words that never name a clinic alone.
    `reply`: the text answers "which clinic?" (see mentions)."""
    by_id = {loc.location_id: loc for loc in locations}
    hint = by_id.get(location_id)
    q = words(question)
    found = mentions(question, locations, exclude, reply=reply)
    for level in LEVELS:
        at_level = _drop_covered([m for m in found if m.level == level])
        if not at_level:
            continue
        best: dict[str, Mention] = {}
        for m in at_level:
            if m.location.location_id not in best or m.score > best[m.location.location_id].score:
                best[m.location.location_id] = m
        ranked = sorted(best.values(), key=lambda m: (-m.score, m.location.location_id))
        if level == "fuzzy":
            top = ranked[0].score
            ranked = [m for m in ranked if top - m.score < MARGIN]
        candidates = tuple(m.location for m in ranked)
        surface = " ".join(q[ranked[0].start:ranked[0].end])
        detail = ", ".join(f"{m.location.location_id} {m.level} {m.score:.2f} ('{m.name}')" for m in ranked)
        if len(candidates) == 1:
            note = ""
            if hint is not None and hint.location_id != candidates[0].location_id:
                note = f"; the clinic named in the question wins over the request's location_id {hint.location_id}"
            return Resolution("resolved", candidates[0], candidates, level, surface, f"{level} match: {detail}{note}")
        if hint is not None and hint in candidates:
            return Resolution("resolved", hint, candidates, "hint", surface,
                              f"{level} matches {detail}: the request's location_id {hint.location_id} is one of them")
        return Resolution("ambiguous", None, candidates, level, surface, f"{level} matches {detail}: ambiguous")
    tail, locs = _generic_tail(question, locations)
    if locs:
        if hint is not None and hint in locs:
            return Resolution("resolved", hint, tuple(locs), "hint", tail,
                              f"'{tail}' names {len(locs)} locations; the request's location_id is one of them")
        return Resolution("ambiguous", None, tuple(sorted(locs, key=lambda loc: loc.location_id)), "generic", tail,
                          f"'{tail}' names {len(locs)} locations")
    if hint is not None:
        return Resolution("resolved", hint, (hint,), "hint", "", "no clinic named; the request's location_id")
    if len(locations) == 1:
        return Resolution("resolved", locations[0], (locations[0],), "only", "",
                          "no clinic named; the only location permitted to the caller")
    return Resolution("none", explanation="no clinic named")
