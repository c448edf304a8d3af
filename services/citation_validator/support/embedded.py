"""The `embedded` support model: features.py (semantic alignment + precise checks) into a learned
logistic model whose weights, scaling, gates and thresholds live in one versioned JSON file
(model/support-embedded-*.json, written by train.py). No network, no torch; numpy only.

Decision:
1. p = sigmoid(w · standardised features + b): the calibrated probability of support;
2. gates: a conflict of a kind the weights file lists under `gates` (chosen on WiCE dev by its
   precision, see train.py), or under `short_claim_gates` for a short (one-rule) claim, makes the
   claim UNSUPPORTED whatever p says (its score is scaled by `gate_factor`): rules only make a
   decision more careful, never less;
3. the review gate of a short claim (one rule): a substituted word or a clause no single sentence
   states caps the verdict at UNRESOLVED (see review_reason); its floor and whether the one-sentence
   test applies are in the weights file (`review`), chosen with the thresholds by train.py;
4. otherwise p >= thresholds.supported -> SUPPORTED, p < thresholds.unsupported -> UNSUPPORTED,
   else UNRESOLVED (goes to review). The thresholds are the stated operating point on dev.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import numpy as np

from services.citation_validator.support import SUPPORTED, UNRESOLVED, UNSUPPORTED, Decision, Evidence, checks
from services.citation_validator.support.features import FEATURES, FeatureExtractor, is_short

MODEL_DIR = Path(__file__).resolve().parent / "model"
DEFAULT_WEIGHTS = MODEL_DIR / "support-embedded.json"


class WeightsError(ValueError):
    pass


class Weights:
    def __init__(self, data: dict, path: Path) -> None:
        try:
            self.version = str(data["version"])
            self.features = tuple(data["features"])
            self.mean = np.array(data["mean"], dtype=np.float64)
            self.scale = np.array(data["scale"], dtype=np.float64)
            self.coef = np.array(data["coef"], dtype=np.float64)
            self.intercept = float(data["intercept"])
            self.supported = float(data["thresholds"]["supported"])
            self.unsupported = float(data["thresholds"]["unsupported"])
            self.gates = frozenset(data.get("gates", ()))
            self.short_claim_gates = frozenset(data.get("short_claim_gates", ()))
            self.gate_factor = float(data.get("gate_factor", 0.3))
            review = data.get("review", {})
            self.review_match_floor = float(review.get("match_min_floor", 0.5))
            # The one-sentence test applies to evidence of at most this many sentences (0: never).
            self.review_local_sentences = int(review.get("semantic_local_max_sentences", 10**6))
        except (KeyError, TypeError, ValueError) as exc:
            raise WeightsError(f"support weights {path}: {exc}") from exc
        if self.features != FEATURES:
            raise WeightsError(f"support weights {path} were trained on features {self.features}, this code "
                               f"computes {FEATURES}: retrain (make train-support)")
        if not (len(self.mean) == len(self.scale) == len(self.coef) == len(FEATURES)):
            raise WeightsError(f"support weights {path}: vector lengths differ from {len(FEATURES)} features")
        if not 0.0 <= self.unsupported <= self.supported <= 1.0:
            raise WeightsError(f"support weights {path}: need 0 <= unsupported <= supported <= 1")

    @classmethod
    def load(cls, path: Path | str | None = None) -> Weights:
        path = Path(path or DEFAULT_WEIGHTS)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise WeightsError(f"support weights {path}: {exc}") from exc
        return cls(data, path)

    def probability(self, x: np.ndarray) -> float:
        z = float(((x - self.mean) / self.scale) @ self.coef + self.intercept)
        return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))


def evidence_sentences(evidence: list[Evidence]) -> tuple[list[str], str]:
    sentences = [s for e in evidence for s in checks.sentences(e.text)]
    context = " ".join(dict.fromkeys(x for e in evidence for x in (e.title, e.context) if x.strip()))
    return sentences, context


def review_reason(features: dict[str, float], match_floor: float, local_sentences: int) -> str:
    """The review gate of a short claim (one rule, where every word carries the rule): a word with no
    lexical match and no alignment of at least `match_floor` anywhere (a substitution: "juice" for
    "water"), or a clause that no single sentence states (two rules merged into a third) when the
    evidence has at most `local_sentences` sentences: in a passage of a few rules each rule is one
    sentence, while across a long narrative chunk a claim is routinely put together from several
    (WiCE dev: 95 % of the short supported claims). It only makes SUPPORTED careful; train.py
    chooses both settings with the threshold and replays the gate."""
    if not is_short(features):
        return ""
    if features["match_min"] < match_floor:
        return f"a word of the claim has no counterpart in the evidence (alignment {features['match_min']:.2f})"
    few_sentences = math.expm1(features["sentences_log"]) <= local_sentences + 0.5
    if few_sentences and features.get("semantic_local", 1.0) < 1.0:
        return "no single sentence of the evidence states the whole claim"
    return ""


class EmbeddedSupportModel:
    local = True  # SupportModel.local: decided in this process, CPU only

    def __init__(self, weights_file: Path | str | None = None, embedder=None) -> None:
        self.weights = Weights.load(weights_file)
        self._embedder = embedder
        self._extractor: FeatureExtractor | None = None
        self._lock = threading.Lock()

    @property
    def version(self) -> str:
        return f"embedded:{self.weights.version}"

    @property
    def extractor(self) -> FeatureExtractor:
        with self._lock:
            if self._extractor is None:
                from citetrace.embeddings import Embedder

                self._extractor = FeatureExtractor(self._embedder or Embedder())
            return self._extractor

    def warm_up(self) -> None:
        self.extractor.warm_up()

    def score(self, claim: str, evidence: list[Evidence]) -> tuple[float, checks.CheckReport, dict[str, float]]:
        sentences, context = evidence_sentences(evidence)
        features, report = self.extractor.extract(claim, sentences, context)
        x = np.array([features[name] for name in FEATURES], dtype=np.float64)
        return self.weights.probability(x), report, features

    def decide(self, claim: str, evidence: list[Evidence]) -> Decision:
        if not any(e.text.strip() for e in evidence):
            return Decision(UNSUPPORTED, 0.0, "no cited evidence", self.version)
        p, report, features = self.score(claim, evidence)
        return self.verdict(p, report, features)

    def _review(self, features: dict[str, float]) -> str:
        return review_reason(features, self.weights.review_match_floor, self.weights.review_local_sentences)

    def verdict(self, p: float, report: checks.CheckReport, features: dict[str, float]) -> Decision:
        w = self.weights
        short = is_short(features)
        gate = report.first(w.gates | (w.short_claim_gates if short else frozenset()))
        score = round(p, 4)
        if gate is not None:  # the score keeps the model's ranking, scaled down: it never reaches SUPPORTED
            return Decision(UNSUPPORTED, round(min(p * w.gate_factor, w.supported - 1e-4), 4), gate.message,
                            self.version)
        if p >= w.supported and (review := self._review(features)):
            return Decision(UNRESOLVED, score, f"support {p:.2f}, but {review}: sent to review", self.version)
        if p >= w.supported:
            return Decision(SUPPORTED, score, f"support {p:.2f} >= {w.supported:.2f}: the evidence states every "
                                              f"part (weakest aligned word {features['match_min']:.2f})", self.version)
        detail = "; ".join(c.message for c in report.conflicts[:2])
        why = (f"; {detail}" if detail else
               f"; weakest clause aligned {features['clause_match_min']:.2f}, "
               f"{features['weak_share_65']:.0%} of the claim's weight poorly aligned")
        if p < w.unsupported:
            return Decision(UNSUPPORTED, score, f"support {p:.2f} < {w.unsupported:.2f}{why}", self.version)
        return Decision(UNRESOLVED, score, f"support {p:.2f} between {w.unsupported:.2f} and {w.supported:.2f}{why}",
                        self.version)
