"""SciFact (BEIR) through the retrieval service's gRPC API: `make bench-retrieval`.

Starts the retrieval service in-process on a free port (real gRPC, real SQLite store of record,
the configured search backend), ingests the 5,183 SciFact documents with IngestDocument, runs the
300 TEST queries with Search in the three modes (lexical = BM25 only, vector only, hybrid) and
reports nDCG@10 and recall@100, the Search RPC latency (p50/p95, query embedding included,
k=10), and ingestion throughput against the raw embedding throughput of the model measured in
the same run on the same documents (through IngestDocument and through the core's bulk path,
RetrievalCore.ingest_many). Writes bench/results/retrieval.json.

Reuses bench/scifact_core.py (data loading, evaluation, throughput measurement) of the index work.

Embeddings: the service caches vectors keyed by (model id, text digest) in --cache (default
.citetrace/cache/embeddings.sqlite, shared with scifact_core.py), so a rerun does not re-embed
the corpus; the full-corpus ingestion figure is then a cached one. The honest comparison is the
`ingestion_uncached` block: a sample of documents ingested through a second service whose cache
starts empty, against the raw embedding throughput on the same sample.

With --backend opensearch (`make bench-retrieval BACKEND=opensearch`, which starts the local node),
the full-corpus part runs on OpenSearch AND on the embedded backend in the same run, side by side
("backends_side_by_side" in bench/results/retrieval-opensearch.json); the ingestion-throughput part
runs on OpenSearch. Hosts: $CITETRACE_RETRIEVAL_OPENSEARCH_HOSTS, else 127.0.0.1:$OPENSEARCH_PORT
(9200). The run's indices (prefix bench-<pid>-) are deleted at the end.

    .venv/bin/python bench/retrieval_bench.py [--backend embedded|opensearch] [--data DIR] [--out FILE]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see citetrace.embeddings

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import grpc  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scifact_core as core  # noqa: E402
from citetrace.common.v1 import common_pb2  # noqa: E402
from citetrace.embeddings import Embedder  # noqa: E402
from citetrace.kit.testing import serving, test_auth_settings, token_metadata  # noqa: E402
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb  # noqa: E402
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc  # noqa: E402

from services.retrieval.bootstrap import build_spec  # noqa: E402
from services.retrieval.settings import Settings  # noqa: E402

TENANT = core.TENANT
MODES = {"bm25": pb.SEARCH_MODE_LEXICAL, "vector": pb.SEARCH_MODE_VECTOR, "hybrid": pb.SEARCH_MODE_HYBRID}
# Whole abstracts are single passages (as in the published numbers): the hard limit is raised.
HARD_LIMIT = 100_000
VALID_FROM = datetime(2000, 1, 1, tzinfo=UTC)


def progress(message: str) -> None:
    core.progress(message)


#: OpenSearch indices of this run: bench-<pid>-<service data dir>-passages-<generation>, deleted after use.
OPENSEARCH_PREFIX = f"bench-{os.getpid()}-"


def opensearch_hosts() -> tuple[str, ...]:
    hosts = os.environ.get("CITETRACE_RETRIEVAL_OPENSEARCH_HOSTS")
    if hosts:
        return tuple(h.strip() for h in hosts.split(",") if h.strip())
    return (f"http://127.0.0.1:{os.environ.get('OPENSEARCH_PORT', '9200')}",)


#: Fusion overrides from the command line (--fusion-method, --lexical-weight, --vector-weight);
#: empty = the service's defaults.
FUSION_OVERRIDES: dict = {}


def service_settings(backend: str, data_dir: Path, cache: Path) -> Settings:
    extra = dict(FUSION_OVERRIDES)
    if backend == "opensearch":
        extra |= dict(opensearch_hosts=opensearch_hosts(),
                     opensearch_index_prefix=f"{OPENSEARCH_PREFIX}{data_dir.name.lower()}-",
                     opensearch_timeout_seconds=60.0)
    # No query-vector cache: every mode runs the same 300 queries, and the latency must include
    # embedding each query.
    return Settings(port=0, metrics_port=-1, data_dir=data_dir, backend=backend, embedding_cache_path=cache,
                    query_cache_size=0, chunk_target_chars=HARD_LIMIT, chunk_hard_limit_chars=HARD_LIMIT, max_k=core.DEPTH,
                    candidate_k=core.DEPTH, max_document_chars=HARD_LIMIT, **extra)


def drop_opensearch_indices(settings: Settings) -> None:
    from services.retrieval.index.opensearch import OpenSearchBackend

    OpenSearchBackend(settings.opensearch_config()).drop_all()


def ingest_request(doc: dict) -> pb.IngestDocumentRequest:
    from google.protobuf import timestamp_pb2

    valid_from = timestamp_pb2.Timestamp()
    valid_from.FromDatetime(VALID_FROM)
    return pb.IngestDocumentRequest(
        document=common_pb2.Document(tenant_id=TENANT, document_id=doc["_id"], source_class="handbook",
                                     title=doc["title"] or doc["_id"]),
        # The same text scifact_core.py indexes (title + " " + abstract): one passage, and the
        # embedding cache is shared with the in-process benchmark.
        text=core.document_text(doc), roles=["patient"], intents=[common_pb2.INTENT_OTHER], locale="en", valid_from=valid_from)


def ingest(stub, corpus: list[dict], metadata, workers: int) -> dict:
    started = time.perf_counter()
    created = 0

    def one(doc):
        return stub.IngestDocument(ingest_request(doc), timeout=120, metadata=metadata).created

    if workers <= 1:
        created = sum(one(doc) for doc in corpus)
    else:
        with ThreadPoolExecutor(workers) as pool:
            created = sum(pool.map(one, corpus))
    seconds = time.perf_counter() - started
    return {"docs": len(corpus), "created": created, "seconds": round(seconds, 3),
            "docs_per_s": round(len(corpus) / seconds, 2), "workers": workers}


def ingest_bulk(settings: Settings, corpus: list[dict], batch: int = 32) -> dict:
    """The same core without gRPC: RetrievalCore.ingest_many in batches (per-document transactions)."""
    from citetrace.kit.auth import Principal

    from services.retrieval import bootstrap
    from services.retrieval.core import IngestCommand
    from services.retrieval.store.records import DocumentRecord

    service = bootstrap.build(settings)
    service.warm_up()
    retrieval = service.core
    admin = Principal(TENANT, "bench", ("policy_admin",))
    commands = [IngestCommand(DocumentRecord(TENANT, d["_id"], "handbook", d["title"] or d["_id"], ""),
                              core.document_text(d), None, VALID_FROM, None, ("patient",), (), ("other",), "en")
                for d in corpus]
    started = time.perf_counter()
    created = 0
    for i in range(0, len(commands), batch):
        created += sum(getattr(r, "created", False) for r in retrieval.ingest_many(admin, commands[i:i + batch]))
    seconds = time.perf_counter() - started
    service.close()
    return {"docs": len(corpus), "created": created, "seconds": round(seconds, 3),
            "docs_per_s": round(len(corpus) / seconds, 2), "batch": batch}


def run_queries(stub, queries: dict, qids: list[str], mode: int, k: int, metadata) -> tuple[dict, list[float]]:
    run, latencies = {}, []
    for q in qids:
        started = time.perf_counter()
        reply = stub.Search(pb.SearchRequest(query=queries[q], k=k, mode=mode), timeout=30, metadata=metadata)
        latencies.append(time.perf_counter() - started)
        ranked = list(dict.fromkeys(h.passage.identity.document_id for h in reply.hits))
        run[q] = core.as_run(ranked)
    return run, latencies


def measure_backend(backend: str, args, data_dir: Path, corpus, queries, qids, test, auth, admin,
                    reader) -> dict:
    """Full-corpus ingestion through IngestDocument, then nDCG@10 / recall@100 and Search latency
    in the three modes, on one backend."""
    settings = service_settings(backend, data_dir, args.cache)
    spec = build_spec(settings)
    try:
        with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
            stub = pb_grpc.RetrievalServiceStub(channel)
            cached_before = len(spec.servicer.core.cache)
            progress(f"[{backend}] ingesting {len(corpus)} documents through IngestDocument "
                     f"({cached_before} vectors cached)")
            full = ingest(stub, corpus, admin, args.workers)
            full["vectors_cached_before"] = cached_before
            progress(f"[{backend}] ingested {full['docs']} in {full['seconds']:.1f}s ({full['docs_per_s']} docs/s)")

            results = {}
            for name, mode in MODES.items():
                run, _ = run_queries(stub, queries, qids, mode, core.DEPTH, reader)
                results[name] = core.evaluate(test, run)
                progress(f"[{backend}] test {name}: nDCG@10={results[name]['ndcg@10']} "
                         f"recall@100={results[name]['recall@100']}")
            results["hybrid_gain_over_bm25"] = round(results["hybrid"]["ndcg@10"] - results["bm25"]["ndcg@10"], 4)

            run_queries(stub, queries, qids[:30], pb.SEARCH_MODE_HYBRID, 10, reader)  # warm-up
            latency = {}
            for name, mode in MODES.items():
                _, samples = run_queries(stub, queries, qids, mode, 10, reader)
                latency[name] = core.percentiles(samples)
            # The model alone on the same queries, same moment: what the RPC adds on top of it.
            embedder, samples = spec.servicer.core.embedder, []
            for q in qids:
                started = time.perf_counter()
                embedder.embed([queries[q]])
                samples.append(time.perf_counter() - started)
            latency["query_embedding_only_in_process"] = core.percentiles(samples)
            progress(f"[{backend}] Search RPC hybrid k=10: p50 {latency['hybrid']['p50_ms']} ms, "
                     f"p95 {latency['hybrid']['p95_ms']} ms (query embedding alone: p50 "
                     f"{latency['query_embedding_only_in_process']['p50_ms']} ms)")
            info = stub.Search(pb.SearchRequest(query="warm", k=1), timeout=10, metadata=reader).settings
    finally:
        if backend == "opensearch":
            drop_opensearch_indices(settings)
    if backend == "embedded":  # the index is derived data: a restart rebuilds it from the store
        started = time.perf_counter()
        with serving(build_spec(settings), auth):
            full["restart_rebuild_seconds"] = round(time.perf_counter() - started, 2)
        progress(f"[{backend}] restart: index rebuilt from the store of record in {full['restart_rebuild_seconds']} s")
    return {"results": results, "latency": latency, "full": full, "info": info}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=os.environ.get("BACKEND", "embedded"))
    parser.add_argument("--data", type=Path,
                        default=core.SCIFACT_DIR)
    parser.add_argument("--cache", type=Path, default=Path(".citetrace/cache/embeddings.sqlite"))
    parser.add_argument("--out", type=Path, help="default bench/results/retrieval.json, "
                        "or retrieval-<backend>.json for another backend")
    parser.add_argument("--sample", type=int, default=core.THROUGHPUT_SAMPLE,
                        help="documents for the uncached ingestion vs raw embedding comparison")
    parser.add_argument("--workers", type=int, default=2, help="concurrent IngestDocument calls")
    parser.add_argument("--limit", type=int, default=0,
                        help="smoke run: only the first N documents and 20 queries (numbers not comparable)")
    parser.add_argument("--fusion-method", choices=("rrf", "minmax", "zscore"),
                        help="fusion of the service under test (default: the service's default)")
    parser.add_argument("--lexical-weight", type=float, help="(default: the service's default)")
    parser.add_argument("--vector-weight", type=float, help="(default: the service's default)")
    args = parser.parse_args()
    for name in ("fusion_method", "lexical_weight", "vector_weight"):
        if getattr(args, name) is not None:
            FUSION_OVERRIDES[name] = getattr(args, name)
    if args.out is None:
        suffix = "" if args.backend == "embedded" else f"-{args.backend}"
        args.out = Path(f"bench/results/retrieval{suffix}.json")

    progress(f"loading SciFact from {args.data}")
    corpus, queries, _train, test = core.load_scifact(args.data)
    qids = sorted(test)
    if args.limit:
        corpus, qids = corpus[: args.limit], qids[:20]
        test = {q: test[q] for q in qids}
    auth = test_auth_settings()
    admin = token_metadata(auth, TENANT, roles=("policy_admin",), subject="bench")
    reader = token_metadata(auth, TENANT, roles=("patient",), subject="bench")

    with tempfile.TemporaryDirectory(prefix="citetrace-bench-") as tmp:
        tmp = Path(tmp)
        # 1. Raw model throughput and uncached ingestion on the same sample, same run. The raw figure
        # is measured before and after the ingestion runs and averaged (the machine may be shared).
        sample = corpus[: args.sample]
        sample_texts = [core.document_text(d) for d in sample]
        raw_embedder = Embedder(max_tokens=256)
        raw_embedder.warm_up()
        raw_before = core.measure_throughput(raw_embedder, sample_texts)
        progress(f"raw embedding throughput: {raw_before['docs_per_s']} docs/s on {raw_before['docs']} documents")
        settings = service_settings(args.backend, tmp / "uncached", tmp / "uncached" / "embeddings.sqlite")
        with serving(build_spec(settings), auth) as runner, grpc.insecure_channel(runner.address) as channel:
            uncached = ingest(pb_grpc.RetrievalServiceStub(channel), sample, admin, args.workers)
        if args.backend == "opensearch":
            drop_opensearch_indices(settings)
        progress(f"uncached ingestion through IngestDocument: {uncached['docs_per_s']} docs/s")
        bulk_settings = service_settings(args.backend, tmp / "bulk", tmp / "bulk" / "embeddings.sqlite")
        bulk = ingest_bulk(bulk_settings, sample)
        if args.backend == "opensearch":
            drop_opensearch_indices(bulk_settings)
        progress(f"uncached ingestion through the core's bulk path: {bulk['docs_per_s']} docs/s")
        raw_after = core.measure_throughput(raw_embedder, sample_texts)
        # The same texts one at a time (the service's embedding_batch_size default): the ratio below is
        # taken against the FASTER of the two raw figures, so batching choices cannot flatter it.
        started = time.perf_counter()
        for text in sample_texts:
            raw_embedder.embed([text])
        raw_batch1 = round(len(sample_texts) / (time.perf_counter() - started), 2)
        raw_batch16 = round((raw_before["docs_per_s"] + raw_after["docs_per_s"]) / 2, 2)
        raw = {"docs": raw_before["docs"], "batch16_before": raw_before, "batch16_after": raw_after,
               "batch16_docs_per_s": raw_batch16, "batch1_docs_per_s": raw_batch1,
               "docs_per_s": max(raw_batch16, raw_batch1)}
        del raw_embedder
        for measured in (uncached, bulk):
            measured["ratio_to_raw_embedding"] = round(measured["docs_per_s"] / raw["docs_per_s"], 3)
        progress(f"raw embedding {raw['docs_per_s']} docs/s (best of batch 16, mean of before/after, and "
                 f"batch 1); IngestDocument "
                 f"{uncached['ratio_to_raw_embedding']:.0%}, bulk {bulk['ratio_to_raw_embedding']:.0%} of it")

        # 2. The full corpus through the API (embedding cache shared across runs), for the backend
        # asked for and, when it is OpenSearch, for the embedded backend too (side by side).
        by_backend = {}
        for backend in ([args.backend, "embedded"] if args.backend != "embedded" else [args.backend]):
            by_backend[backend] = measure_backend(backend, args, tmp / f"main-{backend}", corpus, queries, qids,
                                                test, auth, admin, reader)
        results, latency, full, info = (by_backend[args.backend][key]
                                        for key in ("results", "latency", "full", "info"))

    targets = {
        "bm25_ndcg@10>=0.67": results["bm25"]["ndcg@10"] >= 0.67,
        "vector_ndcg@10>=0.64": results["vector"]["ndcg@10"] >= 0.64,
        "hybrid_ndcg@10>=0.72": results["hybrid"]["ndcg@10"] >= 0.72,
        "hybrid_gain>=0.04": results["hybrid_gain_over_bm25"] >= 0.04,
        "search_p50<=10ms": latency["hybrid"]["p50_ms"] <= 10.0,
        "ingestion_grpc>=80%_of_raw_embedding": uncached["ratio_to_raw_embedding"] >= 0.8,
        "ingestion_bulk>=80%_of_raw_embedding": bulk["ratio_to_raw_embedding"] >= 0.8,
    }
    report = {
        "benchmark": "BEIR SciFact test (300 queries) through the retrieval gRPC API",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "make bench-retrieval",
        "environment": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(),
                        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")},
        "service_settings": {
            "backend": info.backend, "fusion_method": info.fusion_method, "rrf_k": info.rrf_k,
            "lexical_weight": info.lexical_weight, "vector_weight": info.vector_weight,
            "candidate_k": info.candidate_k, "embedding_model_id": info.embedding_model_id,
            "index_generation": info.index_generation, "chunk_hard_limit_chars": HARD_LIMIT,
            "document_text": "title + ' ' + abstract, one passage per document",
        },
        "quality_test": results,
        "search_latency_grpc_k10": latency,
        "ingestion": {"raw_embedding": raw, "ingestion_uncached_grpc": uncached, "ingestion_uncached_bulk": bulk,
                      "ingestion_full_corpus_grpc_cached": full},
        "targets_met": targets,
    }
    if len(by_backend) > 1:
        report["command"] = f"make bench-retrieval BACKEND={args.backend}" + (
            f" BENCH_ARGS='--fusion-method {args.fusion_method} --lexical-weight {args.lexical_weight} "
            f"--vector-weight {args.vector_weight}'" if FUSION_OVERRIDES else "")
        report["fusion_overrides"] = FUSION_OVERRIDES
        report["backends_side_by_side"] = {
            name: {"quality_test": m["results"], "search_latency_grpc_k10": m["latency"],
                   "ingestion_full_corpus_grpc_cached": m["full"], "index_generation": m["info"].index_generation}
            for name, m in by_backend.items()}
        progress("side by side (nDCG@10 bm25 / vector / hybrid, hybrid p50 / p95 ms):")
        for name, m in by_backend.items():
            r, lat = m["results"], m["latency"]["hybrid"]
            progress(f"  {name:10} {r['bm25']['ndcg@10']:.4f} / {r['vector']['ndcg@10']:.4f} / "
                     f"{r['hybrid']['ndcg@10']:.4f}   {lat['p50_ms']} / {lat['p95_ms']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"quality_test": results, "search_latency_grpc_k10": latency["hybrid"],
                      "ingestion_uncached_grpc": uncached, "ingestion_uncached_bulk": bulk,
                      "raw_embedding_docs_per_s": raw["docs_per_s"], "targets_met": targets}, indent=2))
    progress(f"wrote {args.out}")


if __name__ == "__main__":
    main()
