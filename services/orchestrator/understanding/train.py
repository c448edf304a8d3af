"""Trains the understanding heads (data/model.json) on CPU in about a minute:

    OPENBLAS_NUM_THREADS=1 .venv/bin/python -m services.orchestrator.understanding.train

Data (all in the repo, tune halves only; the test halves are never read here):
  - data/boundary_labelled.yaml, split tune: emergency / clinical / logistics questions, mixed
    questions with a label per part;
  - data/intent_labelled.yaml, split tune: intents (and every one of them is a logistics question
    for the boundary head);
  - data/medquad_train.jsonl: 1,620 MedQuAD questions (CC BY 4.0, Ben Abacha & Demner-Fushman 2019,
    github.com/abachaa/MedQuAD) drawn from ../shared/data/medquad/questions.jsonl.gz with every
    question of sample-1000.jsonl (the external check) and every non-clinical or visit-preparation
    focus left out; at most 45 per qtype, one per focus; label clinical.

Heads: multinomial logistic regression (boundary) and one logistic regression per intent over the
encoder's clause vector (encoder.py), L2-regularised, class-weighted, full-batch Adam in numpy.
Thresholds: chosen on out-of-fold predictions over the tune half (5 folds) with the rules applied
exactly as analysis.py applies them: the lowest emergency threshold that keeps the logistics cost
within a logistics budget, then the lowest boundary threshold within the overall budget (recall
first, inside the cost the issue allows)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import sys
from pathlib import Path

import numpy as np
import yaml
from citetrace.identity import sha256_file

from services.orchestrator.core.text import fold, normalize, split_clauses
from services.orchestrator.understanding.analysis import clause_spans, decide_intents
from services.orchestrator.understanding.encoder import Encoded, QuestionEncoder
from services.orchestrator.understanding.features import FEATURE_SPEC, clause_vector
from services.orchestrator.understanding.model import BOUNDARY_CLASSES, INTENTS, MODEL_FILE, encode_matrix
from services.orchestrator.understanding.rules import load_rules

DATA = Path(__file__).resolve().parent / "data"
BOUNDARY_SET = DATA / "boundary_labelled.yaml"
INTENT_SET = DATA / "intent_labelled.yaml"
MEDQUAD_TRAIN = DATA / "medquad_train.jsonl"
MODEL_VERSION = "understanding-2026-12-02.1"
# What a logistics question of the boundary set is about, from its tag (adds intent examples).
TAG_INTENT = {"booking": "availability", "cancel": "cancellation_rescheduling", "arrival": "arrival_preparation",
              "other": "other", "provider": "provider_information"}
# Out-of-fold share of the tune half's logistics questions the thresholds may send to the emergency
# path / to any boundary (the budget is 5% on the test half; this keeps a margin).
EMERGENCY_LOGISTICS_BUDGET = 0.01
LOGISTICS_BUDGET = 0.035
FOLDS = 5


@dataclasses.dataclass
class Example:
    """One labelled text: its encoding and (span, label) pairs to learn from."""

    key: str
    text: str
    spans: list[tuple[int, int, str]]
    lang: str = "en"
    encoded: Encoded | None = None


def load_yaml_items(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["items"]


def boundary_examples(items: list[dict]) -> list[Example]:
    out = []
    for item in items:
        if item["label"] == "mixed":
            parts = [(normalize(p["text"]), p["label"]) for p in item["parts"]]
            text = " ".join(t for t, _ in parts)
            spans, cursor = [], 0
            for part, label in parts:
                at = text.find(part, cursor)
                spans.append((at, at + len(part), label))
                cursor = at + len(part)
            out.append(Example(item["id"], text, spans, item["lang"]))
        else:
            text = normalize(item["text"])
            out.append(Example(item["id"], text, [(0, len(text), item["label"])], item["lang"]))
    return out


def softmax_train(x: np.ndarray, y: np.ndarray, classes: int, sample_weight: np.ndarray | None = None,
                  l2: float = 1e-3, epochs: int = 500, lr: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression; each class carries the same total weight, shared inside a
    class by `sample_weight` (MedQuAD's templates weigh less than natural questions)."""
    sample_weight = np.ones(len(y)) if sample_weight is None else sample_weight
    weights = np.zeros(len(y))
    for c in range(classes):
        members = y == c
        if members.any():
            weights[members] = sample_weight[members] / sample_weight[members].sum()
    w = np.zeros((classes, x.shape[1]), dtype=x.dtype)
    b = np.zeros(classes, dtype=x.dtype)
    onehot = np.eye(classes, dtype=x.dtype)[y]
    weights = weights.astype(x.dtype)
    m_w, v_w, m_b, v_b = (np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b))
    for step in range(1, epochs + 1):
        g = (_softmax(w, b, x) - onehot) * weights[:, None] / classes
        w, m_w, v_w = _adam(w, g.T @ x + l2 * w, m_w, v_w, step, lr)
        b, m_b, v_b = _adam(b, g.sum(axis=0), m_b, v_b, step, lr)
    return w, b


