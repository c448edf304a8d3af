"""The trained heads of the understanding classifiers (data/model.json, written by train.py): a
softmax head for the clinical boundary and one sigmoid per intent, both linear over the clause's
feature vector (features.py: the encoder's mean-pooled clause vector and hashed n-grams; a file
without a feature spec is over the encoder's vector alone). Inference is one small matrix-vector
product in numpy.

The file records the encoder it was trained on (derived graph digest), the data it was trained on
(digests of the labelled sets), the thresholds chosen on the tune half, and a version that every
route decision and trace record names."""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
from pathlib import Path

import numpy as np

from services.orchestrator.understanding import features
from services.orchestrator.understanding.encoder import Encoded

MODEL_FILE = Path(__file__).resolve().parent / "data" / "model.json"
BOUNDARY_CLASSES = ("emergency", "clinical", "logistics")
INTENTS = ("availability", "arrival_preparation", "cancellation_rescheduling", "provider_information", "other")
#: The feature spec of a model file that names none: the encoder's mean-pooled clause vector.
MINILM_MEAN = "minilm-mean"
FEATURE_SPECS = (MINILM_MEAN, features.FEATURE_SPEC)


@dataclasses.dataclass(frozen=True)
class BoundaryThresholds:
    emergency: float  # p(emergency) at or above: emergency
    boundary: float  # p(emergency) + p(clinical) at or above: clinical (when not emergency)
    emergency_fallback: float  # unknown language: the lower emergency threshold


@dataclasses.dataclass(frozen=True)
class IntentThresholds:
    accept: float  # a second (third, ...) intent of a clause needs at least this
    other_below: float  # the best intent below this: the clause names no intent ("other")


@dataclasses.dataclass(frozen=True)
class Heads:
    version: str
    encoder_sha256: str
    boundary_w: np.ndarray  # (3, 384)
    boundary_b: np.ndarray  # (3,)
    boundary_thresholds: BoundaryThresholds
    intent_w: np.ndarray  # (5, 384)
    intent_b: np.ndarray  # (5,)
    intent_thresholds: IntentThresholds
    feature_spec: str = MINILM_MEAN

    def vector(self, encoded: Encoded, start: int = 0, end: int | None = None) -> np.ndarray:
        """The clause's feature vector under this model's feature spec."""
        if self.feature_spec == MINILM_MEAN:
            return encoded.pool(start, end)
        return features.clause_vector(encoded, start, end)

    def boundary_scores(self, vector: np.ndarray) -> dict[str, float]:
        logits = self.boundary_w @ vector + self.boundary_b
        logits = logits - logits.max()
        probs = np.exp(logits)
        probs /= probs.sum()
        return {name: float(p) for name, p in zip(BOUNDARY_CLASSES, probs, strict=True)}

    def intent_scores(self, vector: np.ndarray) -> dict[str, float]:
        logits = self.intent_w @ vector + self.intent_b
        probs = 1.0 / (1.0 + np.exp(-logits))
        return {name: float(p) for name, p in zip(INTENTS, probs, strict=True)}


def encode_matrix(matrix: np.ndarray) -> dict:
    """A weight matrix as {shape, float32 little-endian base64} (a list of 8,000+ columns per row would
    make the file several times larger)."""
    matrix = np.ascontiguousarray(matrix, dtype="<f4")
    return {"shape": list(matrix.shape), "f32_b64": base64.b64encode(matrix.tobytes()).decode("ascii")}


def _matrix(value) -> np.ndarray:
    if isinstance(value, dict):
        flat = np.frombuffer(base64.b64decode(value["f32_b64"]), dtype="<f4")
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
        boundary_thresholds=BoundaryThresholds(**boundary["thresholds"]),
        intent_w=_matrix(intent["w"]), intent_b=np.asarray(intent["b"], dtype=np.float32),
        intent_thresholds=IntentThresholds(**intent["thresholds"]),
        feature_spec=spec,
    )
    width = 384 if spec == MINILM_MEAN else 384 + features.NGRAM_DIM
    if heads.boundary_w.shape[1] != width or heads.intent_w.shape[1] != width:
        raise ValueError(f"model file's weights do not fit feature spec {spec} ({width} features)")
    return heads


@functools.lru_cache(maxsize=2)
def load_heads(path: Path = MODEL_FILE) -> Heads:
    return heads_from_dict(json.loads(path.read_text(encoding="utf-8")))
