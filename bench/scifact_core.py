"""SciFact (BEIR) benchmark of the retrieval core, in-process (no gRPC).

Measures nDCG@10 and recall@100 on the 300 TEST queries for BM25, vector, hybrid RRF and
hybrid normalised fusion; tunes BM25 k1/b and the fusion weights on TRAIN qrels only;
measures search latency (query embedding included) and raw embedding throughput.

    PYTHONPATH=libs:. .venv/bin/python bench/scifact_core.py [--data DIR] [--out FILE]

Corpus vectors are cached under .citetrace/cache/ (first run: several minutes on 2 cores).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see citetrace.embeddings

import argparse  # noqa: E402
import gzip  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytrec_eval  # noqa: E402
from citetrace.embeddings import KERNELS, Embedder, EmbeddingCache  # noqa: E402

from services.retrieval.index import (  # noqa: E402
    BM25Settings,
    EmbeddedIndex,
    FusionSettings,
    IndexedPassage,
    ScopeFilter,
    SearchQuery,
    fuse,
)

CORPUS_SHA256 = "dec31c8182f3d744c7d2c09423756fd1d17cbef75808db13ba01cc0aab4d1ac6"
TENANT = "scifact"
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
DEPTH = 100  # results per query: recall@100 needs 100
METRICS = {"ndcg_cut.10", "recall.100"}
BM25_GRID = [(k1, b) for k1 in (0.6, 0.8, 0.9, 1.0, 1.2, 1.5) for b in (0.3, 0.4, 0.5, 0.6, 0.75, 0.9)]
RRF_VECTOR_WEIGHTS = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)  # lexical weight 1
CONVEX_VECTOR_SHARES = tuple(round(0.05 * i, 2) for i in range(1, 20))  # lexical = 1 - share
THROUGHPUT_SAMPLE = 256
# The shared data sets sit beside the repository (../shared/data/<name>; for a git worktree, beside
# its main checkout); an environment variable (CITETRACE_SCIFACT_DIR for SciFact) points elsewhere.
REPO = Path(__file__).resolve().parents[1]


def _checkouts() -> list[Path]:
    """This checkout, and the main one when this is a linked worktree (.git is a file naming it)."""
    roots = [REPO]
    git = REPO / ".git"
    if git.is_file():
        gitdir = Path(git.read_text().split("gitdir:", 1)[-1].strip())
        if gitdir.parent.name == "worktrees":
            roots.append(gitdir.parent.parent.parent)
    return roots


def shared_data_dir(name: str, env: str) -> Path:
    if os.environ.get(env):
        return Path(os.environ[env])
    candidates = [root.parent / "shared" / "data" / name for root in _checkouts()]
    return next((c for c in candidates if c.exists()), candidates[0])


SCIFACT_DIR = shared_data_dir("scifact", "CITETRACE_SCIFACT_DIR")


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- data --------------------------------------------------------------------------------


def read_jsonl_gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    lines = path.read_text(encoding="utf-8").splitlines()[1:]  # header
    for line in lines:
        query_id, doc_id, score = line.split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def load_scifact(data: Path):
    with gzip.open(data / "corpus.jsonl.gz") as handle:
        raw = handle.read()
    if hashlib.sha256(raw).hexdigest() != CORPUS_SHA256:
        raise SystemExit(f"corpus at {data} does not match the README's sha256")
    corpus = read_jsonl_gz(data / "corpus.jsonl.gz")
    queries = {q["_id"]: q["text"] for q in read_jsonl_gz(data / "queries.jsonl.gz")}
    return corpus, queries, read_qrels(data / "qrels/train.tsv"), read_qrels(data / "qrels/test.tsv")


def document_text(doc: dict) -> str:
    return f"{doc['title']} {doc['text']}".strip()


# -- embedding ---------------------------------------------------------------------------


def embed_with_progress(
    cache: EmbeddingCache, embedder: Embedder, texts: list[str], label: str
) -> np.ndarray:
    chunk, parts, started = 256, [], time.perf_counter()
    for start in range(0, len(texts), chunk):
        parts.append(cache.embed_cached(embedder, texts[start : start + chunk]))
        done, elapsed = min(start + chunk, len(texts)), time.perf_counter() - started
        progress(f"{label}: {done}/{len(texts)} embedded ({elapsed:.0f}s)")
    return np.concatenate(parts) if parts else np.empty((0, embedder.dimension), np.float32)


def measure_throughput(embedder: Embedder, texts: list[str]) -> dict:
    started = time.perf_counter()
    embedder.embed(texts, batch_size=16)
    seconds = time.perf_counter() - started
    return {"docs": len(texts), "seconds": round(seconds, 3), "docs_per_s": round(len(texts) / seconds, 2)}


# -- evaluation --------------------------------------------------------------------------


def as_run(ranked_ids: list[str]) -> dict[str, float]:
    """pytrec_eval re-sorts by score (ties by doc id descending), so encode our order."""
    return {pid: float(len(ranked_ids) - i) for i, pid in enumerate(ranked_ids)}


def evaluate(qrels: dict, run: dict) -> dict[str, float]:
    per_query = pytrec_eval.RelevanceEvaluator(qrels, METRICS).evaluate(run)
    n = len(qrels)  # queries with no result count as 0
    return {
        "ndcg@10": round(sum(m["ndcg_cut_10"] for m in per_query.values()) / n, 4),
        "recall@100": round(sum(m["recall_100"] for m in per_query.values()) / n, 4),
    }


class Bench:
    def __init__(self, index: EmbeddedIndex, query_texts: dict, query_vectors: dict) -> None:
        self.index = index
        self.query_texts = query_texts
        self.query_vectors = query_vectors
        self.scope = ScopeFilter(TENANT, (), (), (), None, datetime.now(UTC))

    def query(self, qid: str, fusion: FusionSettings) -> SearchQuery:
        return SearchQuery(self.query_texts[qid], self.query_vectors[qid], self.scope, DEPTH, fusion)

    def run(self, qids, fusion: FusionSettings) -> dict:
        return {q: as_run([h.passage_id for h in self.index.search(self.query(q, fusion))]) for q in qids}

    def candidate_lists(self, qids) -> dict[str, tuple[list, list]]:
        """Each query's lexical and vector candidates, for re-fusing without re-searching."""
        lists = {}
        for q in qids:
            lex = self.index.search(self.query(q, FusionSettings(mode="lexical")))
            vec = self.index.search(self.query(q, FusionSettings(mode="vector")))
            lists[q] = (
                [(h.passage_id, h.lexical_score) for h in lex],
                [(h.passage_id, h.vector_score) for h in vec],
            )
        return lists


