"""The support decision (DESIGN.md §5): does the cited evidence state what the claim says?

Signals, all explainable:
- coverage: the share of the claim's content words (stemmed) found in its cited passages;
- clause coverage: each clause of the claim ("..., and an assessment") must itself be covered:
  a clause with (almost) nothing in the passage is an added assertion;
- quantities: every number/time of the claim must appear in the evidence with the same unit
  (15 vs 30 minutes, 24 vs 48 hours);
- negation: a claim clause and the evidence clause it matches must agree in polarity
  ("must" vs "must not");
- qualifiers: an "only"/"always"/"all"/"never" the evidence does not say is an addition; an
  exception ("except", "unless", "however") attached to the matched rule must not be dropped;
- embedding similarity of the claim to its best evidence span: a helper that can lift a
  well-covered paraphrase from UNRESOLVED to SUPPORTED, never decides alone.

Verdicts: a conflict -> UNSUPPORTED; coverage >= supported_coverage -> SUPPORTED; coverage <
unsupported_coverage -> UNSUPPORTED; otherwise UNRESOLVED (goes to review), unless the
embedding assist applies. Thresholds come from a file chosen on the labelled set
(tests/citation_validator/support_labelled.yaml, `make bench-support`).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from pathlib import Path

import yaml
from citetrace import claimtext

SUPPORTED, UNSUPPORTED, UNRESOLVED = "SUPPORTED", "UNSUPPORTED", "UNRESOLVED"
METHOD = "lexical-v1"


class _CachedText:
    """claimtext's pure text functions, memoised per text (bounded LRU, thread-safe): the same
    passages and their units come back Ask after Ask, and one decision asks for the same stems
    many times. Results are only read here (lists become tuples)."""

    def __init__(self, size: int = 16384) -> None:
        self.content_stems = functools.lru_cache(maxsize=size)(lambda t: tuple(claimtext.content_stems(t)))
        self.content_set = functools.lru_cache(maxsize=size)(lambda t: claimtext.content_set(t))
        self.tokens = functools.lru_cache(maxsize=size)(lambda t: tuple(claimtext.tokens(t)))
        self.quantities = functools.lru_cache(maxsize=size)(lambda t: claimtext.quantities(t))
        self.units = functools.lru_cache(maxsize=size)(lambda t: tuple(claimtext.units(t)))
        self.negations = functools.lru_cache(maxsize=size)(lambda t: claimtext.negations(t))


_ct = _CachedText()


@dataclasses.dataclass(frozen=True)
class Thresholds:
    version: str = "default"
    supported_coverage: float = 1.0
    unsupported_coverage: float = 0.5
    clause_coverage: float = 0.34
    embedding_weight: float = 0.2
    assist_similarity: float = 0.8
    assist_coverage: float = 0.8

    @classmethod
    def load(cls, path: Path) -> Thresholds:
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"thresholds file {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"thresholds file {path}: expected a mapping")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known - {"chosen_on", "metrics"})
        if unknown:
            raise ValueError(f"thresholds file {path}: unknown key(s) {', '.join(unknown)}")
        values = {k: v for k, v in data.items() if k in known}
        if "version" not in values:
            raise ValueError(f"thresholds file {path}: missing key 'version'")
        for key, value in values.items():
            if key != "version" and not isinstance(value, int | float):
                raise ValueError(f"thresholds file {path}: {key} must be a number")
        return cls(**{k: (str(v) if k == "version" else float(v)) for k, v in values.items()})


@dataclasses.dataclass(frozen=True)
class Evidence:
    text: str
    context: str = ""  # title / heading: counts for coverage, not for numbers or polarity


@dataclasses.dataclass
class Decision:
    verdict: str
    score: float
    reason: str
    coverage: float = 0.0
    similarity: float | None = None
    span: str = ""


# Punctuation splits clauses except inside numbers and times ("8:00", "1,500") and after titles ("Dr.").
_PUNCT = r"(?:[;!?]|[,:](?!\d)|(?<!\bDr)(?<!\bMr)(?<!\bMs)(?<!\bMrs)(?<!\bSt)\.(?!\d))"
_CLAUSE_SPLIT = re.compile(_PUNCT.join([r"\s*(?:", r"|\band\b|\bor\b|\bplus\b|\bas well as\b|\balso\b|\bwhile\b)\s*"]),
                           re.IGNORECASE)
_POLARITY_SPLIT = re.compile(
    _PUNCT.join([r"\s*(?:", r"|\bbut\b|\bhowever\b|\bexcept\b|\bunless\b|\bwhile\b|\bwhereas\b)\s*"]),
    re.IGNORECASE)
# Words that turn a number into a bound: "under 18" is not "over 18".
COMPARATORS = frozenset({"under", "over", "less", "more", "fewer", "least", "most", "before", "after",
                         "within", "until", "from", "above", "below", "maximum", "minimum"})
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][A-Za-z\u00C0-\u024F-]+")


def _clauses(text: str, splitter: re.Pattern) -> list[str]:
    return [c for c in splitter.split(text) if c and _ct.content_stems(c)]


def _quantity_ok(q: tuple[str, str], evidence: frozenset[tuple[str, str]]) -> bool:
    value, unit = q
    if q in evidence:
        return True
    values_with_unit = {u for v, u in evidence if v == value}
    if not values_with_unit:
        return False
    return unit == "" or "" in values_with_unit


def _best_units(claim: set[str], evidence: list[Evidence]) -> list[claimtext.Unit]:
    """The smallest set of evidence units (at most 3) that covers the claim greedily."""
    units = [u for e in evidence for u in _ct.units(e.text)] or [
        claimtext.Unit(e.text, 0, len(e.text), "sentence") for e in evidence
    ]
    sets = [(u, _ct.content_set(u.text)) for u in units]
    chosen: list[claimtext.Unit] = []
    missing = set(claim)
    for _ in range(3):
        best = max(sets, key=lambda us: (len(missing & us[1]), -len(us[1])), default=None)
        if best is None or not missing & best[1]:
            break
        chosen.append(best[0])
        missing -= best[1]
        sets = [s for s in sets if s[0] is not best[0]]
    return chosen


def decide(
    claim: str,
    evidence: list[Evidence],
    thresholds: Thresholds,
    similarity: Callable[[str, str], float] | None = None,
) -> Decision:
    stems = _ct.content_stems(claim)
    claim_set = set(stems)
    if not claim_set:
        return Decision(UNRESOLVED, 0.0, "the claim has no content words to check")
    if not evidence:
        return Decision(UNSUPPORTED, 0.0, "no valid cited evidence")
    evidence_text = "\n".join(e.text for e in evidence)
    evidence_set = _ct.content_set(evidence_text) | _ct.content_set(" ".join(e.context for e in evidence))
    context_set = _ct.content_set(" ".join(e.context for e in evidence))
    covered = claim_set & evidence_set
    union_coverage = len(covered) / len(claim_set)
    span_units = _best_units(claim_set, evidence)
    # Local coverage: each clause of the claim must be stated by ONE unit of the evidence (plus its
    # title/heading), so two rules cannot be merged into a third ("do not eat" + "drink water" is
    # not "do not eat or drink").
    all_units = [_ct.content_set(u.text) for e in evidence for u in _ct.units(e.text)] or [evidence_set]
    local = []
    for clause in _clauses(claim, _POLARITY_SPLIT) or [claim]:
        c_set = set(_ct.content_stems(clause))
        if c_set:
            local.append(max(len(c_set & (u | context_set)) / len(c_set) for u in all_units))
    coverage = min([union_coverage, *local])
    span = " ".join(u.text for u in span_units)
    sim = None  # computed only when it can matter (the assist), to keep the decision fast
    score = coverage

    def conflict(reason: str) -> Decision:
        return Decision(UNSUPPORTED, round(min(score, 0.25) * 0.5, 4), reason, coverage, sim, span)

    # Numbers and times: each clause's quantities must be in the evidence unit that clause is about
    # (the passage may say "30 minutes" about MRI and "15 minutes" about everything else).
    unit_texts = [u.text for e in evidence for u in _ct.units(e.text)] or [evidence_text]
    unit_info = [(t, _ct.content_set(t), _ct.quantities(t)) for t in unit_texts]
    evidence_quantities = _ct.quantities(evidence_text)
    for clause in _clauses(claim, _POLARITY_SPLIT) or [claim]:
        wanted = _ct.quantities(clause)
        if not wanted:
            continue
        words = {w for w in _ct.content_stems(clause) if not w[0].isdigit()}
        overlaps = [len(words & u_set) for _, u_set, _ in unit_info]
        best = max(overlaps) if words else 0
        candidates = [info for info, n in zip(unit_info, overlaps, strict=True) if n == best] if best else []
        pool = candidates or [(evidence_text, frozenset(), evidence_quantities)]
        for q in sorted(wanted):
            if not any(_quantity_ok(q, u_q) for _, _, u_q in pool):
                said = ", ".join(sorted({f"{v} {u}".strip() for _, _, u_q in pool for v, u in u_q})) or "no number"
                return conflict(f"the claim says {q[0]} {q[1]}".rstrip() + f" but the cited passage says {said}")
    # Names (clinics, people, days) and bounds must be the passage's own: "Northgate" is not
    # "Northside", "under 18" is not "over 18". Never paraphrasable, so never left to coverage.
    for name in _NAME.findall(claim):
        name_stems = set(_ct.content_stems(name))
        if name_stems and not name_stems <= evidence_set:
            return conflict(f"the claim names '{name}', which the cited passage does not")
    evidence_tokens = set(_ct.tokens(evidence_text))
    for word in sorted((set(_ct.tokens(claim)) & COMPARATORS) - evidence_tokens):
        return conflict(f"the claim says '{word}', a bound the cited passage does not state")
    # Polarity, clause by clause against the evidence clause each one matches best.
    evidence_clauses = [(c, set(_ct.content_stems(c))) for c in _clauses(span or evidence_text, _POLARITY_SPLIT)]
    for clause in _clauses(claim, _POLARITY_SPLIT):
        c_set = set(_ct.content_stems(clause)) - claimtext.NEGATION_CUES
        if not c_set or not evidence_clauses:
            continue
        best, best_set = max(evidence_clauses, key=lambda ec: (len(c_set & ec[1]) / len(c_set), -len(ec[1])))
        if len(c_set & best_set) / len(c_set) < 0.5:
            continue
        if (_ct.negations(clause) > 0) != (_ct.negations(best) > 0):
            claim_neg = _ct.negations(clause) > 0
            return conflict(
                "negation disagrees: the claim says '" + ("not" if claim_neg else "affirmative")
                + "' where the cited passage says '" + ("affirmative" if claim_neg else "not") + "'"
            )
    # Qualifiers the evidence does not make.
    for cue in sorted((claimtext.RESTRICTION_CUES | claimtext.UNIVERSAL_CUES | {"never"}) & set(_ct.tokens(claim))):
        if cue not in evidence_tokens:
            return conflict(f"the claim adds the qualifier '{cue}', which the cited passage does not state")
    # Restrictions and exceptions of the matched rule that the claim drops.
    claim_tokens = set(_ct.tokens(claim))
    for unit in span_units:
        dropped = (set(_ct.tokens(unit.text)) & claimtext.RESTRICTION_CUES) - claim_tokens
        if dropped and len(_ct.content_set(unit.text) & claim_set) >= 2:
            return conflict(f"the claim drops the restriction '{sorted(dropped)[0]}' of the rule it cites")
    for unit in span_units:
        unit_cues = set(_ct.tokens(unit.text)) & claimtext.EXCEPTION_CUES
        if unit_cues and not claim_tokens & claimtext.EXCEPTION_CUES:
            rule_part, _, exception_part = re.split(r"\b(" + "|".join(sorted(unit_cues)) + r")\b", unit.text,
                                                    maxsplit=1, flags=re.IGNORECASE)
            # What only the exception says (not the rule it qualifies) must be in the claim.
            part_set = _ct.content_set(exception_part) - _ct.content_set(rule_part)
            if part_set and len(part_set & claim_set) / len(part_set) < 0.5:
                return conflict(f"the claim drops the exception ('{sorted(unit_cues)[0]} ...') of the rule it cites")
    # Clauses with nothing behind them: added assertions.
    for clause in _clauses(claim, _CLAUSE_SPLIT):
        c_set = set(_ct.content_stems(clause))
        c_cov = len(c_set & evidence_set) / len(c_set)
        if c_cov < thresholds.clause_coverage:
            missing = ", ".join(sorted(c_set - evidence_set))
            return conflict(f"the claim adds an assertion the cited passage does not make ('{clause.strip()}': {missing})")
    missing_words = ", ".join(sorted(claim_set - evidence_set))
    if coverage >= thresholds.supported_coverage:
        return Decision(SUPPORTED, round(score, 4), f"all checks agree; coverage {coverage:.2f}", coverage, sim, span)
    if union_coverage < thresholds.unsupported_coverage:
        return Decision(UNSUPPORTED, round(score, 4),
                        f"coverage {union_coverage:.2f} is below {thresholds.unsupported_coverage}; not in the passage: "
                        f"{missing_words}", coverage, sim, span)
    # Between the thresholds: similarity ranks the case for review (reported in score and reason);
    # it may lift a well-covered paraphrase only if the tuned thresholds allow it (never alone).
    # A cosine similarity is at most 1: with assist_similarity above 1 the assist can never lift the
    # verdict, so the embedding (the most expensive signal, ~8 ms per claim) is not computed at all.
    if similarity is not None and coverage >= thresholds.assist_coverage and thresholds.assist_similarity <= 1.0:
        sim = similarity(claim, span or evidence_text)
        score = (1 - thresholds.embedding_weight) * coverage + thresholds.embedding_weight * max(sim, 0.0)
        if sim >= thresholds.assist_similarity:
            return Decision(SUPPORTED, round(score, 4),
                            f"coverage {coverage:.2f} with similarity {sim:.2f} >= {thresholds.assist_similarity}; "
                            f"paraphrased: {missing_words}", coverage, sim, span)
    similar = f", similarity {sim:.2f}" if sim is not None else ""
    return Decision(UNRESOLVED, round(score, 4),
                    f"coverage {coverage:.2f} between thresholds{similar}; not in the passage: {missing_words}",
                    coverage, sim, span)
