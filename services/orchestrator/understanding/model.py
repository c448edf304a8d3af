"""The trained heads of the understanding classifiers (data/model.json, written by train.py): a
softmax head for the clinical boundary and one sigmoid per intent, each linear or with one ReLU
hidden layer, over the clause's feature vector (features.py: the encoder's mean- and max-pooled
clause vectors and hashed n-grams; a file without a feature spec is over the encoder's mean vector
alone). Inference is two or three small matrix-vector products in numpy.

The file records the encoder it was trained on (derived graph digest), the data it was trained on
(digests of the labelled sets), the thresholds chosen on the tune half, the router-lexicon entries
whose measured precision is too low to override the intent head, and a version that every route
decision and trace record names."""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from services.orchestrator.understanding import features
from services.orchestrator.understanding.encoder import Encoded

MODEL_FILE = Path(__file__).resolve().parent / "data" / "model.json"
BOUNDARY_CLASSES = ("emergency", "clinical", "logistics")
INTENTS = ("availability", "arrival_preparation", "cancellation_rescheduling", "provider_information", "other")
#: The feature spec of a model file that names none: the encoder's mean-pooled clause vector.
MINILM_MEAN = "minilm-mean"
FEATURE_SPECS = (MINILM_MEAN, features.MEAN_NGRAM_SPEC, features.MEAN_MAX_NGRAM_SPEC, features.FEATURE_SPEC)


@dataclasses.dataclass(frozen=True)
class BoundaryThresholds:
    emergency: float  # p(emergency) at or above: emergency
    boundary: float  # p(emergency) + p(clinical) at or above: clinical (when not emergency)
    emergency_fallback: float  # unknown language: the lower emergency threshold
    # Per trained language (code, emergency, boundary), each chosen on that language's tune half: the
    # heads' scores are not equally calibrated for en and for nb-NO, whose words the English encoder
    # reads as sub-word pieces. A language not listed takes the two above.
    languages: tuple[tuple[str, float, float], ...] = ()

    def for_language(self, code: str) -> tuple[float, float]:
        """(emergency, boundary) thresholds for a question identified as `code`."""
        for language, emergency, boundary in self.languages:
            if language == code:
                return emergency, boundary
        return self.emergency, self.boundary


@dataclasses.dataclass(frozen=True)
class IntentThresholds:
    accept: float  # a second (third, ...) intent of a clause needs at least this
    other_below: float  # the best intent below this: the clause names no intent ("other")


@dataclasses.dataclass(frozen=True)
class Heads:
    version: str
    encoder_sha256: str
    boundary_w: np.ndarray  # (3, features)
    boundary_b: np.ndarray  # (3,)
    boundary_thresholds: BoundaryThresholds
    intent_w: np.ndarray  # (5, features)
    intent_b: np.ndarray  # (5,)
    intent_thresholds: IntentThresholds
    feature_spec: str = MINILM_MEAN
    # The boundary head's hidden layer (features, hidden) and its bias, when it has one: the
    # boundary is then softmax(boundary_w @ relu(vector @ hidden_w + hidden_b) + boundary_b).
    boundary_hidden_w: np.ndarray | None = None
    boundary_hidden_b: np.ndarray | None = None
    # The intent heads' hidden layer, when they have one: sigmoid(intent_w @ relu(...) + intent_b).
    intent_hidden_w: np.ndarray | None = None
    intent_hidden_b: np.ndarray | None = None
    # Router-lexicon entries that may not override the intent heads: each matched the tune half's
    # questions often enough to measure and named a wrong intent too often ("bring" in "bring my
    # appointment forward", "dr" in "is Dr. Chen free on the 9th").
    lexicon_untrusted: frozenset[str] = frozenset()

    def read(self, text: str, encode: Callable[[str], Encoded], language_code: str | None = None) -> Encoded:
        """The question encoded as this model's features need it (with its gloss's encoding when
        the spec reads the gloss; `language_code`: the identifier's reading, when the caller has it)."""
        encoded = encode(text)
        if self.feature_spec != features.FEATURE_SPEC:
            return encoded
        return features.with_gloss(encoded, encode, language_code)

    def vector(self, encoded: Encoded, start: int = 0, end: int | None = None) -> np.ndarray:
        """The clause's feature vector under this model's feature spec."""
        if self.feature_spec == MINILM_MEAN:
            return encoded.pool(start, end)
        return features.clause_vector(encoded, start, end, self.feature_spec)

    def boundary_scores(self, vector: np.ndarray) -> dict[str, float]:
        if self.boundary_hidden_w is not None:
            vector = _relu_layer(vector, self.boundary_hidden_w, self.boundary_hidden_b)
        logits = self.boundary_w @ vector + self.boundary_b
        logits = logits - logits.max()
        probs = np.exp(logits)
        probs /= probs.sum()
        return {name: float(p) for name, p in zip(BOUNDARY_CLASSES, probs, strict=True)}

    def intent_scores(self, vector: np.ndarray) -> dict[str, float]:
        if self.intent_hidden_w is not None:
            vector = _relu_layer(vector, self.intent_hidden_w, self.intent_hidden_b)
        logits = self.intent_w @ vector + self.intent_b
        probs = 1.0 / (1.0 + np.exp(-logits))
        return {name: float(p) for name, p in zip(INTENTS, probs, strict=True)}


