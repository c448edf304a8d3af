"""Ask latency and throughput (issue 10): the real gRPC stack against the same cores in one process.

    make bench            (= .venv/bin/python bench/ask_bench.py --json bench/results/bench.json)
    make bench BACKEND=opensearch   (retrieval on the local OpenSearch node, in both modes; JSON in
                          bench/results/bench-opensearch.json with the embedded run's figures beside)

1. The six services as processes (`citetrace up --detach` through the e2e harness, embedded
   defaults, extractive generator), the synthetic sample corpus and slots, and SciFact ingested as
   tenant `scifact` through the retrieval API (bench/retrieval_bench.py's request builder; the
   retrieval process uses the retrieval bench's embedding cache, so a rerun embeds nothing new).
2. A fixed mix of questions (the eval set's sample-tenant questions + SciFact test queries asked by
   a `scifact` patient) at concurrency 1, 8 and 32, closed loop: p50/p95/p99 and asks/s, with a
   per-stage breakdown from the difference of the citetrace_stage_duration_seconds and
   citetrace_grpc_server_handling_seconds histograms scraped from every service's /metrics before
   and after each level.
3. The same questions through the same cores in this process, no gRPC: each service's servicer
   built by its own build_spec() and warmed up; the orchestrator built by its bootstrap with its own
   adapters over in-process stubs that call those servicers (retrieval and scheduler read the
   stack's databases; trace writes its own). Same levels, same run; ratio microservices / in-process.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "bench"), str(REPO / "tests")]

import numpy as np  # noqa: E402
import retrieval_bench  # noqa: E402
import scifact_core  # noqa: E402
from citetrace.kit.auth import Principal, bearer_metadata  # noqa: E402
from citetrace.kit.context import call_context, current_principal  # noqa: E402
from citetrace.kit.stack import BY_NAME, SERVICES  # noqa: E402
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb  # noqa: E402
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc  # noqa: E402
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc  # noqa: E402
from citetrace.trace.v1 import trace_service_pb2 as trace_pb  # noqa: E402
from e2e.conftest import running_stack  # noqa: E402
from eval.harness import load_cases  # noqa: E402
from prometheus_client import REGISTRY, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from apps.cli.common import read_state  # noqa: E402
from services.retrieval.settings import Settings as RetrievalSettings  # noqa: E402

STAGE_METRICS = ("citetrace_stage_duration_seconds", "citetrace_grpc_server_handling_seconds")
STAGE_CPU_METRIC = "citetrace_stage_cpu_seconds"  # a counter: CPU of the thread running each stage
TARGETS = {"p50_ms_at_8": 40.0, "p95_ms_at_8": 100.0, "asks_per_s": 50.0, "overhead_ratio": 1.5}


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- questions ----------------------------------------------------------------------------------


def question_mix(scifact_queries: list[str], seed: int = 10) -> list[tuple[str, tuple[str, ...], str]]:
    """(tenant, roles, question): every eval case that reaches the normal stack, plus SciFact queries."""
    mix = [(case.tenant, case.roles, case.question) for case in load_cases()
           if not case.unavailable and not case.generator_fault and not case.location and not case.locale]
    mix += [("scifact", ("patient",), q) for q in scifact_queries]
    random.Random(seed).shuffle(mix)
    return mix


# -- load ----------------------------------------------------------------------------------------


def closed_loop(ask, questions, concurrency: int, total: int) -> dict:
    """`concurrency` workers ask questions[i % n] until `total` asks are done."""
    latencies: list[float] = [0.0] * total
    errors: list[str] = []
    counter = iter(range(total))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            tenant, roles, question = questions[i % len(questions)]
            started = time.perf_counter()
            try:
                ask(tenant, roles, question)
            except Exception as err:  # noqa: BLE001 - counted and reported
                errors.append(f"{type(err).__name__}: {str(err)[:120]}")
            latencies[i] = time.perf_counter() - started

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for future in [pool.submit(worker) for _ in range(concurrency)]:
            future.result()
    wall = time.perf_counter() - started
    ms = np.array(latencies) * 1000
    return {
        "concurrency": concurrency, "asks": total, "errors": len(errors), "error_samples": errors[:3],
        "seconds": round(wall, 2), "asks_per_s": round(total / wall, 1),
        "p50_ms": round(float(np.percentile(ms, 50)), 1), "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "p99_ms": round(float(np.percentile(ms, 99)), 1), "mean_ms": round(float(ms.mean()), 1),
    }


# -- stage histograms ------------------------------------------------------------------------------


def parse_histograms(text: str) -> dict:
    """{(metric, labels...): {"buckets": {le: count}, "sum": s, "count": n}} for STAGE_METRICS."""
    out: dict = {}
    for family in text_string_to_metric_families(text):
        if family.name == STAGE_CPU_METRIC:
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    key = (STAGE_CPU_METRIC, sample.labels.get("service", ""), sample.labels.get("stage", ""))
                    out[key] = {"buckets": {}, "sum": sample.value, "count": 0.0}
            continue
        if family.name not in STAGE_METRICS:
            continue
        for sample in family.samples:
            labels = dict(sample.labels)
            le = labels.pop("le", None)
            key = (family.name, labels.get("service", ""), labels.get("stage") or labels.get("method", ""))
            entry = out.setdefault(key, {"buckets": {}, "sum": 0.0, "count": 0.0})
            if sample.name.endswith("_bucket"):
                entry["buckets"][float(le)] = sample.value
            elif sample.name.endswith("_sum"):
                entry["sum"] = sample.value
            elif sample.name.endswith("_count"):
                entry["count"] = sample.value
    return out


def gauge_value(url: str, metric: str) -> float:
    """The sum of a gauge's samples on a metrics endpoint (0 when it exports none)."""
    with urllib.request.urlopen(url, timeout=5) as reply:
        text = reply.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text) if family.name == metric
               for sample in family.samples)