def fused_run(lists: dict, fusion: FusionSettings) -> dict:
    return {
        q: as_run([h.passage_id for h in fuse(lex, vec, fusion)[:DEPTH]]) for q, (lex, vec) in lists.items()
    }


# -- tuning (train qrels only) -----------------------------------------------------------


def tune_bm25(bench: Bench, train: dict) -> tuple[BM25Settings, list]:
    table = []
    for k1, b in BM25_GRID:
        bench.index.set_bm25(BM25Settings(k1=k1, b=b))
        scores = evaluate(train, bench.run(train, FusionSettings(mode="lexical")))
        table.append({"k1": k1, "b": b, **scores})
    best = max(table, key=lambda r: r["ndcg@10"])
    progress(f"BM25 tuned on train: k1={best['k1']} b={best['b']} nDCG@10={best['ndcg@10']}")
    return BM25Settings(k1=best["k1"], b=best["b"]), table


def tune_fusion(lists: dict, train: dict) -> dict[str, dict]:
    candidates = {
        "rrf": [
            FusionSettings(method="rrf", lexical_weight=1.0, vector_weight=w) for w in RRF_VECTOR_WEIGHTS
        ],
        "minmax": [
            FusionSettings(method="minmax", lexical_weight=round(1 - s, 2), vector_weight=s)
            for s in CONVEX_VECTOR_SHARES
        ],
        "zscore": [
            FusionSettings(method="zscore", lexical_weight=round(1 - s, 2), vector_weight=s)
            for s in CONVEX_VECTOR_SHARES
        ],
    }
    chosen = {}
    for method, settings_list in candidates.items():
        table = [(evaluate(train, fused_run(lists, s))["ndcg@10"], s) for s in settings_list]
        best_score, best = max(table, key=lambda t: t[0])  # first best: grid order breaks ties
        chosen[method] = {
            "settings": best,
            "train_ndcg@10": best_score,
            "grid": [
                {"lexical_weight": s.lexical_weight, "vector_weight": s.vector_weight, "ndcg@10": n}
                for n, s in table
            ],
        }
        progress(
            f"fusion {method} tuned on train: lexical {best.lexical_weight} vector {best.vector_weight} nDCG@10={best_score}"
        )
    return chosen


