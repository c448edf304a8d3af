"""The scope gate (DESIGN.md §3): decided first, from the question alone, independently of any
downstream service. A retrieval outage can never be the reason a clinical request was withheld.

Rules and the action of each boundary are data (data/scope_boundary.yaml), versioned; the words
said at a boundary are in the locale's wording file (data/wording/<locale>.yaml, boundary.<kind>)."""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from typing import Any

import yaml

from services.orchestrator.core.model import NextAction
from services.orchestrator.core.text import fold

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "scope_boundary.yaml"

EMERGENCY = "emergency"
CLINICAL = "clinical"


@dataclasses.dataclass(frozen=True)
class Rule:
    rule_id: str
    kind: str  # emergency | clinical
    patterns: tuple[re.Pattern[str], ...]


@dataclasses.dataclass(frozen=True)
class Boundary:
    kind: str  # emergency | clinical (the wording file's boundary.<kind>)
    next_action: NextAction


@dataclasses.dataclass(frozen=True)
class ScopePolicy:
    version: str
    rules: tuple[Rule, ...]
    responses: dict[str, Boundary]


@dataclasses.dataclass(frozen=True)
class ClauseVerdict:
    clause: str
    kind: str | None  # None: in scope
    rule_id: str | None


@dataclasses.dataclass(frozen=True)
class ScopeDecision:
    """The gate's verdict on a whole question."""

    version: str
    clauses: tuple[ClauseVerdict, ...]
    emergency: bool
    # What a clause the gate holds back gets (None: the whole question is in scope).
    boundary: Boundary | None = None
    # The learned gate's per-clause analysis (services/orchestrator/understanding/analysis.py):
    # boundary scores and intents the router reuses, so the question is encoded once.
    analysis: Any = None

    @property
    def in_scope(self) -> bool:
        return all(c.kind is None for c in self.clauses)

    @property
    def in_scope_clauses(self) -> list[str]:
        """Clauses that may proceed (none when the wording is an emergency)."""
        if self.emergency:
            return []
        return [c.clause for c in self.clauses if c.kind is None]

    @property
    def matched_rules(self) -> list[str]:
        return [c.rule_id for c in self.clauses if c.rule_id]

    @property
    def reason(self) -> str:
        """Why, naming rules and counts, never the question text."""
        if self.in_scope:
            return f"no boundary rule matched ({self.version})"
        rules = ", ".join(sorted(set(self.matched_rules)))
        if self.emergency:
            return f"emergency wording ({rules}); the whole question gets the emergency boundary ({self.version})"
        held = sum(1 for c in self.clauses if c.kind)
        return (f"clinical request ({rules}): {held} of {len(self.clauses)} clause(s) get the boundary, "
                f"the rest proceed ({self.version})")


@functools.lru_cache(maxsize=4)
def load_policy(path: Path = DATA_FILE) -> ScopePolicy:
    raw = yaml.safe_load(path.read_text())
    rules = tuple(
        Rule(rule["id"], rule["kind"], tuple(re.compile(p) for p in rule["patterns"])) for rule in raw["rules"]
    )
    for rule in rules:
        if rule.kind not in (EMERGENCY, CLINICAL):
            raise ValueError(f"{path}: rule {rule.rule_id} has unknown kind {rule.kind!r}")
    responses = {kind: Boundary(kind, NextAction(spec["next_action"])) for kind, spec in raw["responses"].items()}
    return ScopePolicy(str(raw["version"]), rules, responses)


def _first_match(text: str, rules: tuple[Rule, ...], kind: str) -> str | None:
    for rule in rules:
        if rule.kind == kind and any(p.search(text) for p in rule.patterns):
            return rule.rule_id
    return None


def gate(clauses: list[str], policy: ScopePolicy | None = None) -> ScopeDecision:
    """Classifies each clause; emergency wording in any clause (or across clauses) wins."""
    policy = policy or load_policy()
    verdicts: list[ClauseVerdict] = []
    for clause in clauses:
        text = fold(clause)
        rule = _first_match(text, policy.rules, EMERGENCY)
        if rule:
            verdicts.append(ClauseVerdict(clause, EMERGENCY, rule))
            continue
        rule = _first_match(text, policy.rules, CLINICAL)
        verdicts.append(ClauseVerdict(clause, CLINICAL if rule else None, rule))
    whole = fold(" ".join(clauses))
    emergency_rule = _first_match(whole, policy.rules, EMERGENCY)
    emergency = any(v.kind == EMERGENCY for v in verdicts) or emergency_rule is not None
    if emergency and not any(v.kind == EMERGENCY for v in verdicts):
        verdicts = [ClauseVerdict(v.clause, EMERGENCY, emergency_rule) for v in verdicts]
    held = EMERGENCY if emergency else CLINICAL if any(v.kind for v in verdicts) else None
    return ScopeDecision(policy.version, tuple(verdicts), emergency, policy.responses[held] if held else None)


class RuleScopeGate:
    """The rules of data/scope_boundary.yaml as the routing stage's ScopeGate."""

    def __init__(self, policy: ScopePolicy | None = None) -> None:
        self.policy = policy or load_policy()

    def warm_up(self) -> None:
        """Nothing to load: regular expressions only."""

    def decide(self, clauses: tuple[str, ...] | list[str]) -> ScopeDecision:
        return gate(list(clauses), self.policy)