def wait_passage_sides(url: str, timeout: float = 3600.0) -> float:
    """Waits until retrieval has computed the relevance passage side of every indexed passage (the
    embedded rerank's background work after indexing: not part of an Ask); returns the seconds waited."""
    started = time.monotonic()
    last = -1.0
    while (pending := gauge_value(url, "citetrace_retrieval_passage_sides_pending")) > 0:
        if time.monotonic() - started > timeout:
            raise SystemExit(f"retrieval still has {pending:.0f} passage sides to compute after {timeout:.0f}s")
        if pending != last:
            progress(f"  {pending:.0f} passages' relevance sides still being computed")
            last = pending
        time.sleep(5)
    return round(time.monotonic() - started, 1)


def scrape(urls: list[str]) -> dict:
    merged: dict = {}
    for url in urls:
        if url == "in-process":
            text = generate_latest(REGISTRY).decode()
        else:
            with urllib.request.urlopen(url, timeout=5) as reply:
                text = reply.read().decode()
        for key, entry in parse_histograms(text).items():
            merged[key] = entry
    return merged


def _quantile(buckets: list[tuple[float, float]], count: float, q: float) -> float | None:
    """Prometheus-style histogram_quantile (linear inside the bucket)."""
    if count <= 0:
        return None
    rank, previous_le, previous = q * count, 0.0, 0.0
    for le, cumulative in buckets:
        if cumulative >= rank:
            if le == float("inf"):
                return previous_le
            inside = cumulative - previous
            return previous_le + (le - previous_le) * ((rank - previous) / inside if inside else 0)
        previous_le, previous = le, cumulative
    return previous_le


def stage_breakdown(before: dict, after: dict, asks: int) -> list[dict]:
    rows = []
    for key, entry in after.items():
        if key[0] == STAGE_CPU_METRIC:
            continue
        prior = before.get(key, {"buckets": {}, "sum": 0.0, "count": 0.0})
        count = entry["count"] - prior["count"]
        if count <= 0:
            continue
        total = entry["sum"] - prior["sum"]
        buckets = sorted((le, c - prior["buckets"].get(le, 0.0)) for le, c in entry["buckets"].items())
        p50, p95 = _quantile(buckets, count, 0.5), _quantile(buckets, count, 0.95)
        metric, service, name = key
        cpu_key = (STAGE_CPU_METRIC, service, name)
        cpu = (after[cpu_key]["sum"] - before.get(cpu_key, {"sum": 0.0})["sum"]) if cpu_key in after else None
        rows.append({
            "kind": "stage" if metric == STAGE_METRICS[0] else "grpc_server",
            "service": service, "name": name, "count": int(count),
            "mean_ms": round(total / count * 1000, 2),
            "per_ask_ms": round(total / asks * 1000, 2),
            "p50_ms": None if p50 is None else round(p50 * 1000, 2),
            "p95_ms": None if p95 is None else round(p95 * 1000, 2),
            # The stage's own thread's CPU (not the pools it hands work to), per ask.
            **({} if cpu is None or metric != STAGE_METRICS[0] else {"cpu_per_ask_ms": round(cpu / asks * 1000, 2)}),
        })
    rows.sort(key=lambda row: (row["kind"], -row["per_ask_ms"]))
    return rows