def _relu_layer(vector: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """relu(vector @ w + b) over only the rows of the vector's non-zero features: the n-gram view is
    ~1% non-zero, so this reads ~900 of the matrix's 8,960 rows (the same product; the whole 2.3 MB
    matrix, evicted from the cache by the encoder run before it, cost ~1 ms per call on a busy host)."""
    nonzero = np.flatnonzero(vector)
    return np.maximum(vector[nonzero] @ w[nonzero] + b, 0.0)


def encode_matrix(matrix: np.ndarray, half: bool = False) -> dict:
    """A weight matrix as {shape, float32 (or float16: `half`) little-endian base64} (a list of 8,000+
    columns per row would make the file several times larger). float16 is for the hidden layer's
    large matrix, whose rounding (3 decimal digits) is far below what moves a decision."""
    if half:
        matrix = np.ascontiguousarray(matrix, dtype="<f2")
        return {"shape": list(matrix.shape), "f16_b64": base64.b64encode(matrix.tobytes()).decode("ascii")}
    matrix = np.ascontiguousarray(matrix, dtype="<f4")
    return {"shape": list(matrix.shape), "f32_b64": base64.b64encode(matrix.tobytes()).decode("ascii")}


def _matrix(value) -> np.ndarray:
    if isinstance(value, dict):
        key, dtype = ("f16_b64", "<f2") if "f16_b64" in value else ("f32_b64", "<f4")
        flat = np.frombuffer(base64.b64decode(value[key]), dtype=dtype)
        return flat.reshape(value["shape"]).astype(np.float32)
    return np.asarray(value, dtype=np.float32)


def heads_from_dict(raw: dict) -> Heads:
    boundary, intent = raw["boundary"], raw["intent"]
    if tuple(boundary["classes"]) != BOUNDARY_CLASSES or tuple(intent["labels"]) != INTENTS:
        raise ValueError("model file names other classes than this code knows")
    spec = str(raw.get("features", {}).get("spec", MINILM_MEAN))
    if spec not in FEATURE_SPECS:
        raise ValueError(f"model file has feature spec {spec!r}; this code computes {', '.join(FEATURE_SPECS)}")
    heads = Heads(
        version=str(raw["version"]), encoder_sha256=str(raw["encoder"]["derived_sha256"]),
        boundary_w=_matrix(boundary["w"]), boundary_b=np.asarray(boundary["b"], dtype=np.float32),
        boundary_thresholds=_boundary_thresholds(boundary["thresholds"]),
        intent_w=_matrix(intent["w"]), intent_b=np.asarray(intent["b"], dtype=np.float32),
        intent_thresholds=IntentThresholds(**intent["thresholds"]),
        feature_spec=spec,
        boundary_hidden_w=_matrix(boundary["hidden"]["w"]) if "hidden" in boundary else None,
        boundary_hidden_b=np.asarray(boundary["hidden"]["b"], dtype=np.float32) if "hidden" in boundary else None,
        intent_hidden_w=_matrix(intent["hidden"]["w"]) if "hidden" in intent else None,
        intent_hidden_b=np.asarray(intent["hidden"]["b"], dtype=np.float32) if "hidden" in intent else None,
        lexicon_untrusted=frozenset(intent.get("lexicon_override", {}).get("untrusted", {})),
    )
    width = features.MINILM_DIM if spec == MINILM_MEAN else features.WIDTHS[spec]
    for name, out_w, hidden_w in (("boundary", heads.boundary_w, heads.boundary_hidden_w),
                                  ("intent", heads.intent_w, heads.intent_hidden_w)):
        if hidden_w is not None and out_w.shape[1] != hidden_w.shape[1]:
            raise ValueError(f"model file's {name} output layer does not fit its hidden layer")
        if (out_w.shape[1] if hidden_w is None else hidden_w.shape[0]) != width:
            raise ValueError(f"model file's {name} weights do not fit feature spec {spec} ({width} features)")
    return heads


def _boundary_thresholds(raw: dict) -> BoundaryThresholds:
    languages = tuple((code, float(t["emergency"]), float(t["boundary"]))
                      for code, t in sorted(raw.get("languages", {}).items()))
    return BoundaryThresholds(float(raw["emergency"]), float(raw["boundary"]), float(raw["emergency_fallback"]),
                              languages)


@functools.lru_cache(maxsize=2)
def load_heads(path: Path = MODEL_FILE) -> Heads:
    return heads_from_dict(json.loads(path.read_text(encoding="utf-8")))
