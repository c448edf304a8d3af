"""SciFact (BEIR) nDCG@10 with and without the embedded rerank stage (issue 15 point 3: the reranker
is the default only if it raises SciFact nDCG@10 and does not lower the eval).

    PYTHONPATH=libs:. .venv/bin/python bench/scifact_rerank.py [--train-queries N] [--out FILE]
    make bench-rerank

The retrieval core in-process, with the shipped defaults (BM25 k1/b and fusion of settings.py), as
the service runs it: the top RERANK_DEPTH fused candidates are reordered by
services/retrieval/rerank.EmbeddedRerank (the relevance model blended with the min-max scaled fused
score). The relevance probabilities are computed once per (query, candidate), so every blend weight
is scored from the same pass. The weight is chosen on TRAIN queries (a seeded sample; the first
--train-queries of them), nDCG@10 is reported on the 300 TEST queries for `none`, the shipped weight
and the train-chosen weight. The passage sides of every candidate are computed first, as the service
does when it indexes a passage (RelevanceModel.prepare, into a store kept under .citetrace/cache/, so a
rerun computes only what is new): CPU per passage side reported. Rerank CPU time per search: median
over the test queries (question encoding, features from the stored sides, blend), each search with an
empty in-memory cache (the sides read from the store, as after a restart).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from citetrace.embeddings import Embedder, EmbeddingCache  # noqa: E402
from scifact_core import (  # noqa: E402
    SCIFACT_DIR,
    Bench,
    as_run,
    build_index,
    document_text,
    embed_with_progress,
    evaluate,
    load_scifact,
    progress,
)

from services.retrieval.index import FusionSettings, SearchQuery  # noqa: E402
from services.retrieval.relevance import PassageSideStore, RelevanceModel  # noqa: E402
from services.retrieval.rerank import _minmax, reorder  # noqa: E402
from services.retrieval.settings import Settings  # noqa: E402

WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def fused_top(bench: Bench, q: str, depth: int) -> list:
    query = SearchQuery(bench.query_texts[q], bench.query_vectors[q], bench.scope, depth, FusionSettings())
    return bench.index.search(query)[:depth]


def prepare_sides(bench: Bench, docs: dict, qids: list[str], depth: int, relevance: RelevanceModel) -> dict:
    """Every candidate's passage side computed and stored before the searches, as at indexing."""
    wanted = list(dict.fromkeys(docs[h.passage_id] for q in qids for h in fused_top(bench, q, depth)))
    started = time.process_time()
    computed = relevance.prepare(wanted)
    cpu_ms = (time.process_time() - started) * 1000
    progress(f"passage sides: {computed} computed of {len(wanted)} candidates ({cpu_ms / 1000:.0f}s CPU)")
    return {"candidates": len(wanted), "computed_this_run": computed,
            "cpu_ms_per_passage": round(cpu_ms / computed, 1) if computed else None}


def candidates(bench: Bench, docs: dict, qids: list[str], depth: int, model_for,
               log_every: int = 25) -> tuple[dict, list[float], list[float]]:
    """Per query: the fused top `depth` (ids, fused scores) and the relevance of each; the rerank
    stage's CPU ms, and the CPU ms of the question's encoder run. The service runs that once per
    search, in its embed stage (the query vector is its pooled vector: RetrievalCore._query_vector),
    so the rerank stage reads the question's token vectors without encoding them again."""
    out, cpu_ms, question_ms = {}, [], []
    started = time.monotonic()
    for i, q in enumerate(qids):
        hits = fused_top(bench, q, depth)
        relevance = model_for()
        t0 = time.process_time()
        encoded = relevance.question(bench.query_texts[q])
        t1 = time.process_time()
        scores = relevance.score(bench.query_texts[q], [docs[h.passage_id] for h in hits], encoded)
        cpu_ms.append((time.process_time() - t1) * 1000)
        question_ms.append((t1 - t0) * 1000)
        out[q] = ([h.passage_id for h in hits], [h.fused_score for h in hits], scores)
        if (i + 1) % log_every == 0:
            progress(f"  relevance {i + 1}/{len(qids)} queries ({time.monotonic() - started:.0f}s)")
    return out, cpu_ms, question_ms


