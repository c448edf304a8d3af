"""Prometheus metrics with small, fixed label sets (DESIGN.md §7). Defined once per process so
several in-process services (tests, benchmarks) share one registry without duplicates.

Who increments what (every metric is documented in the README's SRE section):
- kit (every service): citetrace_stage_duration_seconds (via telemetry.stage), the gRPC server
  metrics, citetrace_build_info, and citetrace_scope_violations_blocked_total for any DomainError
  whose reason ends in SCOPE_VIOLATION.
- orchestrator: citetrace_answers_total{outcome} once per answer part, citetrace_passages_offered
  per policy part, citetrace_trace_outbox_pending.
- citation_validator: citetrace_citation_failures_total{reason} per failed check (use
  record_citation_failure, which also feeds the digest and scope counters).
- retrieval: citetrace_retrieval_empty_total per Search with no eligible passage,
  citetrace_digest_failures_total{service,kind} when a stored text no longer matches its digest.
- scheduler_gateway: citetrace_slot_read_age_seconds per slot read (now - as_of).
- trace: citetrace_digest_failures_total{service="trace",kind="trace_chain"} when a chain check fails;
  citetrace_signature_failures_total{kind=trace_link|checkpoint}, citetrace_chain_checkpoint_mismatches_total,
  citetrace_chain_checkpoint_age_seconds, citetrace_review_backlog.
- retrieval also: citetrace_signature_failures_total{kind="version"} for a version statement that
  does not verify; digest kinds version_text, passage_span, passage_identity.
- retrieval also: citetrace_search_backend_health{service,backend,status} (1 for the status of the
  last health sample, 0 for the others), citetrace_search_backend_nodes, and
  citetrace_search_backend_errors_total{service,backend,outcome} per failed backend request
  (outcome "retried": a retry followed; "exhausted": the call failed with SEARCH_BACKEND_UNAVAILABLE).
- orchestrator also: citetrace_trace_outbox_write_failures_total (the answer was withheld),
  citetrace_trace_outbox_dead_letters.
"""

from __future__ import annotations

import threading
from importlib import metadata

from prometheus_client import Counter, Gauge, Histogram, start_http_server

from citetrace.common.v1 import common_pb2

# 1 ms .. 10 s, dense enough to tell a 3 ms stage from a 9 ms one.
LATENCY_BUCKETS = (
    0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075,
    0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0,
)
# Freshness of availability data: 100 ms .. 1 day.
FRESHNESS_BUCKETS = (0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0, 1800.0, 3600.0, 21600.0, 86400.0)

# The values a label may take where the set is closed (docs, dashboards and tests read these).
DIGEST_FAILURE_KINDS = ("passage_span", "version_text", "passage_identity", "trace_chain")
# What a failed Ed25519 signature was on: a retrieval version statement, a trace chain link, a
# chain-head checkpoint (issue 16).
SIGNATURE_FAILURE_KINDS = ("version", "trace_link", "checkpoint")
# DESIGN.md §5 and §3: the named validation reasons and the part outcomes, as the contract's enums
# name them (without the enum prefix), so the label values follow the proto.
CITATION_FAILURE_REASONS = tuple(
    v.name.removeprefix("FAILURE_REASON_") for v in common_pb2.FailureReason.DESCRIPTOR.values if v.number
)
ANSWER_OUTCOMES = tuple(
    v.name.removeprefix("PART_OUTCOME_") for v in common_pb2.PartOutcome.DESCRIPTOR.values if v.number
)
# The stage spans of DESIGN.md §7 by the service that opens them: their latency series start at
# zero when the service starts, so rates and quantiles work from the first request.
DESIGN_STAGES = {
    "orchestrator": ("orchestrator.ask", "orchestrator.route"),
    "retrieval": ("retrieval.search", "retrieval.embed", "retrieval.lexical", "retrieval.vector", "retrieval.fuse"),
    "generation": ("generation.generate",),
    "citation_validator": ("validator.validate", "validator.reload", "validator.support"),
    "scheduler_gateway": ("scheduler.find_slots",),
    "trace": ("trace.record",),
}

