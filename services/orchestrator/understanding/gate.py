"""The learned clinical boundary as the routing stage's ScopeGate (core/routing.py): the analyzer's
per-clause decision (model + versioned rules, analysis.py) as a ScopeDecision, with the next
actions of data/scope_boundary.yaml's responses. The analysis rides along for the router."""

from __future__ import annotations

from services.orchestrator.core import scope
from services.orchestrator.understanding.analysis import CLINICAL, EMERGENCY, QuestionAnalyzer


class LearnedScopeGate:
    def __init__(self, analyzer: QuestionAnalyzer, policy: scope.ScopePolicy | None = None) -> None:
        self.analyzer = analyzer
        self.policy = policy or scope.load_policy()

    def warm_up(self) -> None:
        self.analyzer.warm_up()

    def decide(self, clauses: tuple[str, ...] | list[str]) -> scope.ScopeDecision:
        analysis = self.analyzer.analyze_clauses(list(clauses))
        verdicts = []
        for clause in analysis.clauses:
            kind = EMERGENCY if analysis.emergency else (
                scope.CLINICAL if clause.boundary == CLINICAL else None)
            verdicts.append(scope.ClauseVerdict(clause.text, kind, clause.boundary_source if kind else None))
        held = scope.EMERGENCY if analysis.emergency else scope.CLINICAL if any(v.kind for v in verdicts) else None
        return scope.ScopeDecision(analysis.version, tuple(verdicts), analysis.emergency,
                                   self.policy.responses[held] if held else None, analysis)
