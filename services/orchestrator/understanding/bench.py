"""`make bench-boundary`: the understanding classifiers on data they were not tuned on.

  - the test half of data/boundary_labelled.yaml: per-class precision/recall (question level), the
    issue's three targets, mixed questions (the logistics clause still proceeds), per language;
  - MedQuAD sample-1000.jsonl (../shared/data/medquad, never used in training): the share routed
    to the boundary, for the qtypes the README calls clinical (all but the seven it names as
    resource or fact questions: support groups, research, how can i learn more, brand names, brand
    names of combination products, storage and disposal, frequency), for all 39 qtypes, per qtype;
  - the test half of data/intent_labelled.yaml: exact-set intent accuracy per language, lexicon
    override on (as routed) and model alone;
  - CPU time of one route decision (process time, median), the route including the classifiers.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python -m services.orchestrator.understanding.bench --json bench/results/boundary.json
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from services.orchestrator.understanding.analysis import EMERGENCY, LOGISTICS, QuestionAnalyzer
from services.orchestrator.understanding.encoder import QuestionEncoder
from services.orchestrator.understanding.model import INTENTS, load_heads
from services.orchestrator.understanding.train import BOUNDARY_SET, DATA, INTENT_SET, load_yaml_items

BOUNDARY_HELDOUT = DATA / "boundary_heldout.yaml"
BOUNDARY_CHECK = DATA / "boundary_check_2026-12-06g.yaml"
BOUNDARY_CHECK_FEELINGS = DATA / "boundary_check_2026-12-07a.yaml"
BOUNDARY_CHECK_SPECIALTY = DATA / "boundary_check_2026-12-07b.yaml"
BOUNDARY_CHECK_PRICES = DATA / "boundary_check_2026-12-07c.yaml"

REPO = Path(__file__).resolve().parents[3]


def shared_data_dir() -> Path:
    """The shared data folder: $CITETRACE_SHARED_DATA, else the first `shared/data` beside the clone or
    beside one of its parent folders (a clone at /work/main and a worktree at /work/wt/x both find it)."""
    if os.environ.get("CITETRACE_SHARED_DATA"):
        return Path(os.environ["CITETRACE_SHARED_DATA"])
    for parent in REPO.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return REPO.parent / "shared" / "data"


MEDQUAD_DIR = shared_data_dir() / "medquad"
NOT_CLINICAL_QTYPES = ("support groups", "research", "how can i learn more", "brand names",
                       "brand names of combination products", "storage and disposal", "frequency")


def ratio(num: int, den: int) -> dict:
    return {"numerator": num, "denominator": den, "value": round(num / den, 4) if den else None}


def question_class(analysis) -> str:
    if analysis.emergency:
        return EMERGENCY
    return "clinical" if any(c.boundary != LOGISTICS for c in analysis.clauses) else LOGISTICS


def gold_class(item: dict) -> str:
    labels = [p["label"] for p in item["parts"]] if item["label"] == "mixed" else [item["label"]]
    return EMERGENCY if EMERGENCY in labels else "clinical" if "clinical" in labels else LOGISTICS


def boundary_report(analyzer: QuestionAnalyzer, items: list[dict]) -> tuple[dict, list[dict]]:
    classes = (EMERGENCY, "clinical", LOGISTICS)
    confusion = collections.Counter()
    by_lang: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    mixed_ok = mixed_n = 0
    boundary_hit = boundary_n = 0
    misses = []
    fallback_stated = fallback_n = 0
    for item in items:
        text = item.get("text") or " ".join(p["text"] for p in item["parts"])
        analysis = analyzer.analyze(text)
        got, gold = question_class(analysis), gold_class(item)
        lang = item["lang"] if item["lang"] in ("en", "nb") else "other"
        confusion[(gold, got)] += 1
        by_lang[lang][(gold, got)] += 1
        if gold != LOGISTICS:
            boundary_n += 1
            boundary_hit += got != LOGISTICS
        if item["label"] == "mixed" and gold == "clinical":
            mixed_n += 1
            # The logistics part must still be answered: some clause proceeds, and the clinical one does not.
            mixed_ok += (not analysis.emergency and any(c.in_scope for c in analysis.clauses)
                         and got == "clinical")
        if lang == "other":
            fallback_n += 1
            fallback_stated += analysis.fallback
        if got != gold:
            misses.append({"id": item["id"], "gold": gold, "got": got, "lang": item["lang"],
                           "tags": item.get("tags", [])})
    per_class = {}
    for c in classes:
        tp = confusion[(c, c)]
        pred = sum(v for (g, p), v in confusion.items() if p == c)
        true = sum(v for (g, p), v in confusion.items() if g == c)
        per_class[c] = {"precision": ratio(tp, pred), "recall": ratio(tp, true)}
    logistics_n = sum(v for (g, _), v in confusion.items() if g == LOGISTICS)
    logistics_fp = sum(v for (g, p), v in confusion.items() if g == LOGISTICS and p != LOGISTICS)
    clinical_n = sum(v for (g, _), v in confusion.items() if g == "clinical")
    clinical_boundary = sum(v for (g, p), v in confusion.items() if g == "clinical" and p != LOGISTICS)
    languages = {}
    for lang, counts in sorted(by_lang.items()):
        e_n = sum(v for (g, _), v in counts.items() if g == EMERGENCY)
        l_n = sum(v for (g, _), v in counts.items() if g == LOGISTICS)
        c_n = sum(v for (g, _), v in counts.items() if g == "clinical")
        languages[lang] = {
            "emergency_recall": ratio(counts[(EMERGENCY, EMERGENCY)], e_n),
            "clinical_to_boundary": ratio(sum(v for (g, p), v in counts.items() if g == "clinical" and p != LOGISTICS), c_n),
            "logistics_to_boundary": ratio(sum(v for (g, p), v in counts.items() if g == LOGISTICS and p != LOGISTICS), l_n),
        }
    report = {
        "questions": len(items),
        "per_class": per_class,
        "targets": {
            "emergency_recall": {**per_class[EMERGENCY]["recall"], "target": ">= 0.99"},
            "clinical_advice_recall": {**per_class["clinical"]["recall"], "target": ">= 0.97",
                                       "note": "clinical questions classified exactly as clinical advice"},
            "clinical_advice_to_boundary": {**ratio(clinical_boundary, clinical_n),
                                            "note": "clinical or emergency: both refuse the clinical clause"},
            "logistics_to_boundary": {**ratio(logistics_fp, logistics_n), "target": "<= 0.05"},
            # The same over en and nb-NO only: a logistics question in another language takes the
            # conservative fallback (the clinical boundary) by design, so those count against the
            # figure above and are reported here apart, not left out of it.
            "logistics_to_boundary_en_nb": ratio(
                sum(by_lang[lang][(LOGISTICS, p)] for lang in ("en", "nb") for p in classes if p != LOGISTICS),
                sum(by_lang[lang][(LOGISTICS, p)] for lang in ("en", "nb") for p in classes)),
        },
        "all_boundary_questions_to_boundary": ratio(boundary_hit, boundary_n),
        "mixed_logistics_clause_proceeds": ratio(mixed_ok, mixed_n),
        "unknown_language_fallback_stated": ratio(fallback_stated, fallback_n),
        "by_language": languages,
        "confusion": {f"{g}->{p}": v for (g, p), v in sorted(confusion.items())},
    }
    return report, misses


def medquad_report(analyzer: QuestionAnalyzer, path: Path) -> dict:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    per_qtype: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for row in rows:
        analysis = analyzer.analyze(row["question"])
        counts = per_qtype[row["qtype"]]
        counts[0] += not analysis.in_scope
        counts[1] += analysis.emergency
        counts[2] += 1
    clinical = [q for q in per_qtype if q not in NOT_CLINICAL_QTYPES]
    return {
        "file": str(path.name),
        "clinical_qtypes_counted": sorted(clinical),
        "not_counted_as_clinical": list(NOT_CLINICAL_QTYPES),
        "why": ("the README names these seven as resource pointers or general facts, not clinical advice; "
                "'when to contact a medical professional' is triage (clinical judgement) and inheritance, "
                "genetic changes and stages are counted as clinical, as the README does"),
        "clinical_to_boundary": {**ratio(sum(per_qtype[q][0] for q in clinical), sum(per_qtype[q][2] for q in clinical)),
                                 "target": ">= 0.97"},
        "all_qtypes_to_boundary": ratio(sum(v[0] for v in per_qtype.values()), sum(v[2] for v in per_qtype.values())),
        "emergency_or_overdose_to_emergency": ratio(
            sum(per_qtype[q][1] for q in ("emergency or overdose", "severe reaction")),
            sum(per_qtype[q][2] for q in ("emergency or overdose", "severe reaction"))),
        "per_qtype": {q: ratio(v[0], v[2]) for q, v in sorted(per_qtype.items())},
    }


def intent_report(analyzer: QuestionAnalyzer, items: list[dict], lexicon_analyzer: QuestionAnalyzer) -> dict:
    out = {}
    for name, which in (("routed", lexicon_analyzer), ("model_only", analyzer)):
        per_lang: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        per_intent = {i: collections.Counter() for i in INTENTS}
        for item in items:
            analysis = which.analyze(item["text"])
            got = {i for c in analysis.clauses for i in c.intents}
            gold = set(item["intents"])
            per_lang[item["lang"]][0] += got == gold
            per_lang[item["lang"]][1] += 1
            for intent in INTENTS:
                per_intent[intent]["tp"] += intent in got and intent in gold
                per_intent[intent]["pred"] += intent in got
                per_intent[intent]["true"] += intent in gold
        out[name] = {
            "exact_set_accuracy": {lang: ratio(*v) for lang, v in sorted(per_lang.items())},
            "per_intent": {i: {"precision": ratio(c["tp"], c["pred"]), "recall": ratio(c["tp"], c["true"])}
                           for i, c in per_intent.items()},
        }
    out["targets"] = {"en": ">= 0.92", "nb": ">= 0.85"}
    return out


def cpu_report(route, questions: list[str], repeats: int = 3) -> dict:
    samples = []
    for _ in range(repeats):
        for question in questions:
            started = time.process_time()
            route(question)
            samples.append((time.process_time() - started) * 1000.0)
    samples.sort()
    return {"median_ms": round(statistics.median(samples), 3), "p90_ms": round(samples[int(len(samples) * 0.9)], 3),
            "samples": len(samples), "target": "median <= 5 ms", "load_average": os.getloadavg()[0]}


def lexicon_matcher():  # the same override bootstrap.understanding wires
    from services.orchestrator.core import router

    lexicon = router.load_lexicon()
    return lambda clause, skip: router.detect_intents(clause, lexicon, skip)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="bench-boundary")
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "boundary.json")
    parser.add_argument("--medquad", type=Path, default=MEDQUAD_DIR / "sample-1000.jsonl")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--misses", action="store_true", help="also list the test questions decided wrongly")
    args = parser.parse_args(argv)
    encoder = QuestionEncoder(args.cache_dir)
    model_only = QuestionAnalyzer(encoder)
    routed = QuestionAnalyzer(encoder, lexicon=lexicon_matcher())
    routed.warm_up()
    test_boundary = [i for i in load_yaml_items(BOUNDARY_SET) if i["split"] == "test"]
    test_intents = [i for i in load_yaml_items(INTENT_SET) if i["split"] == "test"]
    boundary, misses = boundary_report(routed, test_boundary)
    # Held-out text by an independent author, reported apart and without its misses (kept unseen).
    heldout, _ = boundary_report(routed, load_yaml_items(BOUNDARY_HELDOUT))
    # A second independent author's check of played-down emergencies and alarming look-alikes (its
    # misses were read once; see the file's header), also never trained on.
    check, _ = boundary_report(routed, load_yaml_items(BOUNDARY_CHECK))
    # A third author's messages in feeling words (the half never trained on; see the file's header).
    feelings, _ = boundary_report(routed, load_yaml_items(BOUNDARY_CHECK_FEELINGS))
    # A fourth author's specialty red flags in patients' words (never trained on; see the file's header).
    specialty, _ = boundary_report(routed, load_yaml_items(BOUNDARY_CHECK_SPECIALTY))
    # A fifth author's money questions that name a procedure (never trained on; see the file's header).
    prices, _ = boundary_report(routed, load_yaml_items(BOUNDARY_CHECK_PRICES))
    result = {
        "generated_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "version": routed.version,
        "model": {"version": load_heads().version, "thresholds": vars(load_heads().boundary_thresholds)},
        "boundary_test_half": boundary,
        "boundary_heldout_2026_12_06": {"source": BOUNDARY_HELDOUT.name, **heldout},
        "boundary_check_2026_12_06g": {"source": BOUNDARY_CHECK.name, **check},
        "boundary_check_2026_12_07a": {"source": BOUNDARY_CHECK_FEELINGS.name, **feelings},
        "boundary_check_2026_12_07b": {"source": BOUNDARY_CHECK_SPECIALTY.name, **specialty},
        "boundary_check_2026_12_07c": {"source": BOUNDARY_CHECK_PRICES.name, **prices},
        "medquad": medquad_report(routed, args.medquad) if args.medquad.is_file() else {"missing": str(args.medquad)},
        "intents_test_half": intent_report(model_only, test_intents, routed),
        "route_cpu": cpu_report(routed.analyze, [i.get("text") or " ".join(p["text"] for p in i["parts"])
                                                 for i in test_boundary] + [i["text"] for i in test_intents]),
    }
    if args.misses:
        result["boundary_test_half"]["misses"] = misses
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    b, m, i = result["boundary_test_half"]["targets"], result["medquad"], result["intents_test_half"]["routed"]
    print(f"boundary test half: emergency recall {b['emergency_recall']['value']}, clinical recall "
          f"{b['clinical_advice_recall']['value']} (to boundary {b['clinical_advice_to_boundary']['value']}), "
          f"logistics to boundary {b['logistics_to_boundary']['value']} "
          f"(en+nb {b['logistics_to_boundary_en_nb']['value']})")
    h = result["boundary_heldout_2026_12_06"]["targets"]
    print(f"boundary held-out 2026-12-06 (independent author, never tuned on): emergency recall "
          f"{h['emergency_recall']['value']}, clinical recall {h['clinical_advice_recall']['value']} (to boundary "
          f"{h['clinical_advice_to_boundary']['value']}), logistics to boundary {h['logistics_to_boundary']['value']}")
    g = result["boundary_check_2026_12_06g"]["targets"]
    print(f"boundary check 2026-12-06g (independent author, never trained on): emergency recall "
          f"{g['emergency_recall']['value']}, clinical recall {g['clinical_advice_recall']['value']} (to boundary "
          f"{g['clinical_advice_to_boundary']['value']}), logistics to boundary {g['logistics_to_boundary']['value']}")
    f = result["boundary_check_2026_12_07a"]
    print(f"boundary check 2026-12-07a (feeling words, never trained on): emergency recall "
          f"{f['targets']['emergency_recall']['value']}, {_logistics_by_language(f)}")
    s = result["boundary_check_2026_12_07b"]
    print(f"boundary check 2026-12-07b (specialty red flags, never trained on): emergency recall "
          f"{s['targets']['emergency_recall']['value']}, clinical recall {s['targets']['clinical_advice_recall']['value']}, "
          f"{_logistics_by_language(s)}")
    p = result["boundary_check_2026_12_07c"]
    print(f"boundary check 2026-12-07c (prices of procedures, never trained on): emergency recall "
          f"{p['targets']['emergency_recall']['value']}, clinical to boundary "
          f"{p['targets']['clinical_advice_to_boundary']['value']}, {_logistics_by_language(p)}")
    if "clinical_to_boundary" in m:
        print(f"MedQuAD sample-1000: clinical qtypes to boundary {m['clinical_to_boundary']['value']}, "
              f"all qtypes {m['all_qtypes_to_boundary']['value']}")
    print(f"intents test half: en {i['exact_set_accuracy'].get('en', {}).get('value')}, "
          f"nb {i['exact_set_accuracy'].get('nb', {}).get('value')}")
    print(f"route CPU median {result['route_cpu']['median_ms']} ms; written {args.json}")
    return 0


def _logistics_by_language(report: dict) -> str:
    """A check set's routine messages sent to the boundary, in all and per language (en, nb)."""
    by = report["by_language"]
    return (f"logistics to boundary {report['targets']['logistics_to_boundary']['value']} "
            f"(en {by['en']['logistics_to_boundary']['value']}, nb {by['nb']['logistics_to_boundary']['value']})")


if __name__ == "__main__":
    sys.exit(main())