STAGE_DURATION = Histogram(
    "citetrace_stage_duration_seconds",
    "Wall time of one pipeline stage.",
    ["service", "stage"],
    buckets=LATENCY_BUCKETS,
)
# CPU of the thread that runs a stage (time.thread_time), beside its wall time: where an answer's
# CPU goes (issue 21 point 5). Work the stage hands to other threads (ONNX Runtime's intra-op pool
# when it has more than one thread, a fan-out pool) is not in it; inner stages are also in outer ones.
STAGE_CPU = Counter(
    "citetrace_stage_cpu_seconds",
    "CPU time of the calling thread inside one pipeline stage (other threads it hands work to excluded).",
    ["service", "stage"],
)
GRPC_SERVER_HANDLED = Counter(
    "citetrace_grpc_server_handled_total",
    "RPCs completed by a citetrace server, by method and status code.",
    ["service", "method", "code"],
)
GRPC_SERVER_DURATION = Histogram(
    "citetrace_grpc_server_handling_seconds",
    "Server-side handling time of an RPC.",
    ["service", "method"],
    buckets=LATENCY_BUCKETS,
)
ANSWERS = Counter("citetrace_answers_total", "Answer parts by outcome.", ["outcome"])
CITATION_FAILURES = Counter(
    "citetrace_citation_failures_total", "Citation validation failures by named reason.", ["reason"]
)
RETRIEVAL_EMPTY = Counter("citetrace_retrieval_empty_total", "Searches that returned no eligible passage.")
PASSAGES_OFFERED = Histogram(
    "citetrace_passages_offered",
    "Passages offered to the generator per part.",
    buckets=(0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20),
)
DIGEST_FAILURES = Counter(
    "citetrace_digest_failures_total",
    "Stored text or records whose recomputed sha256 no longer matches the recorded digest.",
    ["service", "kind"],
)
SCOPE_VIOLATIONS_BLOCKED = Counter(
    "citetrace_scope_violations_blocked_total",
    "Requests or citations refused because they reached outside the caller's tenant, roles or locations.",
    ["service"],
)
SLOT_READ_AGE = Histogram(
    "citetrace_slot_read_age_seconds",
    "Age of availability data when it is read (request time minus the slot source's as_of).",
    ["service"],
    buckets=FRESHNESS_BUCKETS,
)
RELEVANCE_SIDES_PENDING = Gauge(
    "citetrace_retrieval_passage_sides_pending",
    "Indexed passages whose relevance passage side (the rerank's and the gate's features) is not computed yet.",
    ["service"],
)
TRACE_OUTBOX_PENDING = Gauge(
    "citetrace_trace_outbox_pending",
    "Trace records waiting in the durable local outbox for the trace service.",
    ["service"],
)
SIGNATURE_FAILURES = Counter(
    "citetrace_signature_failures_total",
    "Signed statements (version statements, trace chain links, checkpoints) whose signature is missing, "
    "unknown or wrong.",
    ["service", "kind"],
)
CHECKPOINT_MISMATCHES = Counter(
    "citetrace_chain_checkpoint_mismatches_total",
    "Chain verifications or checkpoint attempts that found the trace chain disagreeing with its latest "
    "signed checkpoint or with its link signatures.",
    ["service"],
)
CHECKPOINT_AGE = Gauge(
    "citetrace_chain_checkpoint_age_seconds",
    "Seconds since the newest signed checkpoint of any tenant was written (the tail a truncation could "
    "remove unnoticed).",
    ["service"],
)
TRACE_OUTBOX_WRITE_FAILURES = Counter(
    "citetrace_trace_outbox_write_failures_total",
    "Trace records that could not be written to the durable outbox; the answer was not sent (fail closed).",
    ["service"],
)
TRACE_OUTBOX_DEAD_LETTERS = Gauge(
    "citetrace_trace_outbox_dead_letters",
    "Trace records the trace service rejected for good, kept in the outbox as dead letters.",
    ["service"],
)
REVIEW_BACKLOG = Gauge(
    "citetrace_review_backlog",
    "Answers that need re-review (a cited version was superseded or retired) for longer than the "
    "review-backlog setting.",
    ["service"],
)
# The search backend's health as the retrieval service last sampled it (services/retrieval/backend_health.py).
SEARCH_BACKEND_STATUSES = ("green", "yellow", "red", "unreachable")
SEARCH_BACKEND_ERROR_OUTCOMES = ("retried", "exhausted")
SEARCH_BACKEND_HEALTH = Gauge(
    "citetrace_search_backend_health",
    "1 for the search backend's health status at the last sample (green, yellow, red, unreachable), 0 for "
    "the others.",
    ["service", "backend", "status"],
)
SEARCH_BACKEND_NODES = Gauge(
    "citetrace_search_backend_nodes", "Nodes of the search backend's cluster at the last health sample.",
    ["service", "backend"],
)
SEARCH_BACKEND_ERRORS = Counter(
    "citetrace_search_backend_errors_total",
    "Failed requests to the search backend: retried (a retry followed) or exhausted (the call failed).",
    ["service", "backend", "outcome"],
)
BUILD_INFO = Gauge(
    "citetrace_build_info", "Always 1 while the service runs; labels name the build.", ["service", "version"]
)