# -- the stack over gRPC ---------------------------------------------------------------------------


def ingest_scifact(stack, docs: list[dict], workers: int) -> dict:
    with stack.channel("retrieval") as channel:  # mutual TLS as `citetrace up` starts it
        stub = ret_grpc.RetrievalServiceStub(channel)
        admin = bearer_metadata(stack.token(retrieval_bench.TENANT, roles=("policy_admin",)))
        return retrieval_bench.ingest(stub, docs, admin, workers)


def grpc_asker(stack):
    channel = stack.channel("orchestrator")
    stub = pb_grpc.OrchestratorServiceStub(channel)
    tokens: dict = {}

    def ask(tenant, roles, question):
        key = (tenant, roles)
        if key not in tokens:
            tokens[key] = bearer_metadata(stack.token(tenant, roles))
        return stub.Ask(pb.AskRequest(question=question), timeout=30, metadata=tokens[key])

    return ask, channel


# -- the same cores in one process -----------------------------------------------------------------


class _InProcessStub:
    """A servicer behind a stub's interface, minus gRPC: `stub.Search(request, timeout=, metadata=)`
    runs the servicer method under the same principal and deadline. The orchestrator's own
    adapters (services/orchestrator/adapters.py) call it exactly as they call a grpc stub."""

    def __init__(self, servicer) -> None:
        self._servicer = servicer

    def __getattr__(self, rpc: str):
        method = getattr(self._servicer, rpc)

        def invoke(request, timeout=None, metadata=()):
            with call_context(current_principal(), None, timeout):
                return method(request, None)
        return invoke


def backend_settings(stack) -> dict:
    """The stack's search backend as retrieval Settings fields, for the in-process cores: the same
    OpenSearch index the stack's retrieval built (kept, not rebuilt)."""
    env = stack.retrieval_env
    if env.get("CITETRACE_RETRIEVAL_BACKEND", "embedded") == "embedded":
        return {}
    return {"backend": env["CITETRACE_RETRIEVAL_BACKEND"],
            "opensearch_hosts": tuple(env["CITETRACE_RETRIEVAL_OPENSEARCH_HOSTS"].split(",")),
            "opensearch_index_prefix": env["CITETRACE_RETRIEVAL_OPENSEARCH_INDEX_PREFIX"],
            "opensearch_rebuild_on_start": False}


def beside(result: dict, other: Path) -> dict | None:
    """The Ask figures of another backend's run (its JSON), per mode and concurrency, for comparison."""
    if not other.is_file():
        return None
    them = json.loads(other.read_text(encoding="utf-8"))
    keys = ("concurrency", "p50_ms", "p95_ms", "asks_per_s", "errors")
    rows = {mode: [{k: row.get(k) for k in keys} | {"cpu_ms_per_ask": row.get("cpu_ms_per_ask", {}).get("server")}
                   for row in them.get(mode, [])] for mode in ("microservices", "in_process")}
    same_corpus = them.get("corpus", {}).get("scifact_tenant_docs") == result["corpus"]["scifact_tenant_docs"]
    return {"file": str(other.relative_to(REPO)) if other.is_relative_to(REPO) else str(other),
            "backend": them.get("backend", "embedded"), "created_at": them.get("created_at"),
            "same_scifact_docs": same_corpus, **rows}


