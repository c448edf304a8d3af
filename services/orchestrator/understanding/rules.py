"""The boundary's versioned rules (data/boundary_rules.yaml): red flags with negation, resolution
and history handling, and clinical-request patterns. Pure; microseconds per clause.

The rules only ever make the boundary more careful (boundary.py applies them after the model)."""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

import yaml

RULES_FILE = Path(__file__).resolve().parent / "data" / "boundary_rules.yaml"

# Words after which a negation no longer reaches the red flag ("no fever, but chest pain since noon"), and a
# comma or semicolon before a new subject ("so dont bother booking it, ive written letters to everyone"): a
# list after one negation ("no fever, cough or chest pain") stays negated.
_CONTRAST = re.compile(r"\b(?:but|however|although|though|yet|and now|men|likevel|og nå)\b|[,;]\s*(?=(?:i|i'?ve|ive|i'?m|im|"
                       r"i'?d|i'?ll|he|she|we|they|he'?s|hes|she'?s|shes|it'?s|its|my|his|her|our|their|jeg|han|hun|vi|"
                       r"de|det)\b)")


@dataclasses.dataclass(frozen=True)
class RedFlag:
    rule_id: str
    surface: str


@dataclasses.dataclass(frozen=True)
class EmergencyCheck:
    """The first red flag that stands, and the ones discarded with why (for the route)."""

    hit: RedFlag | None
    discarded: tuple[tuple[str, str], ...] = ()  # (rule_id, negated | resolved | history | not_a_symptom)


@dataclasses.dataclass(frozen=True)
class BoundaryRules:
    version: str
    emergency: tuple[tuple[str, re.Pattern[str]], ...]
    clinical: tuple[tuple[str, re.Pattern[str]], ...]
    negation_before: tuple[re.Pattern[str], ...]
    negation_after: tuple[re.Pattern[str], ...]
    history: tuple[re.Pattern[str], ...]
    present: tuple[re.Pattern[str], ...]
    # Present cues that time the request, not the symptom ("now I just need to book"): removed
    # from the clause before the present cues are looked for.
    present_not_counted: tuple[re.Pattern[str], ...] = ()
    not_symptom_before: re.Pattern[str] | None = None
    not_symptom_after: re.Pattern[str] | None = None
    before_words: int = 5
    after_words: int = 6
    # Emergency groups whose flags hold their own past event ("had my knee replaced 10 days ago, now my
    # calf is swollen"): a history cue in the clause is that event, not a reason to discard.
    history_is_part_of: frozenset[str] = frozenset()
    # A question of money (logistics) though it names clinical things, and what makes it advice after all.
    money_asks: tuple[re.Pattern[str], ...] = ()
    money_unless: tuple[re.Pattern[str], ...] = ()
    # A question of price, and the words that make it a booking after all.
    price_asks: tuple[re.Pattern[str], ...] = ()
    price_unless: tuple[re.Pattern[str], ...] = ()
    # A clause that only says how the patient feels about the visit ("i get really nervous").
    feeling_aside: tuple[re.Pattern[str], ...] = ()

    def only_a_feeling(self, text: str) -> bool:
        """`text`: a folded clause. Whether it says nothing but how someone feels about the visit
        (nervous, anxious, squeamish about needles) and no clinical rule matches it."""
        return any(p.fullmatch(text.strip(" .!,;:")) for p in self.feeling_aside) and self.check_clinical(text) is None

    def check_emergency(self, text: str) -> EmergencyCheck:
        """`text`: a folded clause. Every match of every red flag is looked at; the first that is
        neither negated, resolved nor (history without a present cue) is the hit."""
        discarded: list[tuple[str, str]] = []
        history = any(p.search(text) for p in self.history)
        for rule_id, pattern in self.emergency:
            in_flag = rule_id.split(".")[1] in self.history_is_part_of
            for match in pattern.finditer(text):
                why = self._discard_reason(text, match, history and not in_flag)
                if why is None:
                    return EmergencyCheck(RedFlag(rule_id, match.group(0)), tuple(discarded))
                if (rule_id, why) not in discarded:
                    discarded.append((rule_id, why))
        return EmergencyCheck(None, tuple(discarded))

    def _discard_reason(self, text: str, match: re.Match[str], history: bool) -> str | None:
        if self.not_symptom_before is not None and self.not_symptom_before.search(text[: match.start()]):
            return "not_a_symptom"
        if self.not_symptom_after is not None and self.not_symptom_after.search(text[match.end():]):
            return "not_a_symptom"
        before = _window_before(text[: match.start()], self.before_words)
        if any(p.search(before) for p in self.negation_before):
            return "negated"
        after = _window_after(text[match.end():], self.after_words)
        if any(p.search(after) for p in self.negation_after):
            return "resolved"
        # The cue must stand outside the red flag itself ("since" inside "since my stroke" is history).
        outside = text[: match.start()] + " " + text[match.end():]
        for timing in self.present_not_counted:
            outside = timing.sub(" ", outside)
        if history and not any(p.search(outside) for p in self.present):
            return "history"
        return None

    def asks_only_money(self, text: str) -> bool:
        """`text`: a folded clause. Whether it asks what something costs or whether it is paid for, and
        nothing a clinician would answer (no advice cue, no clinical rule)."""
        return any(p.search(text) for p in self.money_asks) and not any(p.search(text) for p in self.money_unless) \
            and self.check_clinical(text) is None

    def asks_price_not_booking(self, text: str) -> bool:
        """`text`: a folded clause. Whether it asks what something costs and asks to book nothing."""
        return any(p.search(text) for p in self.price_asks) and not any(p.search(text) for p in self.price_unless)

    def check_clinical(self, text: str) -> str | None:
        for rule_id, pattern in self.clinical:
            if pattern.search(text):
                return rule_id
        return None


def _window_before(text: str, words: int) -> str:
    pieces = _CONTRAST.split(text)
    tail = pieces[-1] if pieces else text
    return " ".join(tail.split()[-words:])


def _window_after(text: str, words: int) -> str:
    head = _CONTRAST.split(text)[0]
    return " ".join(head.split()[:words])


@functools.lru_cache(maxsize=4)
def load_rules(path: Path = RULES_FILE) -> BoundaryRules:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))

    def table(section: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
        out = []
        for group, patterns in raw[section].items():
            for index, pattern in enumerate(patterns, start=1):
                out.append((f"{section}.{group}.{index}", re.compile(pattern)))
        return tuple(out)

    def patterns(items: list[str]) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p) for p in items)

    return BoundaryRules(
        version=str(raw["version"]), emergency=table("emergency"), clinical=table("clinical"),
        negation_before=patterns(raw["negation"]["before"]), negation_after=patterns(raw["negation"]["after"]),
        history=patterns(raw["history"]), present=patterns(raw["present"]),
        present_not_counted=patterns(raw.get("present_not_counted", [])),
        not_symptom_before=re.compile(raw["not_a_symptom"]["before"]),
        not_symptom_after=re.compile(raw["not_a_symptom"]["after"]),
        before_words=int(raw.get("negation_window_words", 5)), after_words=int(raw.get("resolution_window_words", 6)),
        history_is_part_of=frozenset(raw.get("history_is_part_of", [])),
        money_asks=patterns(raw.get("money_question", {}).get("asks", [])),
        money_unless=patterns(raw.get("money_question", {}).get("unless", [])),
        price_asks=patterns(raw.get("price_not_booking", {}).get("asks", [])),
        price_unless=patterns(raw.get("price_not_booking", {}).get("unless", [])),
        feeling_aside=patterns(raw.get("feeling_aside", [])),
    )
