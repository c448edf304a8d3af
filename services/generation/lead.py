"""The lead claim's learned veto (issue 15 §2, the generator side): may this unit lead the answer?

The extractive backend's lead rule (extractive.ExtractiveBackend._answers: word coverage of the
question's key terms, or similarity of meaning) lets through a sentence that shares one everyday word
("can I borrow a wheelchair at reception" -> the parking permit "from reception") or that is merely
about the same subject ("can I pay the late fee by card" -> the fee itself). What it cannot see is
which of the question's words the unit leaves unanswered. This model reads that: each key term of the
question aligned to its most similar contextual token of the unit (the shipped embedding model's
last_hidden_state, max-sim), IDF-weighted, beside the rule's own scores. It is a logistic regression
learned on the relevance labelled set (bench/train_lead.py: tune half only, a unit from
a relevant passage is a right lead), with the threshold of a stated operating point. It only vetoes:
a unit leads when the rule admits it AND the model's probability reaches the threshold.

Separate from the validator's support model and from retrieval's relevance model: no decision code
is shared (the embedding model file and text normalisation are).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np
from citetrace.embeddings import Embedder, TokenVectors
from citetrace.idf import shipped as shipped_idf

from services.generation import claimtext, relevance
from services.generation.semantic import TokenCache

DEFAULT_WEIGHTS = Path(__file__).resolve().parent / "model" / "lead.json"
FEATURES = ("sem", "coverage", "score_rel", "rank", "key_terms", "term_min", "term_cov", "weak_share",
            "term_sim", "term_lex", "terms_log")
# A key term counts as answered by a token this similar (the relevance model's cut, retrieval side).
WEAK = 0.6


class LeadUnit(Protocol):
    """What the veto reads of a candidate (extractive._Candidate)."""

    reading: str
    sem: float
    coverage: float
    score: float
    key_terms: bool


class LeadWeights:
    """A logistic regression over the standardized FEATURES, its threshold and version
    (model/lead.json, written by bench/train_lead.py)."""

    def __init__(self, path: Path | str | None = None) -> None:
        path = Path(path or DEFAULT_WEIGHTS)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            self.version = str(data["version"])
            # The embedder whose vectors it was trained on: another one's alignments read differently.
            self.embedding_model = str(data["embedding_model"])
            features = tuple(data["features"])
            self.mean = np.array(data["mean"], dtype=np.float64)
            self.scale = np.array(data["scale"], dtype=np.float64)
            self.coef = np.array(data["coef"], dtype=np.float64)
            self.intercept = float(data["intercept"])
            self.threshold = float(data["threshold"])
            # The stricter operating point a request that asks for a confident lead uses
            # (GenerateRequest.confident_only): see bench/train_lead.py.
            self.confident_threshold = float(data["confident_threshold"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"lead weights {path}: {exc}") from exc
        if features != FEATURES:
            raise ValueError(f"lead weights {path} were trained on {features}; this code computes {FEATURES}: "
                             "retrain (make train-lead)")
        if not (self.mean.shape == self.scale.shape == self.coef.shape == (len(FEATURES),)):
            raise ValueError(f"lead weights {path}: vector lengths do not match the {len(FEATURES)} features")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"lead weights {path}: threshold must be in [0, 1]")
        if not self.threshold <= self.confident_threshold <= 1.0:
            raise ValueError(f"lead weights {path}: confident_threshold must be in [threshold, 1]")

    def probability(self, x: np.ndarray) -> float:
        z = float(((x - self.mean) / self.scale) @ self.coef + self.intercept)
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


class LeadGate:
    """The veto, with the embedder it aligns with (the backend's similarity's own)."""

    def __init__(self, embedder: Embedder, weights: LeadWeights | None = None, cache_size: int = 2048,
                 question_tokens: Callable[[str], TokenVectors] | None = None) -> None:
        self._embedder = embedder
        self._weights = weights
        self._tokens = TokenCache(cache_size)
        # The question's encoder run, shared with the similarity that ranked the units (it reads the
        # same question): EmbeddedUnitSimilarity.question_tokens.
        self._question_tokens = question_tokens or (lambda text: self._tokens.get(self._embedder, text))
        self._idf = shipped_idf()

    @property
    def weights(self) -> LeadWeights:
        if self._weights is None:
            self._weights = LeadWeights()
        return self._weights

    @property
    def version(self) -> str:
        return self.weights.version

    @property
    def threshold(self) -> float:
        return self.weights.threshold

    @property
    def confident_threshold(self) -> float:
        return self.weights.confident_threshold

    def warm_up(self) -> None:
        self._embedder.warm_up()
        if self.weights.embedding_model != self._embedder.model_id:
            raise ValueError(f"lead veto {self.weights.version} was trained on {self.weights.embedding_model} "
                             f"vectors; this service reads {self._embedder.model_id}: retrain (make train-lead)")

    def terms(self, question: str, key_terms: frozenset[str]) -> list[tuple[str, np.ndarray]]:
        """Each key term of the question (stems, relevance.key_terms) that the question writes, with its
        contextual vector (the mean of its word pieces), in question order."""
        if not key_terms:
            return []
        encoded = self._question_tokens(question)
        out: dict[str, np.ndarray] = {}
        for match in re.finditer(r"[\w'’-]+", question):
            term = claimtext.stem(match.group(0).casefold())
            if term not in key_terms or term in out:
                continue
            start, end = match.span()
            pieces = [j for j, (a, b) in enumerate(encoded.offsets) if a >= start and b <= end and b > a]
            if pieces:
                v = encoded.vectors[pieces].mean(axis=0)
                out[term] = v / max(float(np.linalg.norm(v)), 1e-12)
        return list(out.items())

    def features(self, unit: LeadUnit, rank: int, best_score: float,
                 terms: list[tuple[str, np.ndarray]]) -> np.ndarray:
        f = {"sem": unit.sem, "coverage": unit.coverage, "score_rel": unit.score / (best_score or 1.0),
             "rank": float(min(rank, 5)), "key_terms": float(unit.key_terms), "terms_log": math.log1p(len(terms))}
        if not terms:
            f.update(term_min=1.0, term_cov=1.0, weak_share=0.0, term_sim=1.0, term_lex=1.0)
        else:
            tokens = self._tokens.get(self._embedder, unit.reading).vectors
            stems = relevance.terms(unit.reading)
            sims = np.array([float((v @ tokens.T).max()) for _, v in terms])
            lexical = np.array([1.0 if relevance.covers(t, stems) else 0.0 for t, _ in terms])
            weights = np.array([self._idf.idf(t) for t, _ in terms])
            weights = weights / weights.sum()
            match = np.maximum(lexical, sims)
            f.update(term_min=float(match.min()), term_cov=float(match @ weights),
                     weak_share=float(weights[match < WEAK].sum()), term_sim=float(sims @ weights),
                     term_lex=float(lexical @ weights))
        return np.array([f[name] for name in FEATURES])

    def probability(self, unit: LeadUnit, rank: int, best_score: float, terms: list[tuple[str, np.ndarray]]) -> float:
        return self.weights.probability(self.features(unit, rank, best_score, terms))
