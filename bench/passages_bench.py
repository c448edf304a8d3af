"""GetPassages in the retrieval core, in-process (issue 21 point 5): CPU per call and Python
function calls per call (the latter does not depend on the machine's load).

    .venv/bin/python bench/passages_bench.py [--docs 300] [--json bench/results/passages.json]

SciFact documents ingested into a fresh SQLite store (embedding cache shared with the other
benches), then --calls reads of 5 random passage IDs each, as the citation validator's reload
asks: the store read, verify_bundle of every version served, the records returned.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import pstats  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import retrieval_bench  # noqa: E402
import scifact_core  # noqa: E402
from citetrace.kit.auth import Principal  # noqa: E402

from services.retrieval import bootstrap  # noqa: E402
from services.retrieval.settings import Settings  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "passages.json")
    parser.add_argument("--cache", type=Path, default=REPO / ".citetrace" / "cache" / "embeddings.sqlite")
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    corpus, *_ = scifact_core.load_scifact(scifact_core.SCIFACT_DIR)
    with tempfile.TemporaryDirectory(prefix="citetrace-passages-bench-") as tmp:
        settings = Settings(port=0, metrics_port=-1, data_dir=Path(tmp), embedding_cache_path=args.cache.resolve())
        ingest = retrieval_bench.ingest_bulk(settings, corpus[: args.docs])
        service = bootstrap.build(settings)
        service.warm_up()
        core = service.core
        reader = Principal(retrieval_bench.TENANT, "bench", ("patient",))
        passage_ids = sorted(core._passages)  # every indexed passage of the tenant
        rng = random.Random(21)
        calls = [rng.sample(passage_ids, 5) for _ in range(args.calls)]
        for ids in calls[:20]:
            core.get_passages(reader, ids, [])
        cpu = []
        for _ in range(args.repeats):
            started = time.process_time()
            for ids in calls:
                core.get_passages(reader, ids, [])
            cpu.append((time.process_time() - started) / len(calls) * 1000)
        profile = cProfile.Profile()
        profile.enable()
        for ids in calls:
            core.get_passages(reader, ids, [])
        profile.disable()
        service.close()
    function_calls = pstats.Stats(profile).total_calls
    result = {"benchmark": "GetPassages in the retrieval core (5 passages per call)",
              "command": "bench/passages_bench.py", "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
              "load_average_1m": round(os.getloadavg()[0], 2), "docs": args.docs, "passages": len(passage_ids),
              "ingest": ingest, "calls": len(calls), "cpu_ms_per_call": round(statistics.median(cpu), 3),
              "cpu_ms_per_call_rounds": [round(c, 3) for c in cpu],
              "python_function_calls_per_call": round(function_calls / len(calls), 1)}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
