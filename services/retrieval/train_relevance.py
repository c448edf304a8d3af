"""Trains the relevance model (relevance.py) on the labelled question-passage pairs and writes
model/relevance.json; reports the held-out half.

    python -m services.retrieval.train_relevance [--report-only] [--json bench/results/relevance.json]
    make train-relevance / make bench-relevance

Data: tests/relevance/relevance_labelled.yaml (written before tuning). Passages are resolved with the
retrieval chunker over deploy/samples/corpus (approved versions only). Tune = odd question ids, test
= even ones; the model and its threshold see only the tune half.

Operating point (tune half, 5-fold out-of-fold by question): the highest-recall threshold whose
precision is >= TARGET_PRECISION (a relevant passage wrongly dropped costs an abstention, an
irrelevant one kept costs a wrong answer: precision first).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LABELLED = ROOT / "tests" / "relevance" / "relevance_labelled.yaml"
CORPUS = ROOT / "deploy" / "samples" / "corpus"
WEIGHTS = HERE / "model" / "relevance.json"
TARGET_PRECISION = 0.90
C = 1.0


def corpus_passages() -> list[dict]:
    from services.retrieval.chunker import MarkdownChunker, normalize_text

    chunker = MarkdownChunker()
    out = []
    for path in sorted(CORPUS.rglob("*.md")):
        _, front, body = path.read_text(encoding="utf-8").split("---", 2)
        meta = yaml.safe_load(front)
        if meta.get("status", "approved") != "approved":
            continue
        text = normalize_text(body.lstrip("\n"))
        for chunk in chunker.chunk(text):
            out.append({"tenant": meta["tenant"], "document": meta["document_id"], "title": meta.get("title", ""),
                        "heading": chunk.heading_context, "text": text[chunk.start:chunk.end]})
    return out


def labelled_pairs() -> list[dict]:
    data = yaml.safe_load(LABELLED.read_text(encoding="utf-8"))
    passages = corpus_passages()

    def resolve(key: str) -> dict:
        ref = data["passages"][key]
        snippet = " ".join(ref["contains"].split())
        hits = [p for p in passages if p["document"] == ref["document"] and snippet in " ".join(p["text"].split())]
        if len(hits) != 1:
            raise SystemExit(f"{LABELLED}: passage {key} ({ref}) matches {len(hits)} approved passages, need 1")
        return hits[0]

    pairs = []
    for q in data["questions"]:
        split = "tune" if int(q["id"].lstrip("q")) % 2 == 1 else "test"
        for label, keys in ((1, q["relevant"]), (0, q["irrelevant"])):
            for key in keys:
                p = resolve(key)
                if p["tenant"] != q["tenant"]:
                    raise SystemExit(f"{LABELLED}: {q['id']} pairs a {q['tenant']} question with {key} of {p['tenant']}")
                pairs.append({"question_id": q["id"], "question": q["q"], "passage": key, "label": label,
                              "split": split, "text": p["text"], "context": f"{p['title']} {p['heading']}".strip()})
    return pairs


def featurise(pairs: list[dict], model) -> np.ndarray:
    """Features of every pair, each question's passages scored together (as one search's hits are)."""
    from services.retrieval.relevance import FEATURES

    by_question: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        by_question.setdefault(pair["question_id"], []).append(i)
    rows: list[list[float] | None] = [None] * len(pairs)
    for indexes in by_question.values():
        question = pairs[indexes[0]]["question"]
        feats = model.features(question, [(pairs[i]["text"], pairs[i]["context"]) for i in indexes])
        for i, f in zip(indexes, feats, strict=True):
            rows[i] = [f[n] for n in FEATURES]
    return np.array(rows)


def metrics(labels: np.ndarray, predicted: np.ndarray) -> dict:
    tp = int((predicted & (labels == 1)).sum())
    precision = tp / int(predicted.sum()) if predicted.any() else 1.0
    recall = tp / int(labels.sum()) if labels.any() else 1.0
    return {"precision": round(precision, 4), "recall": round(recall, 4),
            "f1": round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0,
            "pairs": int(len(labels)), "relevant": int(labels.sum())}


def part_metrics(pairs: list[dict], scores: np.ndarray, threshold: float, half: str) -> dict:
    by_question: dict[str, list[tuple[int, float]]] = {}
    for pair, score in zip(pairs, scores, strict=True):
        if pair["split"] == half:
            by_question.setdefault(pair["question_id"], []).append((pair["label"], float(score)))
    answerable = np.array([any(label for label, _ in rows) for rows in by_question.values()])
    goes_on = np.array([any(score >= threshold for _, score in rows) for rows in by_question.values()])
    offers_relevant = np.array([any(label and score >= threshold for label, score in rows)
                                for rows in by_question.values()])
    m = metrics(answerable.astype(int), goes_on)
    return {"questions": int(len(answerable)), "answerable": int(answerable.sum()),
            "goes_on_precision": m["precision"], "goes_on_recall": m["recall"],
            "unanswerable_abstained": f"{int((~goes_on & ~answerable).sum())}/{int((~answerable).sum())}",
            "answerable_offered_a_relevant_passage": f"{int((offers_relevant & answerable).sum())}/{int(answerable.sum())}"}


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report-only", action="store_true", help="evaluate the shipped weights, do not refit")
    parser.add_argument("--json", type=Path, help="write the report here")
    parser.add_argument("--version", default=f"relevance-{dt.date.today().isoformat()}")
    args = parser.parse_args(argv)
    from citetrace.embeddings import Embedder
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold
    from sklearn.preprocessing import StandardScaler

    from services.retrieval.relevance import FEATURES, RelevanceModel, RelevanceWeights

    pairs = labelled_pairs()
    embedder = Embedder()

    X = featurise(pairs, RelevanceModel(embedder))
    y = np.array([p["label"] for p in pairs])
    tune = np.array([p["split"] == "tune" for p in pairs])
    groups = [p["question_id"] for p in pairs]
    if args.report_only:
        weights = RelevanceWeights()
        threshold = weights.threshold
        scores = np.array([weights.probability(x) for x in X])
        version = weights.version
    else:
        oof = np.zeros(int(tune.sum()))
        Xt, yt = X[tune], y[tune]
        gt = [g for g, t in zip(groups, tune, strict=True) if t]
        for a, b in GroupKFold(5).split(Xt, yt, gt):
            scaler = StandardScaler().fit(Xt[a])
            lr = LogisticRegression(C=C, max_iter=5000).fit(scaler.transform(Xt[a]), yt[a])
            oof[b] = lr.predict_proba(scaler.transform(Xt[b]))[:, 1]
        threshold = 0.5
        best_recall = -1.0
        for t in sorted(set(np.round(oof, 4))):
            m = metrics(yt, oof >= t)
            if m["precision"] >= TARGET_PRECISION and m["recall"] > best_recall:
                threshold, best_recall = float(t), m["recall"]
        scaler = StandardScaler().fit(Xt)
        lr = LogisticRegression(C=C, max_iter=5000).fit(scaler.transform(Xt), yt)
        scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
        version = args.version
        body = {"version": version, "features": list(FEATURES), "mean": [round(float(v), 8) for v in scaler.mean_],
                "scale": [round(float(v), 8) for v in scale], "coef": [round(float(v), 8) for v in lr.coef_[0]],
                "intercept": round(float(lr.intercept_[0]), 8), "threshold": round(threshold, 4),
                "operating_point": f"highest tune-half out-of-fold recall with precision >= {TARGET_PRECISION}",
                "trained_on": f"{LABELLED.relative_to(ROOT)} (tune half: odd question ids), {int(tune.sum())} pairs",
                "trained_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        WEIGHTS.parent.mkdir(parents=True, exist_ok=True)
        WEIGHTS.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        scores = lr.predict_proba(scaler.transform(X))[:, 1]
    report = {"relevance_model": version, "threshold": threshold, "labelled_file": str(LABELLED.relative_to(ROOT)),
              "tune": {**metrics(y[tune], scores[tune] >= threshold),
                       "auroc": round(float(roc_auc_score(y[tune], scores[tune])), 4)},
              "test": {**metrics(y[~tune], scores[~tune] >= threshold),
                       "auroc": round(float(roc_auc_score(y[~tune], scores[~tune])), 4)},
              # The orchestrator's use (a policy part abstains when none of its hits is relevant), per
              # question over its labelled candidates: does the part go on (some candidate relevant)
              # exactly when the question is answerable, and is a truly relevant candidate among those offered?
              "part": {half: part_metrics(pairs, scores, threshold, half) for half in ("tune", "test")},
              "test_errors": [{"question": p["question"], "passage": p["passage"], "label": p["label"],
                               "score": round(float(s), 3)} for p, s, t in zip(pairs, scores, tune, strict=True)
                              if not t and (s >= threshold) != bool(p["label"])]}
    print(json.dumps({k: v for k, v in report.items() if k != "test_errors"}, indent=1))
    for err in report["test_errors"]:
        print(f"  test miss: {err}", file=sys.stderr)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
