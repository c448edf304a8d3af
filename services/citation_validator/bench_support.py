"""Per-class precision/recall of the support decision on the labelled set, and the threshold
search that chose support_thresholds.yaml.

    python -m services.citation_validator.bench_support [--tune] [--no-embeddings] [--json OUT]

--tune grid-searches the thresholds on the "tune" half (odd ids) under the constraint that no
unsupported claim of the tune half is called SUPPORTED, maximising macro-F1; the "test" half
(even ids) is reported as held out. Without --tune the committed thresholds file is evaluated.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import sys
import time
from pathlib import Path

import yaml

from services.citation_validator.support import (
    SUPPORTED,
    UNRESOLVED,
    UNSUPPORTED,
    Evidence,
    Thresholds,
    decide,
)

ROOT = Path(__file__).resolve().parents[2]
LABELLED = ROOT / "tests" / "citation_validator" / "support_labelled.yaml"
THRESHOLDS = Path(__file__).resolve().parent / "support_thresholds.yaml"
CLASSES = (SUPPORTED, UNSUPPORTED, UNRESOLVED)


@dataclasses.dataclass(frozen=True)
class Item:
    id: str
    claim: str
    evidence: tuple[str, ...]
    label: str
    split: str


def load_labelled(path: Path = LABELLED) -> list[Item]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    passages = data["passages"]
    items = []
    for raw in data["items"]:
        split = "tune" if int(raw["id"].lstrip("l")) % 2 == 1 else "test"
        items.append(Item(raw["id"], raw["claim"], tuple(passages[k] for k in raw["evidence"]),
                          raw["label"].upper(), split))
    return items


def similarity_fn(enabled: bool):
    if not enabled:
        return None
    from services.citation_validator.similarity import Similarity

    sim = Similarity()
    sim.warm_up()
    return sim


def evaluate(items: list[Item], thresholds: Thresholds, similarity=None) -> dict:
    predictions = {}
    for item in items:
        decision = decide(item.claim, [Evidence(t) for t in item.evidence], thresholds, similarity)
        predictions[item.id] = decision
    return predictions


def metrics(items: list[Item], predictions: dict) -> dict:
    out: dict = {"n": len(items)}
    f1s = []
    for cls in CLASSES:
        tp = sum(1 for i in items if i.label == cls and predictions[i.id].verdict == cls)
        predicted = sum(1 for i in items if predictions[i.id].verdict == cls)
        gold = sum(1 for i in items if i.label == cls)
        precision = tp / predicted if predicted else 1.0
        recall = tp / gold if gold else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        f1s.append(f1)
        out[cls] = {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3),
                    "gold": gold, "predicted": predicted}
    out["macro_f1"] = round(sum(f1s) / len(f1s), 3)
    out["unsupported_called_supported"] = sum(
        1 for i in items if i.label == UNSUPPORTED and predictions[i.id].verdict == SUPPORTED)
    out["accuracy"] = round(sum(1 for i in items if predictions[i.id].verdict == i.label) / len(items), 3)
    return out


def tune(items: list[Item], base: Thresholds, similarity) -> Thresholds:
    tune_items = [i for i in items if i.split == "tune"]
    grid = {
        "supported_coverage": [0.8, 0.85, 0.9, 0.95, 1.0],
        "unsupported_coverage": [0.3, 0.4, 0.5, 0.6],
        "clause_coverage": [0.2, 0.34, 0.5],
        "assist_similarity": [0.75, 0.8, 0.85, 0.9, 1.01],
        "assist_coverage": [0.5, 0.6, 0.7, 0.8],
    }
    best, best_key = base, None
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        candidate = dataclasses.replace(base, **dict(zip(keys, values, strict=True)))
        if candidate.unsupported_coverage >= candidate.supported_coverage:
            continue
        m = metrics(tune_items, evaluate(tune_items, candidate, similarity))
        # Never call an unsupported claim supported; then macro-F1; then the stricter setting.
        key = (-m["unsupported_called_supported"], m["macro_f1"], candidate.supported_coverage,
               candidate.assist_similarity)
        if best_key is None or key > best_key:
            best, best_key = candidate, key
    return best


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", action="store_true", help="grid-search thresholds on the tune half and write them")
    parser.add_argument("--no-embeddings", action="store_true", help="lexical signals only")
    parser.add_argument("--json", type=Path, help="write the report here as JSON")
    parser.add_argument("--thresholds", type=Path, default=THRESHOLDS)
    args = parser.parse_args(argv)
    items = load_labelled()
    similarity = similarity_fn(not args.no_embeddings)
    thresholds = Thresholds.load(args.thresholds)
    if args.tune:
        started = time.perf_counter()
        thresholds = tune(items, thresholds, similarity)
        thresholds = dataclasses.replace(thresholds, version=time.strftime("support-thresholds-%Y.%m.%d"))
        print(f"tuned in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    started = time.perf_counter()
    predictions = evaluate(items, thresholds, similarity)
    per_claim_ms = (time.perf_counter() - started) * 1000 / len(items)
    report = {
        "thresholds": dataclasses.asdict(thresholds),
        "embeddings": similarity is not None,
        "tune": metrics([i for i in items if i.split == "tune"], predictions),
        "test": metrics([i for i in items if i.split == "test"], predictions),
        "all": metrics(items, predictions),
        "decision_ms_per_claim": round(per_claim_ms, 3),
        "errors": [
            {"id": i.id, "gold": i.label, "predicted": predictions[i.id].verdict, "reason": predictions[i.id].reason}
            for i in items if predictions[i.id].verdict != i.label
        ],
    }
    if args.tune:
        body = {**dataclasses.asdict(thresholds), "chosen_on": f"{LABELLED.relative_to(ROOT)} (tune half: odd ids)",
                "metrics": {"tune_macro_f1": report["tune"]["macro_f1"], "test_macro_f1": report["test"]["macro_f1"],
                            "embeddings": similarity is not None}}
        args.thresholds.write_text(
            "# Support-decision thresholds, chosen by `make bench-support-tune` on the labelled set.\n"
            + yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    print(f"support decision on {len(items)} labelled pairs (embeddings {'on' if similarity else 'off'}), "
          f"thresholds {thresholds.version}")
    for split in ("tune", "test", "all"):
        m = report[split]
        print(f"  {split:<5} n={m['n']:<3} accuracy {m['accuracy']:.3f} macro-F1 {m['macro_f1']:.3f} "
              f"unsupported->SUPPORTED {m['unsupported_called_supported']}")
        for cls in CLASSES:
            c = m[cls]
            print(f"        {cls:<12} precision {c['precision']:.3f} recall {c['recall']:.3f} "
                  f"(gold {c['gold']}, predicted {c['predicted']})")
    print(f"  decision latency {per_claim_ms:.2f} ms per claim")
    for err in report["errors"]:
        print(f"  miss {err['id']}: gold {err['gold']} -> {err['predicted']}: {err['reason']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