def reranked_run(cands: dict, weight: float | None) -> dict:
    """weight None: the fused order (backend none)."""
    run = {}
    for q, (ids, fused, relevance) in cands.items():
        if weight is None:
            run[q] = as_run(ids)
            continue
        blended = [weight * r + (1 - weight) * f for r, f in zip(relevance, _minmax(fused), strict=True)]
        run[q] = as_run([ids[i] for i in reorder(blended, list(range(1, len(ids) + 1)))])
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SCIFACT_DIR)
    parser.add_argument("--cache", type=Path, default=Path(".citetrace/cache/embeddings.sqlite"))
    parser.add_argument("--train-queries", type=int, default=150, help="train queries for choosing the weight")
    parser.add_argument("--test-queries", type=int, default=0, help="a seeded sample of this many test queries (0: all 300)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/rerank.json"))
    args = parser.parse_args()
    settings = Settings()
    depth = settings.rerank_depth

    corpus, queries, train, test = load_scifact(args.data)
    train = {q: r for q, r in train.items() if q in queries}
    sample = sorted(train)
    random.Random(15).shuffle(sample)
    tune = {q: train[q] for q in sorted(sample[: args.train_queries])}
    if args.test_queries:  # the relevance features of 20 abstracts per query are slow on a loaded machine
        picked = sorted(test)
        random.Random(15).shuffle(picked)
        test = {q: test[q] for q in sorted(picked[: args.test_queries])}
    embedder = Embedder(max_tokens=256)  # the fused candidates: the float vectors of the embedding cache
    embedder.warm_up()
    # The relevance model reads with the service's embedder (kernels and truncation), as it is trained.
    judge = Embedder(max_tokens=settings.embedding_max_tokens, kernels=settings.embedding_kernels)
    cache = EmbeddingCache(args.cache)
    doc_vectors = embed_with_progress(cache, embedder, [document_text(d) for d in corpus], "corpus")
    qids = sorted(set(tune) | set(test))
    query_vectors = dict(zip(qids, embed_with_progress(cache, embedder, [queries[q] for q in qids], "queries"),
                             strict=True))
    index, _ = build_index(corpus, doc_vectors)
    bench = Bench(index, queries, query_vectors)
    # (text, context) as the core passes them: the indexed text, and the title as the context.
    docs = {d["_id"]: (document_text(d), d["title"]) for d in corpus}
    store = PassageSideStore(args.cache.parent / "relevance-passages-scifact.sqlite")
    relevance = RelevanceModel(judge, store=store)
    relevance.warm_up()
    sides = prepare_sides(bench, docs, sorted(set(test) | set(tune)), depth, relevance)

    def model_for() -> RelevanceModel:  # an empty in-memory cache: the sides come from the store
        return RelevanceModel(judge, relevance.weights, store=store)

    progress(f"relevance of the top {depth} on {len(test)} test queries")
    test_cands, cpu_ms, question_ms = candidates(bench, docs, sorted(test), depth, model_for)
    progress(f"test (fixed settings): none {evaluate(test, reranked_run(test_cands, None))['ndcg@10']}, "
             f"embedded weight {settings.rerank_weight} "
             f"{evaluate(test, reranked_run(test_cands, settings.rerank_weight))['ndcg@10']}")
    progress(f"relevance of the top {depth} on {len(tune)} train queries")
    tune_cands = candidates(bench, docs, sorted(tune), depth, model_for)[0] if tune else {}
    if tune:
        grid = {str(w): evaluate(tune, reranked_run(tune_cands, w))["ndcg@10"] for w in WEIGHTS}
        train_none = evaluate(tune, reranked_run(tune_cands, None))["ndcg@10"]
        best = max(WEIGHTS, key=lambda w: (grid[str(w)], -w))  # ties: the lighter rerank
    else:  # no weight choice: the shipped weight only
        grid, train_none, best = {}, None, settings.rerank_weight
    progress(f"train: none {train_none}; by weight {grid}; chosen {best}")

    result_test = {
        "none": evaluate(test, reranked_run(test_cands, None)),
        f"embedded_weight_{settings.rerank_weight}_shipped": evaluate(test, reranked_run(test_cands,
                                                                                      settings.rerank_weight)),
        f"embedded_weight_{best}_train_chosen": evaluate(test, reranked_run(test_cands, best)),
    }
    for name, r in result_test.items():
        progress(f"test {name}: nDCG@10 {r['ndcg@10']}")
    report = {
        "benchmark": "BEIR SciFact, nDCG@10 with and without the embedded rerank stage (in-process core)",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": (f"PYTHONPATH=libs:. .venv/bin/python bench/scifact_rerank.py --train-queries {args.train_queries}"
                    f" --test-queries {args.test_queries}"),
        "environment": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(),
                        "load_average_1m": round(os.getloadavg()[0], 2)},
        "relevance_model": relevance.version,
        "rerank_depth": depth,
        "fusion": "shipped defaults (settings.py)",
        "note": ("recall@100 is not comparable across rows: only the top RERANK_DEPTH are kept per query; "
                 "nDCG@10 is the figure"),
        "train": {"queries": len(tune), "ndcg@10_none": train_none, "ndcg@10_by_weight": grid, "chosen_weight": best},
        "test": {"queries": len(test), **{k: v["ndcg@10"] for k, v in result_test.items()}},
        "passage_sides": sides,
        "judge_embedding_model": judge.model_id,
        "rerank_cpu_ms_per_search": {"median": round(statistics.median(cpu_ms), 2),
                                     "p95": round(float(np.percentile(cpu_ms, 95)), 2), "n": len(cpu_ms),
                                     "what": "the rerank stage over the stored passage sides; the question's token "
                                             "vectors from the search's embed stage (one encoder run per search)"},
        "question_encoding_cpu_ms": {"median": round(statistics.median(question_ms), 2),
                                     "what": "that encoder run, which the search's query vector needs anyway"},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    progress(f"wrote {args.out}")
    print(json.dumps({"test": report["test"], "train": report["train"], "passage_sides": sides,
                      "rerank_cpu_ms_per_search": report["rerank_cpu_ms_per_search"],
                      "question_encoding_cpu_ms": report["question_encoding_cpu_ms"]}, indent=1))


if __name__ == "__main__":
    main()
