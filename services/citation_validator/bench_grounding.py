"""The support decision on WiCE test (human-labelled Wikipedia claims and the sources they cite),
side by side with the published rows of wice_published.json.

    python -m services.citation_validator.bench_grounding [--json bench/results/grounding.json]
    make bench-grounding

Protocol (the dataset's): oracle chunks, each chunk scored, a claim takes the maximum over its
chunks (and the most favourable verdict); positive class "supported" vs partially/not supported.
The shipped weights and thresholds are used as they are: they were chosen on WiCE dev only
(train.py); nothing here is tuned. Reported for the authors' 100-claim table and all 358 test
claims: F1(supported), precision, recall and accuracy with UNRESOLVED counted as not supported,
AUROC and the precision-recall curve of the score, hallucination precision/recall (a claim flagged
when the verdict is not SUPPORTED; positive = partially or not supported), the 3x3 table (gold
label x verdict) and CPU milliseconds per claim.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
ORDER = {"SUPPORTED": 2, "UNRESOLVED": 1, "UNSUPPORTED": 0}
GOLD = ("supported", "partially_supported", "not_supported")


def auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Mann-Whitney U statistic (ties count half)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))


def binary(predicted: np.ndarray, labels: np.ndarray) -> dict:
    tp = int((predicted & (labels == 1)).sum())
    fp = int((predicted & (labels == 0)).sum())
    fn = int((~predicted & (labels == 1)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"f1": round(f1, 4), "precision": round(precision, 4), "recall": round(recall, 4),
            "accuracy": round(float((predicted == (labels == 1)).mean()), 4), "tp": tp, "fp": fp, "fn": fn}


def pr_curve(labels: np.ndarray, scores: np.ndarray, points: int = 21) -> list[dict]:
    out = []
    for t in np.linspace(0, 1, points):
        m = binary(scores >= t, labels)
        out.append({"threshold": round(float(t), 3), "precision": m["precision"], "recall": m["recall"],
                    "f1": m["f1"]})
    return out


def block(claims: list[dict]) -> dict:
    labels = np.array([int(c["gold"] == "supported") for c in claims])
    scores = np.array([c["score"] for c in claims])
    supported = np.array([c["verdict"] == "SUPPORTED" for c in claims])
    table = {g: {v: 0 for v in ("SUPPORTED", "UNRESOLVED", "UNSUPPORTED")} for g in GOLD}
    for c in claims:
        table[c["gold"]][c["verdict"]] += 1
    flagged = ~supported
    hallucination = binary(flagged, 1 - labels)
    return {
        "claims": len(claims), "supported_gold": int(labels.sum()),
        "supported": binary(supported, labels),
        "auroc": round(auroc(labels, scores), 4),
        "hallucination": {"precision": hallucination["precision"], "recall": hallucination["recall"],
                          "f1": hallucination["f1"]},
        "verdict_table": table,
        "pr_curve": pr_curve(labels, scores),
    }


def published_rows(published: dict, table_ids: set[str]) -> dict:
    rows = {}
    for name, model in published["models"].items():
        rows[name] = {"label": model["label"], "f1": round(model["f1"], 4), "accuracy": round(model["accuracy"], 4),
                      "precision": round(model["precision"], 4), "recall": round(model["recall"], 4),
                      "auroc": round(model["auroc"], 4), "threshold_chosen_on": model["threshold_chosen_on"],
                      "claims": len(set(model["scores"]) & table_ids)}
    return rows


class FeatureCache:
    """The embedding features of each (claim, chunk), with the CPU milliseconds they took, kept between
    runs (file under the ignored .citetrace/cache/): a rerun after retraining (new weights, gates or
    thresholds) replays the shipped decision in a minute instead of re-encoding for most of an hour.
    The precise checks and the derived features are cheap and recomputed on every run; the key covers
    the texts and the names of the embedding features (a change of those misses the cache)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.items: dict[str, dict] = {}
        self.fresh = 0
        if path and path.is_file():
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                for line in handle:
                    item = json.loads(line)
                    self.items[item["key"]] = item

    @staticmethod
    def key(claim: str, text: str) -> str:
        from services.citation_validator.support.features import EMBEDDING_FEATURES

        blob = json.dumps([claim, text, EMBEDDING_FEATURES], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def decide(self, model, claim: str, text: str):
        """(decision, CPU ms of the feature extraction: measured now, or when the entry was made)."""
        from services.citation_validator.support import Evidence, checks
        from services.citation_validator.support.embedded import evidence_sentences
        from services.citation_validator.support.features import check_features, derived, vector

        evidence = [Evidence(text)]
        key = self.key(claim, text)
        cached = self.items.get(key)
        if cached is None:
            t0 = time.process_time()
            if not text.strip():
                return model.decide(claim, evidence), (time.process_time() - t0) * 1000
            p, report, features = model.score(claim, evidence)  # what decide() does, keeping the features
            decision = model.verdict(p, report, features)
            ms = (time.process_time() - t0) * 1000
            self.items[key] = {"key": key, "features": features, "cpu_ms": ms}
            self.fresh += 1
            return decision, ms
        sentences, context = evidence_sentences(evidence)
        report = checks.check(claim, sentences, context)
        features = {**cached["features"], **check_features(report)}
        features = {**features, **derived(features)}
        return model.verdict(model.weights.probability(vector(features)), report, features), cached["cpu_ms"]

    def save(self) -> None:
        if not self.path or not self.fresh:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(self.path, "wt", encoding="utf-8") as handle:
            for item in self.items.values():
                handle.write(json.dumps(item, ensure_ascii=False) + "\n")


def run(model, directory: Path | None = None, limit: int = 0, log=print, cache: Path | None = None) -> dict:
    from services.citation_validator.support.train import load_wice, wice_dir

    directory = directory or wice_dir()
    published = json.loads((directory / "wice_published.json").read_text(encoding="utf-8"))
    table_ids = set(next(iter(published["models"].values()))["scores"])
    rows = load_wice("wice_oracle_claim_test.jsonl.gz", directory)
    if limit:
        keep = sorted({r["meta"]["id"] for r in rows})[:limit]
        rows = [r for r in rows if r["meta"]["id"] in set(keep)]
    model.warm_up()
    features = FeatureCache(cache)
    claims: dict[str, dict] = {}
    cpu: dict[str, float] = {}
    started = time.monotonic()
    for i, row in enumerate(rows):
        cid = row["meta"]["id"]
        decision, ms = features.decide(model, row["claim"], "\n\n".join(row["evidence"]))
        cpu[cid] = cpu.get(cid, 0.0) + ms
        best = claims.get(cid)
        if best is None or (ORDER[decision.verdict], decision.score) > (ORDER[best["verdict"]], best["score"]):
            claims[cid] = {"id": cid, "gold": row["label"], "verdict": decision.verdict, "score": decision.score,
                           "reason": decision.reason}
        if (i + 1) % 200 == 0:
            log(f"  {i + 1}/{len(rows)} chunks ({time.monotonic() - started:.0f}s)")
            features.save()
    features.save()
    all_claims = sorted(claims.values(), key=lambda c: c["id"])
    table = [c for c in all_claims if c["id"] in table_ids]
    return {
        "schema": "citetrace.bench-grounding/v1",
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "load_average_1m": round(os.getloadavg()[0], 2)},
        "support_model": model.version,
        "data": "WiCE test, oracle chunks (claim = max over its chunks); thresholds from dev (train.py)",
        "table_100": block(table),
        "all_358": block(all_claims),
        "published_table_100": published_rows(published, table_ids),
        "cpu_ms_per_claim_median": round(statistics.median(cpu.values()), 2),
        "cpu_ms_per_chunk_mean": round(sum(cpu.values()) / max(len(rows), 1), 2),
        "chunks": len(rows),
        "chunks_encoded_this_run": features.fresh,
        "cpu_ms_note": "CPU of the feature extraction per chunk, measured when its features were computed",
        "seconds": round(time.monotonic() - started, 1),
        "claims": all_claims,
    }