def sigmoid_train(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, epochs: int = 600,
                  lr: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """One independent logistic regression per column of y (0/1), positives weighted to balance."""
    labels = y.shape[1]
    w = np.zeros((labels, x.shape[1]), dtype=x.dtype)
    b = np.zeros(labels, dtype=x.dtype)
    pos = y.sum(axis=0)
    pos_weight = (len(y) - pos) / np.maximum(pos, 1)
    weights = np.where(y > 0, pos_weight, 1.0).astype(x.dtype)
    y = y.astype(x.dtype)
    m_w, v_w, m_b, v_b = (np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b))
    for step in range(1, epochs + 1):
        p = 1.0 / (1.0 + np.exp(-(x @ w.T + b)))
        g = (p - y) * weights / len(y)
        w, m_w, v_w = _adam(w, g.T @ x + l2 * w, m_w, v_w, step, lr)
        b, m_b, v_b = _adam(b, g.sum(axis=0), m_b, v_b, step, lr)
    return w, b


def _adam(param, grad, m, v, step, lr, beta1=0.9, beta2=0.999, eps=1e-8):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    m_hat = m / (1 - beta1 ** step)
    v_hat = v / (1 - beta2 ** step)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def _softmax(w, b, x):
    logits = x @ w.T + b
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


# Per-example weight inside its class: a MedQuAD template question counts this much of a written one.
MEDQUAD_WEIGHT = 0.05
INTENT_AS_LOGISTICS_WEIGHT = 0.5


