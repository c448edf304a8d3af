"""Prometheus metrics with small, fixed label sets (DESIGN.md §7). Defined once per process so
several in-process services (tests, benchmarks) share one registry without duplicates."""

from __future__ import annotations

import threading

from prometheus_client import Counter, Histogram, start_http_server

# 1 ms .. 10 s, dense enough to tell a 3 ms stage from a 9 ms one.
LATENCY_BUCKETS = (
    0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075,
    0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0,
)

STAGE_DURATION = Histogram(
    "citetrace_stage_duration_seconds",
    "Wall time of one pipeline stage.",
    ["service", "stage"],
    buckets=LATENCY_BUCKETS,
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

_started: dict[int, int] = {}
_lock = threading.Lock()


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