def print_report(result: dict) -> None:
    t, a = result["table_100"], result["all_358"]
    print(f"WiCE test, {result['support_model']} (UNRESOLVED counts as not supported)")
    print(f"{'model':<28} {'F1':>6} {'P':>6} {'R':>6} {'acc':>6} {'AUROC':>6}   (100-claim table)")
    s = t["supported"]
    print(f"{'citetrace (shipped)':<28} {s['f1']:>6.3f} {s['precision']:>6.3f} {s['recall']:>6.3f} "
          f"{s['accuracy']:>6.3f} {t['auroc']:>6.3f}")
    for row in result["published_table_100"].values():
        print(f"{row['label'] + ' [published]':<28} {row['f1']:>6.3f} {row['precision']:>6.3f} {row['recall']:>6.3f} "
              f"{row['accuracy']:>6.3f} {row['auroc']:>6.3f}   threshold on {row['threshold_chosen_on']}")
    s = a["supported"]
    print(f"all {a['claims']} test claims: F1 {s['f1']:.3f} P {s['precision']:.3f} R {s['recall']:.3f} "
          f"acc {s['accuracy']:.3f} AUROC {a['auroc']:.3f}")
    for name, b in (("100-claim table", t), ("all claims", a)):
        h = b["hallucination"]
        print(f"hallucination detection ({name}): precision {h['precision']:.3f} recall {h['recall']:.3f}")
        print(f"  {'gold / verdict':<22} {'SUPPORTED':>10} {'UNRESOLVED':>10} {'UNSUPPORTED':>11}")
        for gold, row in b["verdict_table"].items():
            print(f"  {gold:<22} {row['SUPPORTED']:>10} {row['UNRESOLVED']:>10} {row['UNSUPPORTED']:>11}")
    print("precision-recall (all claims): " + ", ".join(
        f"t={p['threshold']:.2f} P={p['precision']:.2f} R={p['recall']:.2f}" for p in a["pr_curve"][::4]))
    print(f"CPU per claim (median, 3 chunks of ~19 sentences): {result['cpu_ms_per_claim_median']} ms; "
          f"{result['seconds']} s wall for {result['chunks']} chunks")


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=RESULTS / "grounding.json")
    parser.add_argument("--wice-dir", type=Path)
    parser.add_argument("--weights", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="only the first N claims (a smoke run)")
    parser.add_argument("--features-cache", type=Path, default=ROOT / ".citetrace" / "cache" / "grounding-features.jsonl.gz",
                        help="embedding features kept between runs ('' for none)")
    args = parser.parse_args(argv)
    from services.citation_validator.support.embedded import EmbeddedSupportModel

    result = run(EmbeddedSupportModel(args.weights), args.wice_dir, args.limit,
                 log=lambda m: print(m, file=sys.stderr), cache=args.features_cache if str(args.features_cache) else None)
    print_report(result)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"bench-grounding: wrote {args.json.relative_to(ROOT) if args.json.is_relative_to(ROOT) else args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
