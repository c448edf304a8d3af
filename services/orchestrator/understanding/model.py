"""The trained heads of the understanding classifiers (data/model.json, written by train.py): a
softmax head for the clinical boundary and one sigmoid per intent, both linear over the encoder's
clause vector. Inference is a few hundred multiply-adds in numpy.

The file records the encoder it was trained on (derived graph digest), the data it was trained on
(digests of the labelled sets), the thresholds chosen on the tune half, and a version that every
route decision and trace record names."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import numpy as np

MODEL_FILE = Path(__file__).resolve().parent / "data" / "model.json"
BOUNDARY_CLASSES = ("emergency", "clinical", "logistics")
INTENTS = ("availability", "arrival_preparation", "cancellation_rescheduling", "provider_information", "other")


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


def heads_from_dict(raw: dict) -> Heads:
    boundary, intent = raw["boundary"], raw["intent"]
    if tuple(boundary["classes"]) != BOUNDARY_CLASSES or tuple(intent["labels"]) != INTENTS:
        raise ValueError("model file names other classes than this code knows")
    return Heads(
        version=str(raw["version"]), encoder_sha256=str(raw["encoder"]["derived_sha256"]),
        boundary_w=np.asarray(boundary["w"], dtype=np.float32), boundary_b=np.asarray(boundary["b"], dtype=np.float32),
        boundary_thresholds=BoundaryThresholds(**boundary["thresholds"]),
        intent_w=np.asarray(intent["w"], dtype=np.float32), intent_b=np.asarray(intent["b"], dtype=np.float32),
        intent_thresholds=IntentThresholds(**intent["thresholds"]),
    )


@functools.lru_cache(maxsize=2)
def load_heads(path: Path = MODEL_FILE) -> Heads:
    return heads_from_dict(json.loads(path.read_text(encoding="utf-8")))