def boundary_matrix(examples: list[Example]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows, labels, weights = [], [], []
    for ex in examples:
        weight = MEDQUAD_WEIGHT if ex.key.startswith("mq:") else (
            INTENT_AS_LOGISTICS_WEIGHT if ex.key.startswith("intent:") else 1.0)
        for start, end, label in ex.spans:
            rows.append(clause_vector(ex.encoded, start, end))
            labels.append(BOUNDARY_CLASSES.index(label))
            weights.append(weight)
    return np.array(rows), np.array(labels), np.array(weights)


@dataclasses.dataclass
class Observed:
    """Out-of-fold scores of one tune example under the inference procedure of analysis.py."""

    example: Example
    clauses: list[tuple[str, np.ndarray, bool, bool]]  # (gold label, probs, red flag, clinical rule)
    whole: np.ndarray
    whole_red_flag: bool


def observe(ex: Example, w: np.ndarray, b: np.ndarray, rules) -> Observed:
    clauses = split_clauses(ex.text) or [ex.text]
    spans = clause_spans(ex.text, clauses)
    out = []
    for clause, (start, end) in zip(clauses, spans, strict=True):
        # The gold label of a clause: the labelled span it overlaps most.
        gold = max(ex.spans, key=lambda s: min(end, s[1]) - max(start, s[0]))[2]
        probs = _softmax(w, b, clause_vector(ex.encoded, start, end)[None, :])[0]
        folded = fold(clause)
        out.append((gold, probs, rules.check_emergency(folded).hit is not None, rules.check_clinical(folded) is not None))
    whole = _softmax(w, b, clause_vector(ex.encoded)[None, :])[0]
    return Observed(ex, out, whole, len(clauses) > 1 and rules.check_emergency(fold(ex.text)).hit is not None)


def decide(obs: Observed, t_e: float, t_b: float) -> tuple[bool, list[str]]:
    """(question is an emergency, per-clause labels) as analysis.py decides (en/nb path)."""
    labels = []
    for _, p, red, clinical_rule in obs.clauses:
        if p[0] >= t_e or red:
            labels.append("emergency")
        elif p[0] + p[1] >= t_b or clinical_rule:
            labels.append("clinical")
        else:
            labels.append("logistics")
    emergency = "emergency" in labels or (len(obs.clauses) > 1 and (obs.whole[0] >= t_e or obs.whole_red_flag))
    return emergency, labels


def question_metrics(observed: list[Observed], t_e: float, t_b: float) -> dict[str, float]:
    """Question-level: emergency recall, clinical recall (a clinical clause got the boundary),
    logistics sent to the boundary (any clause)."""
    e_hit = e_n = c_hit = c_n = l_fp = l_n = 0
    for obs in observed:
        emergency, labels = decide(obs, t_e, t_b)
        golds = [g for g, *_ in obs.clauses]
        if "emergency" in golds:
            e_n += 1
            e_hit += emergency
        elif "clinical" in golds:
            c_n += 1
            c_hit += emergency or all(lab != "logistics" for g, lab in zip(golds, labels, strict=True) if g == "clinical")
        else:
            l_n += 1
            l_fp += emergency or any(lab != "logistics" for lab in labels)
    return {"emergency_recall": e_hit / max(e_n, 1), "clinical_recall": c_hit / max(c_n, 1),
            "logistics_to_boundary": l_fp / max(l_n, 1), "n": [e_n, c_n, l_n]}


def choose_thresholds(observed: list[Observed]) -> tuple[float, float, dict]:
    """The lowest thresholds (most recall) whose out-of-fold logistics cost stays in budget:
    the emergency threshold may send at most EMERGENCY_LOGISTICS_BUDGET of the logistics questions to
    the emergency path, then the boundary threshold at most LOGISTICS_BUDGET to any boundary. The
    rules count in both (they are applied exactly as at run time)."""
    grid = [round(x, 3) for x in np.arange(0.05, 0.991, 0.01)]
    t_e = min((t for t in grid if question_metrics(observed, t, 0.999)["logistics_to_boundary"]
               <= EMERGENCY_LOGISTICS_BUDGET), default=grid[-1])
    t_b = min((t for t in grid if t >= 0.5 and question_metrics(observed, t_e, t)["logistics_to_boundary"]
               <= LOGISTICS_BUDGET), default=grid[-1])
    return t_e, t_b, question_metrics(observed, t_e, t_b)


def intent_rows(intent_items: list[dict], boundary_items: list[dict]) -> list[tuple[str, tuple[str, ...], str]]:
    rows = [(normalize(i["text"]), tuple(i["intents"]), i["lang"]) for i in intent_items]
    for item in boundary_items:
        if item["label"] != "logistics":
            continue
        tags = [TAG_INTENT[t] for t in item.get("tags", []) if t in TAG_INTENT]
        if len(tags) == 1:
            rows.append((normalize(item["text"]), (tags[0],), item["lang"]))
    return rows


def intent_matrix(rows, encodings: dict[str, Encoded]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([clause_vector(encodings[text]) for text, _, _ in rows])
    y = np.array([[1.0 if name in intents else 0.0 for name in INTENTS] for _, intents, _ in rows])
    return x, y


def intent_predict(w, b, encoded: Encoded, accept: float, other_below: float) -> set[str]:
    """Per clause as analysis.py does (model only), the union over the question's clauses."""
    clauses = split_clauses(encoded.text) or [encoded.text]
    found: set[str] = set()
    for start, end in clause_spans(encoded.text, clauses):
        p = 1.0 / (1.0 + np.exp(-(w @ clause_vector(encoded, start, end) + b)))
        found.update(decide_intents(dict(zip(INTENTS, p.tolist(), strict=True)), accept, other_below))
    return found


def _load_cache(path: Path | None, model_id: str) -> dict[str, Encoded]:
    if path is None or not path.is_file():
        return {}
    import pickle

    cached = pickle.loads(path.read_bytes())  # noqa: S301 - a local file this script wrote
    return cached["encodings"] if cached.get("model_id") == model_id else {}


def _save_cache(path: Path | None, encodings: dict[str, Encoded], model_id: str) -> None:
    if path is not None:
        import pickle

        path.write_bytes(pickle.dumps({"model_id": model_id, "encodings": encodings}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MODEL_FILE)
    parser.add_argument("--cache-dir", type=Path, default=None, help="where the derived encoder graph lives")
    parser.add_argument("--features-cache", type=Path, default=None,
                        help="a pickle of encodings to reuse between runs (same encoder only)")
    args = parser.parse_args(argv)
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        print("set OPENBLAS_NUM_THREADS=1", file=sys.stderr)
    encoder = QuestionEncoder(args.cache_dir, intra_op_threads=2)
    encoder.warm_up()
    rules = load_rules()

    boundary_items = [i for i in load_yaml_items(BOUNDARY_SET) if i["split"] == "tune"]
    intent_items = [i for i in load_yaml_items(INTENT_SET) if i["split"] == "tune"]
    tune = boundary_examples(boundary_items)
    medquad = [json.loads(line) for line in MEDQUAD_TRAIN.read_text(encoding="utf-8").splitlines() if line.strip()]
    extra = [Example(f"mq:{m['file']}:{m['qid']}", normalize(m["question"]), [], "en") for m in medquad]
    for ex in extra:
        ex.spans = [(0, len(ex.text), "clinical")]
    intents_rows = intent_rows(intent_items, boundary_items)
    logistics_extra = [Example(f"intent:{i}", text, [(0, len(text), "logistics")], lang)
                       for i, (text, _, lang) in enumerate(intents_rows)
                       if text not in {ex.text for ex in tune}]
    encodings: dict[str, Encoded] = _load_cache(args.features_cache, encoder.model_id)
    everything = tune + extra + logistics_extra
    print(f"encoding {len(everything)} texts ...", file=sys.stderr)
    for ex in everything:
        if ex.text not in encodings:
            encodings[ex.text] = encoder.encode(ex.text)
        ex.encoded = encodings[ex.text]
    _save_cache(args.features_cache, encodings, encoder.model_id)

    # Out-of-fold predictions on the tune half for the thresholds.
    observed: list[Observed] = []
    for fold_index in range(FOLDS):
        held = [ex for i, ex in enumerate(tune) if i % FOLDS == fold_index]
        train = [ex for i, ex in enumerate(tune) if i % FOLDS != fold_index] + extra + logistics_extra
        x, y, sw = boundary_matrix(train)
        w, b = softmax_train(x, y, len(BOUNDARY_CLASSES), sw)
        observed += [observe(ex, w, b, rules) for ex in held if ex.lang in ("en", "nb")]
    t_e, t_b, cv = choose_thresholds(observed)
    print(f"boundary thresholds: emergency {t_e}, boundary {t_b}; out-of-fold {cv}", file=sys.stderr)

    # Intents: thresholds out of fold as well.
    oof: list[tuple[dict[str, float], set[str], Encoded, int]] = []
    fold_heads = []
    for fold_index in range(FOLDS):
        train_rows = [r for i, r in enumerate(intents_rows) if i % FOLDS != fold_index]
        x, y = intent_matrix(train_rows, encodings)
        fold_heads.append(sigmoid_train(x, y))
    best = (-1.0, 0.5, 0.2)
    intent_eval = [(i % FOLDS, encodings[text], set(intents)) for i, (text, intents, _) in enumerate(intents_rows[:len(intent_items)])]
    for accept in (0.5, 0.6, 0.7, 0.8, 0.9):
        for other_below in (0.05, 0.1, 0.2, 0.3, 0.4):
            correct = sum(intent_predict(*fold_heads[f], enc, accept, other_below) == gold for f, enc, gold in intent_eval)
            acc = correct / len(intent_eval)
            if acc > best[0]:
                best = (acc, accept, other_below)
    print(f"intent thresholds: accept {best[1]}, other_below {best[2]}; out-of-fold exact-set accuracy {best[0]:.3f}",
          file=sys.stderr)
    del oof

    # Final heads on everything.
    x, y, sw = boundary_matrix(tune + extra + logistics_extra)
    bw, bb = softmax_train(x, y, len(BOUNDARY_CLASSES), sw)
    xi, yi = intent_matrix(intents_rows, encodings)
    iw, ib = sigmoid_train(xi, yi)
    model = {
        "version": MODEL_VERSION,
        "trained_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "encoder": {"model_id": encoder.model_id, "derived_sha256": encoder.derived_sha256},
        "features": {"spec": FEATURE_SPEC},
        "data": {
            "boundary_labelled": {"sha256": sha256_file(BOUNDARY_SET), "tune_examples": len(tune)},
            "intent_labelled": {"sha256": sha256_file(INTENT_SET), "tune_examples": len(intent_items)},
            "medquad_train": {"sha256": sha256_file(MEDQUAD_TRAIN), "examples": len(extra)},
            "logistics_from_intent_rows": len(logistics_extra),
        },
        "boundary": {
            "classes": list(BOUNDARY_CLASSES),
            "w": encode_matrix(bw), "b": np.round(bb, 6).tolist(),
            # The fallback threshold is not tuned (no data): half the emergency threshold, on purpose.
            "thresholds": {"emergency": t_e, "boundary": t_b, "emergency_fallback": round(t_e / 2, 3)},
            "out_of_fold_tune": cv,
        },
        "intent": {
            "labels": list(INTENTS),
            "w": encode_matrix(iw), "b": np.round(ib, 6).tolist(),
            "thresholds": {"accept": best[1], "other_below": best[2]},
            "out_of_fold_tune_exact_set_accuracy": round(best[0], 4),
        },
    }
    args.out.write_text(json.dumps(model, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