# -- latency -----------------------------------------------------------------------------


def percentiles(samples: list[float]) -> dict:
    ms = np.array(samples) * 1000
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "n": len(samples),
    }


def measure_latency(bench: Bench, embedder: Embedder, qids: list[str], fusion: FusionSettings) -> dict:
    for q in qids[:20]:  # warm caches and code paths
        bench.index.search(
            SearchQuery(
                bench.query_texts[q], embedder.embed_one(bench.query_texts[q]), bench.scope, 10, fusion
            )
        )
    end_to_end, embed_only, by_mode = [], [], {m: [] for m in ("lexical", "vector", "hybrid")}
    for q in qids:
        started = time.perf_counter()
        vector = embedder.embed_one(bench.query_texts[q])
        embedded = time.perf_counter()
        bench.index.search(SearchQuery(bench.query_texts[q], vector, bench.scope, 10, fusion))
        end_to_end.append(time.perf_counter() - started)
        embed_only.append(embedded - started)
        for mode in by_mode:
            query = SearchQuery(bench.query_texts[q], vector, bench.scope, 10, _with_mode(fusion, mode))
            started = time.perf_counter()
            bench.index.search(query)
            by_mode[mode].append(time.perf_counter() - started)
    return {
        "search_with_query_embedding": percentiles(end_to_end),
        "query_embedding_only": percentiles(embed_only),
        "search_only": {m: percentiles(s) for m, s in by_mode.items()},
    }


def _with_mode(fusion: FusionSettings, mode: str) -> FusionSettings:
    return FusionSettings(
        fusion.method, fusion.rrf_k, fusion.lexical_weight, fusion.vector_weight, fusion.candidate_k, mode
    )


# -- main --------------------------------------------------------------------------------


def build_index(corpus: list[dict], vectors: np.ndarray) -> tuple[EmbeddedIndex, float]:
    passages = [
        IndexedPassage(
            passage_id=doc["_id"], tenant_id=TENANT, document_id=doc["_id"], version_id="v1",
            source_class="paper", text=document_text(doc), roles=(), location_scope=(), intents=(),
            locale="en", status="approved", valid_from=EPOCH, vector=vector,
        )
        for doc, vector in zip(corpus, vectors, strict=True)
    ]  # fmt: skip
    index = EmbeddedIndex()
    started = time.perf_counter()
    report = index.upsert(passages)
    seconds = time.perf_counter() - started
    if report.errors or report.indexed != len(corpus):
        raise SystemExit(f"indexing failed: {report.errors[:3]}")
    return index, seconds


def check_targets(results: dict, latency: dict) -> dict:
    bm25, hybrid = results["bm25"]["ndcg@10"], results["hybrid_default_settings"]["ndcg@10"]
    return {
        "bm25_ndcg@10>=0.67": bm25 >= 0.67,
        "vector_ndcg@10>=0.64": results["vector"]["ndcg@10"] >= 0.64,
        "hybrid_default_ndcg@10>=0.72": hybrid >= 0.72,
        "hybrid_default_gain_over_bm25>=0.04": round(hybrid - bm25, 4) >= 0.04,
        "search_with_query_embedding_p50_ms<=10": latency["search_with_query_embedding"]["p50_ms"] <= 10,
    }


def defaults_record(tuned_bm25: BM25Settings, fusion_choice: dict) -> dict:
    best = max(fusion_choice.values(), key=lambda c: c["train_ndcg@10"])["settings"]
    return {
        "bm25": {"k1": BM25Settings().k1, "b": BM25Settings().b},
        "fusion": settings_record(FusionSettings()),
        "bm25_default_is_tuned": BM25Settings() == tuned_bm25,
        "fusion_default_is_best_on_train": settings_record(FusionSettings()) == settings_record(best),
    }


