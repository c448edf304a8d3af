"""Trains the lead claim's veto (lead.py) on the relevance labelled set and writes model/lead.json;
reports the test and held-out halves.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/train_lead.py [--report-only] [--json bench/results/lead.json]
    make train-lead / make bench-lead

A script beside the benchmarks, not a module of the generation service: it reads the labelled set
through retrieval's loader (services/retrieval/train_relevance.py), and a service never imports
another service.

Data: the relevance labelled questions (tests/relevance/, read by services/retrieval/train_relevance.py:
tune = relevance_labelled.yaml's odd ids and tune/, test = its even ids, heldout/ only reported). Each
question is offered its labelled passages (relevant and hard irrelevant ones of the same tenant, in a
fixed shuffled order, as `handbook` passages and intent OTHER); every one of the extractive backend's
first six candidates is an example, right when its passage is a relevant one.

Operating point (tune half, 5-fold out of fold by question): the highest threshold at which the rule
with the veto still leads with a relevant passage for at least KEEP of the questions the rule alone
does (an answer lost costs an abstention, a wrong lead kept costs a wrong answer; the veto exists to
remove wrong leads, not to trade away right ones).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from services.generation.core import GenerationRequest, OfferedPassage  # noqa: E402

WEIGHTS = REPO / "services" / "generation" / "model" / "lead.json"
KEEP = 0.99
# The confident operating point (GenerateRequest.confident_only, for a reading of the question the
# caller is not sure it asked): the lowest threshold whose tune out-of-fold leads are right at least
# this often. A wrong answer to a question that may not have been asked costs more than the answer.
CONFIDENT_PRECISION = 0.8
CONFIDENT_POINT = f"the lowest threshold whose tune out-of-fold lead precision is >= {CONFIDENT_PRECISION}"
TOP = 6
C = 1.0


def labelled_questions() -> list[dict]:
    """Every labelled question with its passages (shuffled by its id), split as the relevance set."""
    from services.retrieval.train_relevance import labelled_pairs

    grouped: dict[str, dict] = {}
    for pair in labelled_pairs(("tune", "test", "heldout")):
        q = grouped.setdefault(pair["question_id"], {"id": pair["question_id"], "question": pair["question"],
                                                     "split": pair["split"], "passages": []})
        q["passages"].append(pair)
    for q in grouped.values():
        random.Random(q["id"]).shuffle(q["passages"])
    return list(grouped.values())


def offered(q: dict) -> tuple[OfferedPassage, ...]:
    return tuple(OfferedPassage(f"S{i}", p["passage"], p["text"], "handbook", p["context"], "")
                 for i, p in enumerate(q["passages"], start=1))


def examples(backend, gate, questions: list[dict]) -> list[dict]:
    """Per question: its first TOP candidates' features, labels and whether the rule admits each."""
    from services.generation import relevance

    out = []
    for q in questions:
        request = GenerationRequest(q["question"], "OTHER", offered(q))
        candidates = [item for item in backend.candidates(request) if not item[1].only_in_list]  # never leads
        rows = []
        amount = backend.amount_asked(request)
        if candidates:
            best = max(c.score for _, c in candidates)
            terms = gate.terms(backend.meaning_question(request), backend.lead_key_terms(request))
            for rank, (_, c) in enumerate(candidates[:TOP]):
                rows.append({"x": gate.features(c, rank, best, terms),
                             "label": q["passages"][int(c.labels[0][1:]) - 1]["label"],
                             "admitted": backend._answers(c, True, vacuous_ok=True),
                             "states_amount": bool(amount) and relevance.states_amount(c.text, amount)})
        out.append({"id": q["id"], "split": q["split"], "answerable": any(p["label"] for p in q["passages"]),
                    "rows": rows})
    return out


def leads(items: list[dict], probabilities: list[list[float]], threshold: float) -> dict:
    """The lead each question gets: the first admitted candidate whose probability reaches the
    threshold (0: the rule alone); right (a relevant passage), wrong, or abstained."""
    right = wrong = abstained = unanswerable_abstained = 0
    for item, probs in zip(items, probabilities, strict=True):
        may_lead = [r for r, p in zip(item["rows"], probs, strict=True) if r["admitted"] and p >= threshold]
        # As the extractive backend leads: a question that asks for an amount by the first unit that
        # may lead and states one, when there is one.
        lead = next((r for r in may_lead if r["states_amount"]), None) or next(iter(may_lead), None)
        if lead is None:
            abstained += 1
            unanswerable_abstained += not item["answerable"]
        elif lead["label"]:
            right += 1
        else:
            wrong += 1
    unanswerable = sum(not i["answerable"] for i in items)
    return {"questions": len(items), "lead_relevant": right, "lead_irrelevant": wrong, "abstained": abstained,
            "precision": round(right / (right + wrong), 3) if right + wrong else None,
            "unanswerable_abstained": f"{unanswerable_abstained}/{unanswerable}"}


def confident_point(tune: list[dict], oof_by_question: list[list[float]], threshold: float) -> float:
    """The lowest threshold from `threshold` up whose tune out-of-fold lead precision reaches
    CONFIDENT_PRECISION (0.95 when none does)."""
    for t in np.round(np.arange(threshold, 0.95, 0.01), 2):
        if (leads(tune, oof_by_question, float(t))["precision"] or 0.0) >= CONFIDENT_PRECISION:
            return float(t)
    return 0.95


