"""Per-class precision/recall of the shipped support model on the project's labelled pairs
(tests/citation_validator/support_labelled.yaml; odd ids were used in training, even ids are held out),
and the CPU time per decision.

    python -m services.citation_validator.bench_support [--json OUT]     (make bench-support)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import time
from pathlib import Path

import yaml

from services.citation_validator.support import SUPPORTED, UNRESOLVED, UNSUPPORTED, Evidence, SupportModel

ROOT = Path(__file__).resolve().parents[2]
LABELLED = ROOT / "tests" / "citation_validator" / "support_labelled.yaml"
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


def evaluate(items: list[Item], model: SupportModel) -> tuple[dict, list[float]]:
    """Decisions by item id, and the CPU milliseconds of each (evidence cached as in the service)."""
    predictions, cpu_ms = {}, []
    for item in items:
        started = time.process_time()
        predictions[item.id] = model.decide(item.claim, [Evidence(t) for t in item.evidence])
        cpu_ms.append((time.process_time() - started) * 1000)
    return predictions, cpu_ms


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


def report(model: SupportModel, items: list[Item] | None = None) -> dict:
    items = items or load_labelled()
    model.warm_up()
    model.decide("warm up", [Evidence("warm up the caches")])
    predictions, cpu_ms = evaluate(items, model)
    _, warm_ms = evaluate(items, model)  # evidence already encoded: the steady state of a service
    return {
        "support_model": model.version,
        "labelled_file": str(LABELLED.relative_to(ROOT)),
        "tune": metrics([i for i in items if i.split == "tune"], predictions),
        "test": metrics([i for i in items if i.split == "test"], predictions),
        "all": metrics(items, predictions),
        "cpu_ms_per_claim_median_first_sight": round(statistics.median(cpu_ms), 2),
        "cpu_ms_per_claim_median_evidence_cached": round(statistics.median(warm_ms), 2),
        "errors": [{"id": i.id, "gold": i.label, "predicted": predictions[i.id].verdict,
                    "score": predictions[i.id].score, "reason": predictions[i.id].reason}
                   for i in items if predictions[i.id].verdict != i.label],
    }


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the report here as JSON")
    parser.add_argument("--weights", type=Path, help="another weights file than the shipped one")
    args = parser.parse_args(argv)
    from services.citation_validator.support.embedded import EmbeddedSupportModel

    result = report(EmbeddedSupportModel(args.weights))
    print(f"support model {result['support_model']} on {result['all']['n']} labelled pairs")
    for split in ("tune", "test", "all"):
        m = result[split]
        print(f"  {split:<5} n={m['n']:<3} accuracy {m['accuracy']:.3f} macro-F1 {m['macro_f1']:.3f} "
              f"unsupported->SUPPORTED {m['unsupported_called_supported']}")
        for cls in CLASSES:
            c = m[cls]
            print(f"        {cls:<12} precision {c['precision']:.3f} recall {c['recall']:.3f} "
                  f"(gold {c['gold']}, predicted {c['predicted']})")
    print(f"  CPU per claim (median): {result['cpu_ms_per_claim_median_first_sight']} ms first sight, "
          f"{result['cpu_ms_per_claim_median_evidence_cached']} ms with the evidence cached")
    for err in result["errors"]:
        print(f"  miss {err['id']}: gold {err['gold']} -> {err['predicted']} ({err['score']}): {err['reason']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