def settings_record(s: FusionSettings) -> dict:
    return {
        "method": s.method,
        "rrf_k": s.rrf_k,
        "lexical_weight": s.lexical_weight,
        "vector_weight": s.vector_weight,
        "candidate_k": s.candidate_k,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=SCIFACT_DIR,
    )
    parser.add_argument("--cache", type=Path, default=Path(".citetrace/cache/embeddings.sqlite"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/scifact_core.json"))
    parser.add_argument("--kernels", choices=KERNELS, default="float",
                        help="the embedding model's kernels (citetrace.embeddings): float as shipped, or integer")
    args = parser.parse_args()

    progress(f"loading SciFact from {args.data}")
    corpus, queries, train, test = load_scifact(args.data)
    train = {q: r for q, r in train.items() if q in queries}
    progress(f"{len(corpus)} documents, {len(train)} train queries, {len(test)} test queries")

    embedder = Embedder(max_tokens=256, kernels=args.kernels)
    embedder.warm_up()
    cache = EmbeddingCache(args.cache)
    texts = [document_text(d) for d in corpus]
    throughput = measure_throughput(embedder, texts[:THROUGHPUT_SAMPLE])
    progress(f"raw embedding throughput: {throughput['docs_per_s']} docs/s (256 tokens, batch 16)")
    doc_vectors = embed_with_progress(cache, embedder, texts, "corpus")
    qids = sorted(set(train) | set(test))
    query_vectors = dict(
        zip(qids, embed_with_progress(cache, embedder, [queries[q] for q in qids], "queries"), strict=True)
    )

    progress("indexing")
    index, index_seconds = build_index(corpus, doc_vectors)
    bench = Bench(index, queries, query_vectors)
    progress(f"indexed {index.count()} passages in {index_seconds:.1f}s")
    # Latency first, with the default settings the index was built with (tuning comes after
    # and never changes the defaults), before this process has been busy for minutes.
    progress("measuring latency on the test queries")
    load_before = os.getloadavg()[0]
    latency = measure_latency(bench, embedder, sorted(test), FusionSettings())
    latency["load_average_1m"] = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
    progress(f"search p50 {latency['search_with_query_embedding']['p50_ms']} ms (query embedding included)")
    progress(f"tuning BM25 on train ({len(BM25_GRID)} settings)")
    bm25, bm25_grid = tune_bm25(bench, train)
    index.set_bm25(bm25)
    progress("collecting train candidate lists for fusion tuning")
    fusion_choice = tune_fusion(bench.candidate_lists(train), train)

    progress("evaluating on test")
    runs = {
        "bm25": FusionSettings(mode="lexical"),
        "vector": FusionSettings(mode="vector"),
        "hybrid_rrf_equal_weights": FusionSettings(method="rrf", lexical_weight=1.0, vector_weight=1.0),
        "hybrid_rrf_tuned": fusion_choice["rrf"]["settings"],
        "hybrid_minmax_tuned": fusion_choice["minmax"]["settings"],
        "hybrid_zscore_tuned": fusion_choice["zscore"]["settings"],
        "hybrid_default_settings": FusionSettings(),
    }
    results = {
        name: {**evaluate(test, bench.run(test, s)), "settings": settings_record(s), "mode": s.mode}
        for name, s in runs.items()
    }
    for name, r in results.items():
        progress(f"test {name}: nDCG@10={r['ndcg@10']} recall@100={r['recall@100']}")

    report = {
        "benchmark": "BEIR SciFact test (300 queries), in-process retrieval core",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "PYTHONPATH=libs:. .venv/bin/python bench/scifact_core.py"
                   + ("" if args.kernels == "float" else f" --kernels {args.kernels} --out {args.out}"),
        "environment": {
            "python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(),
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
        },
        "corpus": {"documents": len(corpus), "text": "title + ' ' + text", "index_seconds": round(index_seconds, 2)},
        "embedding": {"model_id": embedder.model_id, "max_tokens": embedder.max_tokens, "throughput": throughput},
        "tuning_on_train": {
            "train_queries": len(train),
            "bm25": {"k1": bm25.k1, "b": bm25.b, "grid": bm25_grid},
            "fusion": {m: {"train_ndcg@10": c["train_ndcg@10"], **settings_record(c["settings"]), "grid": c["grid"]} for m, c in fusion_choice.items()},
        },
        "defaults": defaults_record(bm25, fusion_choice),
        "test": results,
        "targets_met": check_targets(results, latency),
        "latency": latency,
        "index_generation": index.generation(),
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    progress(f"wrote {args.out}")
    summary = {name: r["ndcg@10"] for name, r in results.items()}
    print(
        json.dumps(
            {"test_ndcg@10": summary, "latency": latency, "targets_met": report["targets_met"]}, indent=2
        )
    )


if __name__ == "__main__":
    main()
