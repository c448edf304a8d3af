"""Query embedding cost by kernels and threads (issue 21 point 5): CPU and wall time per query.

    .venv/bin/python bench/embedding_bench.py [--json bench/results/embedding-kernels.json]

The SciFact test queries (short questions, the Ask path's shape) embedded one at a time, as
retrieval's Search does with the query-vector cache off, by the float kernels as shipped and by
the integer kernels (citetrace.embeddings), with 1 and 2 ONNX Runtime intra-op threads. Medians of
--repeats rounds; the process's CPU time (all threads) per query and the wall time per query.
On a shared machine the wall figures carry the load; compare the ratios of one run.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import scifact_core  # noqa: E402
from citetrace.embeddings import KERNELS, Embedder  # noqa: E402


def measure(embedder: Embedder, queries: list[str], repeats: int) -> dict:
    for q in queries[:20]:
        embedder.embed([q])
    cpu, wall = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        for q in queries:
            embedder.embed([q])
        cpu.append((time.process_time() - c) / len(queries) * 1000)
        wall.append((time.perf_counter() - w) / len(queries) * 1000)
    return {"cpu_ms_per_query": round(statistics.median(cpu), 3), "wall_ms_per_query": round(statistics.median(wall), 3),
            "rounds_cpu_ms": [round(x, 3) for x in cpu]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "embedding-kernels.json")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    _corpus, queries, _train, test = scifact_core.load_scifact(scifact_core.SCIFACT_DIR)
    texts = [queries[q] for q in sorted(test)[: args.queries]]
    rows = []
    for threads in (1, 2):
        for kernels in KERNELS:
            embedder = Embedder(kernels=kernels, intra_op_threads=threads)
            embedder.warm_up()
            rows.append({"kernels": kernels, "threads": threads, "model_id": embedder.model_id,
                         **measure(embedder, texts, args.repeats)})
            print(rows[-1], file=sys.stderr, flush=True)
    base = next(r for r in rows if r["kernels"] == "float" and r["threads"] == 2)
    for row in rows:
        row["cpu_ratio_to_float_2_threads"] = round(row["cpu_ms_per_query"] / base["cpu_ms_per_query"], 3)
    result = {"benchmark": "query embedding by kernels and threads", "command": "bench/embedding_bench.py",
              "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "cores": os.cpu_count(),
              "load_average_1m": round(os.getloadavg()[0], 2), "queries": len(texts), "repeats": args.repeats,
              "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["rows"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