def new_model():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))


def stacked(items: list[dict]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rows = [(r["x"], r["label"], i["id"]) for i in items for r in i["rows"]]
    return np.array([x for x, _, _ in rows]), np.array([y for _, y, _ in rows]), [g for _, _, g in rows]


def per_question(items: list[dict], flat: np.ndarray) -> list[list[float]]:
    out, at = [], 0
    for item in items:
        out.append([float(p) for p in flat[at:at + len(item["rows"])]])
        at += len(item["rows"])
    return out


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report-only", action="store_true", help="evaluate the shipped weights, do not refit")
    parser.add_argument("--confident-only", action="store_true",
                        help="keep the shipped weights and threshold; set only their confident operating point")
    parser.add_argument("--json", type=Path, help="write the report here")
    parser.add_argument("--version", default=f"lead-{dt.date.today().isoformat()}")
    args = parser.parse_args(argv)
    from citetrace.embeddings import Embedder
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    from services.generation.extractive import ExtractiveBackend
    from services.generation.lead import FEATURES, LeadGate, LeadWeights
    from services.generation.semantic import EmbeddedUnitSimilarity

    embedder = Embedder(kernels="integer")  # the service's (semantic.EmbeddedUnitSimilarity's default)
    backend = ExtractiveBackend(similarity=EmbeddedUnitSimilarity(embedder))
    backend.warm_up()
    gate = LeadGate(embedder)
    items = examples(backend, gate, labelled_questions())
    halves = {half: [i for i in items if i["split"] == half] for half in ("tune", "test", "heldout")}
    X, y, groups = stacked(halves["tune"])
    oof = np.zeros(len(y))
    for a, b in GroupKFold(5).split(X, y, groups):
        oof[b] = new_model().fit(X[a], y[a]).predict_proba(X[b])[:, 1]
    oof_by_question = per_question(halves["tune"], oof)
    if args.report_only:
        weights = LeadWeights()
        threshold, confident, version = weights.threshold, weights.confident_threshold, weights.version
    elif args.confident_only:
        body = json.loads(WEIGHTS.read_text(encoding="utf-8"))
        threshold, version = float(body["threshold"]), args.version
        confident = confident_point(halves["tune"], oof_by_question, threshold)
        body.update({"version": version, "confident_threshold": confident,
                     "confident_operating_point": CONFIDENT_POINT, "confident_set_at":
                     dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
        WEIGHTS.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        weights = LeadWeights(WEIGHTS)
    else:
        rule_right = leads(halves["tune"], oof_by_question, 0.0)["lead_relevant"]
        threshold = 0.0
        for t in np.round(np.arange(0.05, 0.95, 0.01), 2):
            if leads(halves["tune"], oof_by_question, float(t))["lead_relevant"] >= KEEP * rule_right:
                threshold = float(t)
        confident = confident_point(halves["tune"], oof_by_question, threshold)
        model = new_model().fit(X, y)
        scaler, lr = model[0], model[1]
        scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
        version = args.version
        body = {"version": version, "features": list(FEATURES), "embedding_model": embedder.model_id,
                "model": f"logistic regression, C {C}", "mean": [float(f"{v:.7g}") for v in scaler.mean_],
                "scale": [float(f"{v:.7g}") for v in scale], "coef": [float(f"{v:.7g}") for v in lr.coef_[0]],
                "intercept": float(f"{lr.intercept_[0]:.7g}"), "threshold": threshold,
                "confident_threshold": confident, "confident_operating_point": CONFIDENT_POINT,
                "operating_point": f"the highest threshold whose tune out-of-fold relevant leads are >= {KEEP} of "
                                   "the rule's alone",
                "trained_on": f"the relevance labelled set's tune half, {len(y)} candidates of "
                              f"{len(halves['tune'])} questions",
                "trained_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        WEIGHTS.parent.mkdir(parents=True, exist_ok=True)
        WEIGHTS.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        weights = LeadWeights(WEIGHTS)
    report = {"lead_model": version, "threshold": threshold, "confident_threshold": confident, "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
              "command": "make train-lead", "tune_out_of_fold_auroc": round(float(roc_auc_score(y, oof)), 4),
              "halves": {"tune (out of fold)": {"rule": leads(halves["tune"], oof_by_question, 0.0),
                                                "rule_and_veto": leads(halves["tune"], oof_by_question, threshold),
                                                "confident": leads(halves["tune"], oof_by_question, confident)}}}
    for half in ("test", "heldout"):
        probs = [[weights.probability(r["x"]) for r in item["rows"]] for item in halves[half]]
        Xh, yh, _ = stacked(halves[half])
        report["halves"][half] = {"auroc": round(float(roc_auc_score(yh, [p for ps in probs for p in ps])), 4),
                                  "rule": leads(halves[half], probs, 0.0),
                                  "rule_and_veto": leads(halves[half], probs, threshold),
                                  "confident": leads(halves[half], probs, confident)}
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