_started: dict[int, int] = {}
_lock = threading.Lock()


def package_version() -> str:
    try:
        return metadata.version("citetrace")
    except metadata.PackageNotFoundError:
        return "unknown"


def init_service_metrics(service: str) -> None:
    """Called by the kit when a service starts: the build info, and the zero series of the
    counters this service owns, so rates and `increase()` work from the first scrape."""
    BUILD_INFO.labels(service=service, version=package_version()).set(1)
    SCOPE_VIOLATIONS_BLOCKED.labels(service=service)
    for stage_name in DESIGN_STAGES.get(service, ()):
        STAGE_DURATION.labels(service=service, stage=stage_name)
        STAGE_CPU.labels(service=service, stage=stage_name)
    if service == "orchestrator":
        for outcome in ANSWER_OUTCOMES:
            ANSWERS.labels(outcome=outcome)
        TRACE_OUTBOX_PENDING.labels(service=service).set(0)
        TRACE_OUTBOX_DEAD_LETTERS.labels(service=service).set(0)
        TRACE_OUTBOX_WRITE_FAILURES.labels(service=service)
    elif service == "citation_validator":
        for reason in CITATION_FAILURE_REASONS:
            CITATION_FAILURES.labels(reason=reason)
        DIGEST_FAILURES.labels(service=service, kind="passage_span")
    elif service == "retrieval":
        for kind in ("version_text", "passage_span", "passage_identity"):
            DIGEST_FAILURES.labels(service=service, kind=kind)
        SIGNATURE_FAILURES.labels(service=service, kind="version")
    elif service == "trace":
        DIGEST_FAILURES.labels(service=service, kind="trace_chain")
        for kind in ("trace_link", "checkpoint"):
            SIGNATURE_FAILURES.labels(service=service, kind=kind)
        CHECKPOINT_MISMATCHES.labels(service=service)
        REVIEW_BACKLOG.labels(service=service).set(0)


def record_search_backend_health(service: str, backend: str, status: str, nodes: int) -> None:
    for name in SEARCH_BACKEND_STATUSES:
        SEARCH_BACKEND_HEALTH.labels(service=service, backend=backend, status=name).set(1 if name == status else 0)
    SEARCH_BACKEND_NODES.labels(service=service, backend=backend).set(nodes)


def record_search_backend_error(backend: str, outcome: str, service: str = "retrieval") -> None:
    SEARCH_BACKEND_ERRORS.labels(service=service, backend=backend, outcome=outcome).inc()


def init_search_backend_metrics(backend: str, service: str = "retrieval") -> None:
    """The zero series of a backend's error counter (rates work from the first scrape)."""
    for outcome in SEARCH_BACKEND_ERROR_OUTCOMES:
        SEARCH_BACKEND_ERRORS.labels(service=service, backend=backend, outcome=outcome)


def scope_violation_blocked(service: str) -> None:
    SCOPE_VIOLATIONS_BLOCKED.labels(service=service).inc()


def record_citation_failure(reason: str, service: str = "citation_validator") -> None:
    """One failed citation check: counted by reason; digest and scope failures also feed their
    own counters so the digest and scope alerts need no knowledge of validation reasons."""
    CITATION_FAILURES.labels(reason=reason).inc()
    if reason == "SPAN_DIGEST_MISMATCH":
        DIGEST_FAILURES.labels(service=service, kind="passage_span").inc()
    elif reason == "SCOPE_VIOLATION":
        scope_violation_blocked(service)


def record_digest_failure(service: str, kind: str) -> None:
    if kind not in DIGEST_FAILURE_KINDS:
        raise ValueError(f"digest failure kind {kind!r} not in {DIGEST_FAILURE_KINDS}")
    DIGEST_FAILURES.labels(service=service, kind=kind).inc()


def record_signature_failure(service: str, kind: str) -> None:
    if kind not in SIGNATURE_FAILURE_KINDS:
        raise ValueError(f"signature failure kind {kind!r} not in {SIGNATURE_FAILURE_KINDS}")
    SIGNATURE_FAILURES.labels(service=service, kind=kind).inc()


def record_slot_read_age(age_seconds: float, service: str = "scheduler_gateway") -> None:
    SLOT_READ_AGE.labels(service=service).observe(max(age_seconds, 0.0))


def serve_metrics(port: int, host: str = "127.0.0.1") -> int:
    """Starts the /metrics HTTP endpoint; returns the bound port (port 0 picks a free one).
    A negative port disables the endpoint and returns -1."""
    if port < 0:
        return -1
    with _lock:
        if port and port in _started:
            return _started[port]
        server, _thread = start_http_server(port, addr=host)
        bound = server.server_port
        _started[port or bound] = bound
        return bound
