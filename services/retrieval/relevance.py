"""Relevance: does this passage answer this question? (issue 15; seed 000: "ranking first is no
reason to be cited"). A decision of its own, separate from support and made before any claim is
offered, on every hit of a Search, so that every generator backend gets the same gate.

Why here, in retrieval, next to the rerank stage: it is a property of a (question, passage) pair,
the retrieval service already holds the query vector and the passages, and a gate in one generator
backend (the first round's word rule lived in the extractive generator) leaves every other backend
ungated. The orchestrator decides what the part does with it (a part whose best passage is not
relevant abstains with ABSTAINED_NO_EVIDENCE); the score and the model version are on every hit
and in the settings of the search, so the trace shows why.

Features (all from the shipped embedding model and the question's own words):
- the question's cosine to the passage (with its title and headings), to its best sentence and to its
  heading path, absolute and relative to the best of the other candidates of the same search;
- the question's KEY TERMS (content words minus question and politeness words): IDF-weighted lexical
  coverage by the passage (text, title, heading path) and semantic coverage, each key term aligned
  to its most similar contextual token of the passage (last_hidden_state max-sim), the weakest one
  and the IDF-weighted share of poorly aligned terms ("walk in" has nothing in an arrival rule);
and whether the passage is the best of the candidates by the similarity and by the coverage;
read by a one-hidden-layer perceptron learned on the tune half of tests/relevance/relevance_labelled.yaml and
the independent authors' tests/relevance/tune/, with the threshold of a stated operating point
(train_relevance.py; tests/relevance/heldout/ is only reported). Weights: model/relevance.json.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np
from citetrace.idf import shipped as shipped_idf
from citetrace.textnorm import STOPWORDS, fold, stem

HERE = Path(__file__).resolve().parent
DEFAULT_WEIGHTS = HERE / "model" / "relevance.json"

FEATURES = ("cos_passage", "cos_sentence", "cos_heading", "lex_cov", "sem_cov", "sem_min", "weak_share",
            "key_terms_log", "fused_lex_cov", "heading_cov", "rel_cos_sentence", "rel_cos_passage", "rel_fused_cov",
            "top_cos_sentence", "top_fused_cov", "top_cos_passage")

# Words that say what KIND of question it is or how it is asked, never what it is about.
QUESTION_WORDS = frozenset(["what", "when", "where", "which", "who", "whom", "whose", "why", "how", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "do", "does", "did", "is", "are", "am", "was", "were", "be", "i", "i'm", "im", "me", "my", "mine", "we", "us", "our", "you", "your", "please", "tell", "know", "want", "like", "need", "any", "anything", "something", "there", "here", "just", "still", "ok", "okay", "hi", "hello", "thanks", "thank", "get", "go", "going", "come", "coming", "also", "really"])
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*[-*|#])")


def key_terms(question: str) -> list[str]:
    words = re.findall(r"[\w'’-]+", fold(question))
    return [w for w in words if w not in STOPWORDS and w not in QUESTION_WORDS and not w.isdigit() and len(w) > 1]


# No raw embedding dimensions go into the head, only the named features. Relevance-2026.12.06.3 also
# read the interaction of the question's vector with the passage's best sentence's (q*s, |q-s|, 768
# values); it learned the training passages themselves: on held-out questions over the sample corpus
# (passages it was trained on) AUROC 0.94 against 0.81 without, on a tenant's documents it never saw
# 0.934 against 0.942, and it scored an exact match ("Is Dr. Diaz Fictional taking new patients?"
# against her profile, the best candidate by every named feature) 0.10. Documents in use are documents
# nobody labelled: the head must read how question and passage relate, not which passage it is.


def best_index(values: list[float]) -> int:
    """The index of the highest value, the first one on a tie (rank order decides); -1 for none."""
    return max(range(len(values)), key=lambda i: (values[i], -i), default=-1)


def relevant_flags(scores: list[float], threshold: float, best_threshold: float) -> list[bool]:
    """The relevance decision on one search's candidates: at the pair operating point (precision
    first), or the best candidate at the recall-first floor — a question usually has one answer among
    the candidates, so the best of them needs less proof than any other (train_relevance.py)."""
    best = best_index(scores)
    return [s >= threshold or (i == best and s >= best_threshold) for i, s in enumerate(scores)]


class RelevanceWeights:
    """A one-hidden-layer perceptron (ReLU, logistic output) over the standardized named features and
    nothing else, trained by train_relevance.py (scikit-learn's MLPClassifier, weights copied here)."""

    def __init__(self, path: Path | str | None = None) -> None:
        path = Path(path or DEFAULT_WEIGHTS)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            self.version = str(data["version"])
            features = tuple(data["features"])
            interaction = data.get("interaction")
            self.mean = np.array(data["mean"], dtype=np.float64)
            self.scale = np.array(data["scale"], dtype=np.float64)
            self.hidden = np.array(data["hidden_weights"], dtype=np.float64)
            self.hidden_bias = np.array(data["hidden_bias"], dtype=np.float64)
            self.output = np.array(data["output_weights"], dtype=np.float64)
            self.output_bias = float(data["output_bias"])
            self.threshold = float(data["threshold"])
            self.best_threshold = float(data["best_threshold"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"relevance weights {path}: {exc}") from exc
        if features != FEATURES or interaction is not None:
            extra = f" + {interaction}" if interaction is not None else ""
            raise ValueError(f"relevance weights {path} were trained on {features}{extra}; this code "
                             f"computes {FEATURES}: retrain (make train-relevance)")
        inputs = len(FEATURES)
        if (self.hidden.ndim != 2 or self.hidden.shape[0] != inputs or self.mean.shape != (inputs,)
                or self.scale.shape != (inputs,) or self.hidden_bias.shape != (self.hidden.shape[1],)
                or self.output.shape != (self.hidden.shape[1],)):
            raise ValueError(f"relevance weights {path}: layer shapes do not fit together")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"relevance weights {path}: threshold must be in [0, 1]")
        if not 0.0 <= self.best_threshold <= self.threshold:
            raise ValueError(f"relevance weights {path}: best_threshold must be in [0, threshold]")

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """x: (candidates, inputs) -> the probability of each."""
        if x.shape[1] != self.mean.shape[0]:
            raise ValueError(f"relevance input has {x.shape[1]} values, the weights expect {self.mean.shape[0]}")
        h = np.maximum(((x - self.mean) / self.scale) @ self.hidden + self.hidden_bias, 0.0)
        z = np.clip(h @ self.output + self.output_bias, -40.0, 40.0)
        return 1.0 / (1.0 + np.exp(-z))


class _LRU:
    """Least recently used entries within a byte budget (a passage's token vectors are up to
    256 x 384 floats: a count alone would let a long-document corpus take gigabytes)."""

    def __init__(self, budget_bytes: int) -> None:
        if budget_bytes <= 0:
            raise ValueError("the relevance passage cache needs a positive budget")
        self.budget = budget_bytes
        self.used = 0
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            entry = self.items.get(key)
            if entry is None:
                return None
            self.items.move_to_end(key)
            return entry[0]

    def put(self, key, value, size: int) -> None:
        with self.lock:
            old = self.items.pop(key, None)
            if old is not None:
                self.used -= old[1]
            self.items[key] = (value, size)
            self.used += size
            while self.used > self.budget and len(self.items) > 1:
                _, (_, dropped) = self.items.popitem(last=False)
                self.used -= dropped


class RelevanceModel:
    """question x passages -> calibrated probabilities that each passage answers the question."""

    def __init__(self, embedder, weights: RelevanceWeights | None = None, cache_mb: int = 256) -> None:
        self.embedder = embedder
        self._weights = weights
        self.idf = shipped_idf()
        self._passages = _LRU(cache_mb * 1024 * 1024)

    @property
    def weights(self) -> RelevanceWeights:
        if self._weights is None:  # loaded on first use: computing features needs no weights
            self._weights = RelevanceWeights()
        return self._weights

    @property
    def version(self) -> str:
        return self.weights.version

    @property
    def threshold(self) -> float:
        return self.weights.threshold

    @property
    def best_threshold(self) -> float:
        return self.weights.best_threshold

    def warm_up(self) -> None:
        self.embedder.warm_up()

    def _passage(self, text: str, context: str):
        key = (text, context)
        cached = self._passages.get(key)
        if cached is None:
            sentences = [s for s in _SENTENCE.split(text) if s.strip()][:24] or [text]
            encoded = self.embedder.encode_tokens([f"{context}\n{text}".strip(), context or text, *sentences],
                                                  batch_size=32)
            whole, heading, parts = encoded[0], encoded[1], encoded[2:]
            stems = {stem(w) for w in re.findall(r"[\w'’-]+", fold(f"{context} {text}"))}
            cached = (whole, heading, np.stack([p.sentence for p in parts]), stems)
            size = (whole.vectors.nbytes + heading.vectors.nbytes + cached[2].nbytes
                    + 64 * len(stems) + len(text) + len(context))
            self._passages.put(key, cached, size)
        return cached

    def features(self, question: str, passages: list[tuple[str, str]]) -> list[dict[str, float]]:
        """The named features of each passage (text, context = title and heading path, in rank order),
        from one encoder run for the question."""
        q = self.embedder.encode_tokens([question])[0]
        terms = key_terms(question)
        spans = [m.span() for m in re.finditer(r"[\w'’-]+", question)]
        words = [fold(question[s:e]) for s, e in spans]
        rows = []
        term_vectors, term_idf, term_stems = [], [], []
        for term in dict.fromkeys(terms):
            if term not in words:
                continue
            s, e = spans[words.index(term)]
            pieces = [j for j, (a, b) in enumerate(q.offsets) if a >= s and b <= e and b > a]
            if not pieces:
                continue
            v = q.vectors[pieces].mean(axis=0)
            term_vectors.append(v / max(float(np.linalg.norm(v)), 1e-12))
            term_idf.append(self.idf.idf(stem(term)))
            term_stems.append(stem(term))
        tv = np.stack(term_vectors) if term_vectors else None
        weights = np.array(term_idf) / sum(term_idf) if term_idf else None
        for text, context in passages:
            whole, heading, sentence_matrix, stems = self._passage(text, context)
            by_sentence = sentence_matrix @ q.sentence
            f = {"cos_passage": float(whole.sentence @ q.sentence),
                 "cos_sentence": float(by_sentence.max()),
                 "cos_heading": float(heading.sentence @ q.sentence),
                 "key_terms_log": math.log1p(len(term_stems))}
            if tv is None:
                f.update(lex_cov=1.0, sem_cov=1.0, sem_min=1.0, weak_share=0.0, fused_lex_cov=1.0, heading_cov=1.0)
            else:
                lexical = np.array([1.0 if s in stems else 0.0 for s in term_stems])
                sims = (tv @ whole.vectors.T).max(axis=1)
                match = np.maximum(lexical, sims)
                f.update(lex_cov=float(lexical @ weights), sem_cov=float(sims @ weights), sem_min=float(match.min()),
                         weak_share=float(weights[match < 0.6].sum()), fused_lex_cov=float(match @ weights),
                         heading_cov=float((tv @ heading.vectors.T).max(axis=1) @ weights))
            rows.append(f)
        # Relative to the other candidates of the same question: the best of a search is usually the
        # answer when any is (the absolute features catch the questions that none answers).
        for name, base in (("rel_cos_sentence", "cos_sentence"), ("rel_cos_passage", "cos_passage"),
                           ("rel_fused_cov", "fused_lex_cov")):
            top = max(r[base] for r in rows)
            for r in rows:
                r[name] = r[base] - top
        # Whether it is THE best candidate by each signal (ties: the first in rank order): the answer is
        # usually one passage, and which one beats a margin that varies with the question's wording.
        for name, base in (("top_cos_sentence", "cos_sentence"), ("top_fused_cov", "fused_lex_cov"),
                           ("top_cos_passage", "cos_passage")):
            best = best_index([r[base] for r in rows])
            for i, r in enumerate(rows):
                r[name] = 1.0 if i == best else 0.0
        return rows

    def inputs(self, question: str, passages: list[tuple[str, str]]) -> np.ndarray:
        """(candidates, inputs): the named features in FEATURES order."""
        if not passages:
            return np.zeros((0, len(FEATURES)))
        return np.array([[r[n] for n in FEATURES] for r in self.features(question, passages)])

    def score(self, question: str, passages: list[tuple[str, str]]) -> list[float]:
        if not passages:
            return []
        return [round(float(p), 4) for p in self.weights.probabilities(self.inputs(question, passages))]

    def judge(self, question: str, passages: list[tuple[str, str]]) -> list[tuple[float, bool]]:
        """(probability, relevant) per passage, relevant as relevant_flags decides."""
        scores = self.score(question, passages)
        return list(zip(scores, relevant_flags(scores, self.threshold, self.best_threshold), strict=True))