def build_in_process(stack_dir: Path, work: Path, cache: Path, query_cache_size: int | None = None,
                     backend: dict | None = None, relevance_store: Path | None = None):
    """Every service's servicer from its own build_spec(), warmed up, wired without gRPC
    (`relevance_store`: the passage sides the stack's retrieval computed, default in its data dir)."""
    # No network in this mode: the clients a bootstrap builds (e.g. trace's passage reader) are
    # never called, and the stack's certificates are not this process's (kit.clients.transport).
    os.environ.setdefault("CITETRACE_TLS_MODE", "plaintext")
    from citetrace.outbox import TraceOutbox

    from services.citation_validator.bootstrap import build_spec as validator_spec
    from services.citation_validator.settings import Settings as ValidatorSettings
    from services.citation_validator.store import RetrievalPassageStore
    from services.generation.bootstrap import build_spec as generation_spec
    from services.generation.settings import Settings as GenerationSettings
    from services.orchestrator import adapters
    from services.orchestrator.bootstrap import Downstream, build_servicer
    from services.orchestrator.settings import Settings as OrchestratorSettings
    from services.retrieval.bootstrap import build_spec as retrieval_spec
    from services.retrieval.settings import Settings as RetrievalSettings
    from services.scheduler_gateway.bootstrap import build_spec as scheduler_spec
    from services.scheduler_gateway.settings import Settings as SchedulerSettings
    from services.trace.bootstrap import build_spec as trace_spec
    from services.trace.settings import Settings as TraceSettings

    retrieval_service = retrieval_spec(RetrievalSettings(
        port=0, metrics_port=-1, data_dir=stack_dir, embedding_cache_path=cache,
        relevance_store_path=relevance_store, **(backend or {}),
        **({} if query_cache_size is None else {"query_cache_size": query_cache_size})))
    specs = [
        retrieval_service,
        scheduler_spec(SchedulerSettings(port=0, metrics_port=-1, data_dir=stack_dir)),
        generation_spec(GenerationSettings(port=0, metrics_port=-1)),
        # The validator's own reload adapter, reading from the retrieval servicer in process.
        validator_spec(ValidatorSettings(port=0, metrics_port=-1), store=RetrievalPassageStore(
            "in-process", retrieval=_InProcessStub(retrieval_service.servicer))),
        trace_spec(TraceSettings(port=0, metrics_port=-1, data_dir=work / "trace", retention_interval_seconds=0)),
    ]
    retrieval, scheduler, generation, validator, trace = (spec.servicer for spec in specs)
    for spec in specs:
        spec.warm_up()
    if retrieval.core.passage_sides is not None:  # the stack computed them into the same store: a check
        retrieval.core.passage_sides.wait_idle(3600)

    def deliver(record):
        with call_context(Principal(record.tenant_id, "orchestrator", ("service",)), None, 5.0):
            trace.RecordTrace(trace_pb.RecordTraceRequest(record=record), None)

    class Sink:
        """As the orchestrator's default TraceSink: queued durably, delivered behind the answer."""

        def __init__(self) -> None:
            self.outbox = TraceOutbox(work / "outbox.sqlite", deliver)

        def submit(self, record):
            self.outbox.enqueue(record)
            return False

        def start(self) -> None:
            self.outbox.start()

        def stop(self) -> None:
            self.outbox.stop()

        def flush(self) -> int:
            return self.outbox.flush()

    # The orchestrator's own bootstrap and adapters; only the channel differs (servicers in process).
    orchestrator = build_servicer(
        OrchestratorSettings(port=0, metrics_port=-1, data_dir=work),
        downstream=Downstream(adapters.SchedulerClient(_InProcessStub(scheduler)),
                              adapters.RetrievalClient(_InProcessStub(retrieval)),
                              adapters.GenerationClient(_InProcessStub(generation)),
                              adapters.ValidatorClient(_InProcessStub(validator))),
        trace_sink=Sink())
    orchestrator.warm_up()

    # As in a served process: a tracer provider, and one server span per Ask (the trace ID of the
    # answer and of its trace record comes from it).
    from citetrace.kit.telemetry import setup_tracing
    from opentelemetry import trace as otel_trace

    setup_tracing("citetrace-bench-in-process")
    tracer = otel_trace.get_tracer("citetrace.bench")

    def ask(tenant, roles, question):
        with tracer.start_as_current_span("/citetrace.orchestrator.v1.OrchestratorService/Ask",
                                          kind=otel_trace.SpanKind.SERVER), \
                call_context(Principal(tenant, f"bench-{tenant}", tuple(roles)), None, 30.0):
            return orchestrator.Ask(pb.AskRequest(question=question), None)

    def close():
        orchestrator.close()
        for spec in specs:
            spec.close()

    return ask, close


# -- main ----------------------------------------------------------------------------------------


