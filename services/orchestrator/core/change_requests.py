"""Does a question ask the assistant to do something to the caller's own appointment (reschedule,
cancel, book a named time) or to their contact details? Pure; rules and version in
services/orchestrator/data/change_requests.yaml.

A clause that asks about a rule or its consequences ("how much notice...", "is there a fee...",
"if I cancel...") asks ABOUT a change and stays a policy question. The assistant never executes a
change: a detected request makes the orchestrator prepare a proposal (book, reschedule, cancel) or
start the contact-verification workflow; nothing said in the message is stored as a contact detail.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
from pathlib import Path

import yaml

from services.orchestrator.core.text import fold, split_clauses

RULES_FILE = Path(__file__).resolve().parent.parent / "data" / "change_requests.yaml"

RESCHEDULE, CANCEL, BOOK, CONTACT = "reschedule", "cancel", "book", "contact"


@dataclasses.dataclass(frozen=True)
class Rules:
    version: str
    about_rule: tuple[re.Pattern, ...]
    actions: dict[str, tuple[re.Pattern, ...]]
    # Pronoun objects ("move it"), valid when the question names an appointment.
    pronoun_actions: dict[str, tuple[re.Pattern, ...]]
    appointment_mention: re.Pattern
    book_time: re.Pattern
    # The terms question a change's policy part answers, per change kind (reschedule, cancel).
    terms_question: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ChangeRequest:
    kind: str  # reschedule | cancel | book | contact
    clause: str
    explanation: str
    # A booking's wanted local wall time (None: none named).
    time: dt.time | None = None


@functools.lru_cache(maxsize=4)
def load_rules(path: Path = RULES_FILE) -> Rules:
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))

    def compile_all(patterns: list[str]) -> tuple[re.Pattern, ...]:
        return tuple(re.compile(p.replace("{objects}", raw["objects"]).replace("{own}", raw["own"]))
                     for p in patterns)

    return Rules(
        version=str(raw["version"]),
        about_rule=compile_all(raw["about_rule"]),
        actions={kind: compile_all(raw[kind]) for kind in (CONTACT, RESCHEDULE, CANCEL, BOOK)},
        pronoun_actions={kind: compile_all(raw[f"{kind}_pronoun"]) for kind in (RESCHEDULE, CANCEL)},
        appointment_mention=re.compile(rf"\b{raw['objects']}\b"),
        book_time=re.compile(raw["book_time"]),
        terms_question={str(k): str(v) for k, v in (raw.get("terms_question") or {}).items()},
    )


def detect(question: str, rules: Rules | None = None) -> ChangeRequest | None:
    """The first clause that asks for an action, as a ChangeRequest; None when none does."""
    rules = rules or load_rules()
    mentioned = rules.appointment_mention.search(fold(question)) is not None
    for clause in split_clauses(question) or [question]:
        found = _in_clause(fold(clause), clause, rules, mentioned)
        if found is not None:
            return found
    return None


def _in_clause(text: str, clause: str, rules: Rules, appointment_mentioned: bool) -> ChangeRequest | None:
    contact = _first(rules.actions[CONTACT], text)
    if contact is not None:  # a contact detail, even phrased as a question, is never taken from chat
        return ChangeRequest(CONTACT, clause, f"contact-detail change: {contact.group(0)!r}")
    about = _first(rules.about_rule, text)
    if about is not None:
        return None
    for kind in (RESCHEDULE, CANCEL):
        match = _first(rules.actions[kind], text)
        if match is None and appointment_mentioned:
            match = _first(rules.pronoun_actions[kind], text)
        if match is not None:
            return ChangeRequest(kind, clause, f"{kind} request: {match.group(0)!r}")
    if _first(rules.actions[BOOK], text) is not None:
        wanted = _booking_time(text, rules)
        if wanted is not None:
            return ChangeRequest(BOOK, clause, f"booking of {wanted:%H:%M}", wanted)
    return None


def _first(patterns: tuple[re.Pattern, ...], text: str) -> re.Match | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match is not None:
            return match
    return None


def _booking_time(text: str, rules: Rules) -> dt.time | None:
    for match in rules.book_time.finditer(text):
        hour, minute, meridiem = (match.group(1), match.group(2), match.group(3)) if match.group(1) else \
            (match.group(4), match.group(5), match.group(6))
        if minute is None and meridiem is None and not re.search(r"\b(kl\.?|klokka|klokken|at)\s*$",
                                                                  text[:match.start(1)]):
            continue  # "the 3" or "for 2 people": no time
        h, m = int(hour), int(minute or 0)
        if meridiem:
            if not 1 <= h <= 12:
                continue
            h = h % 12 + (12 if meridiem.startswith("p") else 0)
        if 0 <= h <= 23 and 0 <= m <= 59:
            return dt.time(h, m)
    return None
