"""OpenTelemetry set-up (before the server starts) and the one way to time a pipeline stage:
`with stage("retrieval", "retrieval.search", hits=3):` opens a span named after the stage and
records its duration in citetrace_stage_duration_seconds{service,stage}."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterator

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator

from citetrace.kit.metrics import STAGE_CPU, STAGE_DURATION, package_version

log = logging.getLogger("citetrace.telemetry")

_lock = threading.Lock()
_provider: TracerProvider | None = None

# Attribute names that would carry user or source text: never exported (DESIGN §7, issue 9).
FORBIDDEN_ATTRIBUTES = frozenset({
    "question", "query", "query_text", "normalized_query", "text", "passage_text", "content",
    "answer", "answer_text", "prompt", "claim_text", "message",
})
# Attribute names whose values are tenant IDs: exported as a pseudonymous reference.
TENANT_ATTRIBUTES = frozenset({"tenant", "tenant_id"})
_warned: set[str] = set()


class _RandomBlock(threading.local):
    """This thread's unread os.urandom bytes, and the process generation they were read in."""

    def __init__(self) -> None:
        self.data = b""
        self.offset = 0
        self.generation = -1


_fork_generation = 0


def _forked() -> None:
    global _fork_generation
    _fork_generation += 1


os.register_at_fork(after_in_child=_forked)


class UrandomIdGenerator(IdGenerator):
    """Trace and span IDs from os.urandom. A trace ID names an Ask's evidence record, so it must not
    follow the process's `random` state (OpenTelemetry's default generator does): anything in the
    process that seeds `random` (a library, a test framework) would repeat IDs, and the trace service
    refuses a second, different record under one ID (TRACE_ID_CONFLICT).

    IDs are cut from 4 KiB blocks read per thread: an Ask opens dozens of spans (every stage, call
    and SQL statement), and each os.urandom call is a system call that gives up the GIL and waits to
    take it back. A forked child never uses its parent's block: it would repeat the parent's IDs."""

    BLOCK_BYTES = 4096

    def __init__(self) -> None:
        self._block = _RandomBlock()

    def _take(self, size: int) -> int:
        block = self._block
        if block.generation != _fork_generation or block.offset + size > len(block.data):
            block.data, block.offset, block.generation = os.urandom(self.BLOCK_BYTES), 0, _fork_generation
        value = int.from_bytes(block.data[block.offset:block.offset + size], "big")
        block.offset += size
        return value

    def generate_span_id(self) -> int:
        return self._take(8) or 1

    def generate_trace_id(self) -> int:
        return self._take(16) or 1


def setup_tracing(service_name: str, exporter: SpanExporter | None = None) -> TracerProvider:
    """Installs the process-wide tracer provider once. Exports over OTLP/gRPC when
    OTEL_EXPORTER_OTLP_ENDPOINT is set; an explicit exporter (tests) is added as well."""
    global _provider
    with _lock:
        if _provider is None:
            resource = Resource.create({
                "service.name": os.environ.get("OTEL_SERVICE_NAME", service_name),
                "service.namespace": "citetrace",
                "service.version": package_version(),
            })
            _provider = TracerProvider(resource=resource, id_generator=UrandomIdGenerator())
            if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

                _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            trace.set_tracer_provider(_provider)
        if exporter is not None:
            add_span_processor(BatchSpanProcessor(exporter))
        return _provider


def add_span_processor(processor: SpanProcessor) -> None:
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.add_span_processor(processor)


def flush_telemetry(timeout_ms: int = 5000) -> None:
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.force_flush(timeout_ms)


_tracers: dict[str, trace.Tracer] = {}


def tracer(name: str = "citetrace") -> trace.Tracer:
    """One tracer per name: the SDK's get_tracer builds a new Tracer (and a warnings filter) on
    every call, which stage() would otherwise pay on every stage of every request. Before a
    provider is installed this is OpenTelemetry's proxy tracer, which follows the provider set
    later."""
    found = _tracers.get(name)
    if found is None:
        found = _tracers.setdefault(name, trace.get_tracer(name))
    return found


@contextlib.contextmanager
def stage(service: str, name: str, **attributes: object) -> Iterator[trace.Span]:
    """A span per stage plus its latency histogram. Attributes must never carry question or
    passage text: pass counts, IDs, outcomes and reasons only (names in FORBIDDEN_ATTRIBUTES are
    dropped); a `tenant`/`tenant_id` attribute is exported as tenant_ref(value)."""
    duration, cpu = _stage_series(service, name)
    started, cpu_started = time.perf_counter(), time.thread_time()
    with tracer(f"citetrace.{service}").start_as_current_span(name) as span:
        set_attributes(span, **attributes)
        try:
            yield span
        finally:
            duration.observe(time.perf_counter() - started)
            cpu.inc(time.thread_time() - cpu_started)


@functools.lru_cache(maxsize=1024)
def _stage_series(service: str, name: str):
    """A stage's duration and CPU series, looked up once (labels() checks and sorts its keyword
    arguments on every call; stage names are a fixed set)."""
    return STAGE_DURATION.labels(service=service, stage=name), STAGE_CPU.labels(service=service, stage=name)


def set_attributes(span: trace.Span, **attributes: object) -> None:
    """Sets citetrace.<key> attributes with the same rules as stage() (use it for values known
    only at the end of a stage, e.g. hit counts or the outcome)."""
    for key, value in attributes.items():
        if value is None:
            continue
        if key in FORBIDDEN_ATTRIBUTES:
            if key not in _warned:
                _warned.add(key)
                log.warning("span attribute %r dropped: spans never carry question or passage text", key)
            continue
        if key in TENANT_ATTRIBUTES:
            span.set_attribute("citetrace.tenant", tenant_ref(str(value)))
            continue
        span.set_attribute(f"citetrace.{key}", _attribute(value))


def tenant_ref(tenant_id: str) -> str:
    """A stable pseudonymous tenant reference for spans and logs: "t-" + 12 hex of sha256."""
    return "t-" + hashlib.sha256(tenant_id.encode()).hexdigest()[:12]


def _attribute(value: object) -> str | int | float | bool | list:
    if isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return str(value)


def current_trace_id() -> str:
    """The current OpenTelemetry trace ID as 32 lowercase hex ("" outside a span)."""
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else ""


class TraceContextFilter(logging.Filter):
    """Adds `trace_id` (32 hex, or "-" outside a span) to every log record, so a log line leads to
    its trace and evidence record. Installed on the root handlers by the kit's run_service."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.trace_id = current_trace_id() or "-"
        return True