def process_cpu_seconds(pid: int) -> float:
    """user + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def wait_quiet(pids: dict[str, int], busy_share: float = 0.03, window: float = 0.5, limit: float = 60.0) -> float:
    """Seconds waited until the processes together used under `busy_share` of one core over
    `window` seconds (at most `limit`): the trace records of the level before are delivered, and
    the stack's other background work done, before a level is measured. Only this process's own
    CPU counts when `pids` is empty (in-process: its background threads)."""
    def used() -> float:
        return sum(process_cpu_seconds(pid) for pid in pids.values()) if pids else own_cpu_seconds()

    started = time.monotonic()
    while time.monotonic() - started < limit:
        before = used()
        time.sleep(window)
        if used() - before < busy_share * window:
            break
    return round(time.monotonic() - started, 1)


def run_levels(name: str, ask, questions, levels: list[int], asks_per_level: dict[int, int], urls: list[str],
               server_pids: dict[str, int] | None = None) -> list:
    """server_pids: the service processes (their CPU is the server side; this process is the client).
    None: everything runs in this process (its CPU is server and client together)."""
    rows = []
    for concurrency in levels:
        total = asks_per_level[concurrency]
        quiet_wait = wait_quiet(server_pids or {})
        before = scrape(urls)
        load_before = os.getloadavg()[0]
        pids = server_pids or {}
        per_before = {name: process_cpu_seconds(pid) for name, pid in pids.items()}
        cpu_before = (sum(per_before.values()), own_cpu_seconds())
        row = closed_loop(ask, questions, concurrency, total)
        per_after = {name: process_cpu_seconds(pid) for name, pid in pids.items()}
        cpu_after = (sum(per_after.values()), own_cpu_seconds())
        server_cpu = cpu_after[0] - cpu_before[0] if server_pids else cpu_after[1] - cpu_before[1]
        row["cpu_ms_per_ask"] = {
            "by_service": {name: round((per_after[name] - per_before[name]) / total * 1000, 2) for name in pids},
            "server": round(server_cpu / total * 1000, 2),
            "client": round((cpu_after[1] - cpu_before[1]) / total * 1000, 2) if server_pids else None,
            # What the CPU alone allows on this machine's cores if nothing else ran on them.
            "cpu_bound_asks_per_s": round((os.cpu_count() or 1) / (server_cpu / total), 1) if server_cpu else None,
        }
        row["load_average_1m"] = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
        row["quiet_wait_seconds"] = quiet_wait
        row["stages"] = stage_breakdown(before, scrape(urls), total)
        progress(f"{name} c={concurrency}: p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms, p99 {row['p99_ms']} ms, "
                 f"{row['asks_per_s']} asks/s, {row['errors']} errors, server CPU {row['cpu_ms_per_ask']['server']} "
                 f"ms/ask, load {row['load_average_1m']['before']}")
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "bench.json")
    parser.add_argument("--data", type=Path,
                        default=scifact_core.SCIFACT_DIR)
    parser.add_argument("--cache", type=Path, default=REPO / ".citetrace" / "cache" / "embeddings.sqlite",
                        help="embedding cache shared with make bench-retrieval")
    parser.add_argument("--scifact-docs", type=int, default=0,
                        help="SciFact documents ingested as tenant scifact (0 = all 5,183)")
    parser.add_argument("--scifact-queries", type=int, default=100, help="SciFact test queries in the mix")
    parser.add_argument("--backend", choices=("embedded", "opensearch"), default="embedded",
                        help="retrieval's search backend (opensearch: the local node, make opensearch-up)")
    parser.add_argument("--beside", type=Path, default=None,
                        help="another run's JSON (e.g. bench/results/bench.json) whose figures are reported beside")
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--asks", type=int, default=240, help="asks per concurrency level (x2 at 32)")
    parser.add_argument("--ingest-workers", type=int, default=2)
    parser.add_argument("--query-cache-size", type=int, default=None,
                        help="retrieval's query-vector LRU (CITETRACE_RETRIEVAL_QUERY_CACHE_SIZE); 0 disables it. "
                             "The mix repeats questions, so the cache flatters the numbers: compare with 0")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    asks_per_level = {c: args.asks * (2 if c >= 32 else 1) for c in levels}
    args.cache = args.cache.resolve()
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    # The stack's retrieval process embeds through the retrieval bench's cache, and keeps the
    # relevance passage sides it computes beside it: derived data keyed by model, format and text, so
    # a later run reads them instead of computing SciFact's again (about 9 minutes on 2 cores).
    os.environ["CITETRACE_RETRIEVAL_EMBEDDING_CACHE_PATH"] = str(args.cache)
    relevance_store = args.cache.parent / "relevance-passages-bench.sqlite"
    os.environ["CITETRACE_RETRIEVAL_RELEVANCE_STORE_PATH"] = str(relevance_store)
    if args.query_cache_size is not None:
        os.environ["CITETRACE_RETRIEVAL_QUERY_CACHE_SIZE"] = str(args.query_cache_size)

    corpus, queries, _train, test = scifact_core.load_scifact(args.data)
    docs = corpus if args.scifact_docs <= 0 else corpus[: args.scifact_docs]
    doc_ids = {d["_id"] for d in docs}
    # Test queries whose relevant documents are in the ingested subset first (a realistic hit).
    qids = sorted(test, key=lambda q: (not set(test[q]) & doc_ids, q))[: args.scifact_queries]
    questions = question_mix([queries[q] for q in qids])
    progress(f"{len(questions)} questions ({sum(t == 'scifact' for t, _, _ in questions)} SciFact), "
             f"{len(docs)} SciFact documents")

    result: dict = {
        "benchmark": "Ask over the real gRPC stack vs the same cores in one process",
        "command": "make bench",
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(), "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")},
        "stack": f"six services as processes (citetrace up --detach), {args.backend} search backend, SQLite, "
                 "extractive generator",
        "backend": args.backend,
        "corpus": {"sample_tenants": ["acme-health", "borealis-clinics", "cedar-care"],
                   "scifact_tenant_docs": len(docs), "scifact_docs_total": len(corpus)},
        "questions": {"total": len(questions), "scifact": sum(t == "scifact" for t, _, _ in questions),
                      "sample": sum(t != "scifact" for t, _, _ in questions)},
        "asks_per_level": {str(c): n for c, n in asks_per_level.items()},
        "retrieval_query_cache_size": args.query_cache_size if args.query_cache_size is not None else
        RetrievalSettings.query_cache_size,
    }
    with tempfile.TemporaryDirectory(prefix="citetrace-ask-bench-") as tmp:
        tmp = Path(tmp)
        with running_stack(tmp / "stack", backend=args.backend) as stack:
            progress(f"ingesting {len(docs)} SciFact documents as tenant scifact through IngestDocument")
            result["scifact_ingest"] = ingest_scifact(stack, docs, args.ingest_workers)
            progress(f"ingested in {result['scifact_ingest']['seconds']}s "
                     f"({result['scifact_ingest']['docs_per_s']} docs/s)")
            urls = [f"http://127.0.0.1:{BY_NAME[s.name].metrics_port + stack.offset}/metrics" for s in SERVICES]
            result["scifact_ingest"]["passage_sides_wait_seconds"] = wait_passage_sides(
                f"http://127.0.0.1:{BY_NAME['retrieval'].metrics_port + stack.offset}/metrics")
            ask, channel = grpc_asker(stack)
            # Warm-up over the whole mix once: channels, JIT paths and the per-text caches (the
            # validator's token vectors, ...); with 120 asks the first level measured ~100 questions
            # cold and every later level none, so CPU per ask at c=1 and c=8 was not comparable.
            closed_loop(ask, questions, 4, len(questions))
            pids = {name: entry["pid"] for name, entry in read_state(tmp / "stack").get("services", {}).items()}
            result["microservices"] = run_levels("grpc", ask, questions, levels, asks_per_level, urls, pids)
            channel.close()

            progress("building the same cores in this process")
            in_ask, close = build_in_process(tmp / "stack", tmp / "in-process", args.cache, args.query_cache_size,
                                             backend_settings(stack), relevance_store)
            try:
                closed_loop(in_ask, questions, 4, len(questions))
                result["in_process"] = run_levels("in-process", in_ask, questions, levels, asks_per_level,
                                                  ["in-process"])
            finally:
                close()

    ratios = []
    for micro, local in zip(result["microservices"], result["in_process"], strict=True):
        ratios.append({
            "concurrency": micro["concurrency"],
            "p50_ratio": round(micro["p50_ms"] / local["p50_ms"], 2),
            "p95_ratio": round(micro["p95_ms"] / local["p95_ms"], 2),
            "throughput_ratio": round(local["asks_per_s"] / micro["asks_per_s"], 2),
        })
    result["overhead_microservices_over_in_process"] = ratios
    at8 = next((row for row in result["microservices"] if row["concurrency"] == 8), None)
    ratio8 = next((row for row in ratios if row["concurrency"] == 8), None)
    best = max(row["asks_per_s"] for row in result["microservices"])
    result["targets"] = {
        "p50_ms_at_8<=40": None if at8 is None else {"value": at8["p50_ms"], "met": at8["p50_ms"] <= 40.0},
        "p95_ms_at_8<=100": None if at8 is None else {"value": at8["p95_ms"], "met": at8["p95_ms"] <= 100.0},
        "asks_per_s>=50": {"value": best, "met": best >= 50.0},
        "overhead_ratio_p50_at_8<=1.5": None if ratio8 is None else
        {"value": ratio8["p50_ratio"], "met": ratio8["p50_ratio"] <= 1.5},
    }
    if at8:
        result["where_time_goes_at_8"] = [
            {"stage": f"{row['service']}/{row['name']}", "per_ask_ms": row["per_ask_ms"], "mean_ms": row["mean_ms"],
             "cpu_per_ask_ms": row.get("cpu_per_ask_ms")}
            for row in at8["stages"] if row["kind"] == "stage" and row["name"] != "orchestrator.ask"][:6]
    if args.beside is not None:
        result["beside"] = beside(result, args.beside.resolve())
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(report(result))
    progress(f"wrote {args.json}")
    return 0


def report(result: dict) -> str:
    lines = [f"cores: {result['machine']['cores']}; questions: {result['questions']}; "
             f"SciFact docs: {result['corpus']['scifact_tenant_docs']}",
             f"{'mode':<13} {'conc':>4} {'asks':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'asks/s':>8} {'err':>4} "
             f"{'cpu ms/ask':>10} {'load1':>6}"]
    for mode in ("microservices", "in_process"):
        for row in result[mode]:
            lines.append(f"{mode:<13} {row['concurrency']:>4} {row['asks']:>5} {row['p50_ms']:>8} {row['p95_ms']:>8} "
                         f"{row['p99_ms']:>8} {row['asks_per_s']:>8} {row['errors']:>4} "
                         f"{row['cpu_ms_per_ask']['server']:>10} {row['load_average_1m']['before']:>6}")
    for row in result["overhead_microservices_over_in_process"]:
        lines.append(f"ratio microservices/in-process at c={row['concurrency']}: p50 x{row['p50_ratio']}, "
                     f"p95 x{row['p95_ratio']}, throughput x{row['throughput_ratio']}")
    at8 = next((row for row in result["microservices"] if row["concurrency"] == 8), None)
    if at8:
        lines.append("stages at c=8 over gRPC (mean ms per call, ms per ask):")
        for stage in at8["stages"]:
            lines.append(f"  {stage['kind']:<11} {stage['service']:<19} {stage['name']:<34} n={stage['count']:<5} "
                         f"mean {stage['mean_ms']:>7} p95 {stage['p95_ms']!s:>7} per-ask {stage['per_ask_ms']:>7}"
                         f" cpu/ask {stage.get('cpu_per_ask_ms', '-')!s:>6}")
    other = result.get("beside")
    if other:
        lines.append(f"beside: {other['backend']} ({other['file']}, {other['created_at']}"
                     f"{'' if other['same_scifact_docs'] else ', OTHER SciFact docs'}):")
        for mode in ("microservices", "in_process"):
            mine = {row["concurrency"]: row for row in result[mode]}
            for row in other[mode]:
                here = mine.get(row["concurrency"])
                if here:
                    lines.append(f"  {mode:<13} c={row['concurrency']:<3} p50 {here['p50_ms']} vs {row['p50_ms']} ms, "
                                 f"p95 {here['p95_ms']} vs {row['p95_ms']} ms, asks/s {here['asks_per_s']} vs "
                                 f"{row['asks_per_s']}, cpu ms/ask {here['cpu_ms_per_ask']['server']} vs "
                                 f"{row['cpu_ms_per_ask']}")
    for name, target in result["targets"].items():
        if target:
            lines.append(f"target {name}: {target['value']} -> {'met' if target['met'] else 'MISSED'}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
