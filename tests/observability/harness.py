"""A local OTLP/gRPC trace receiver and the six services started as real processes (`citetrace up
--detach`) exporting to it, on a free port offset so a developer's own stack is left alone."""

from __future__ import annotations

import contextlib
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from citetrace.kit.stack import SERVICES, stack_ports
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
CITETRACE = str(Path(sys.executable).parent / "citetrace")


@dataclass
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    service: str  # resource service.name
    kind: int
    attributes: dict[str, object] = field(default_factory=dict)
    start_ns: int = 0
    end_ns: int = 0

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


def _value(any_value) -> object:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, sink: OtlpReceiver) -> None:
        self._sink = sink

    def Export(self, request, context):  # noqa: N802 - gRPC method name
        spans = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(ReceivedSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        name=span.name,
                        service=str(resource.get("service.name", "")),
                        kind=span.kind,
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                    ))
        self._sink.add(spans)
        return trace_service_pb2.ExportTraceServiceResponse()


class OtlpReceiver:
    """OTLP/gRPC trace receiver on 127.0.0.1:<free port>; keeps every span it is sent."""

    def __init__(self) -> None:
        self._spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(self), self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, spans: list[ReceivedSpan]) -> None:
        with self._lock:
            self._spans.extend(spans)

    def spans(self, trace_id: str | None = None) -> list[ReceivedSpan]:
        with self._lock:
            return [s for s in self._spans if trace_id is None or s.trace_id == trace_id]

    def wait_for(self, trace_id: str, predicate, timeout: float = 20.0) -> list[ReceivedSpan]:
        """Spans of one trace, once predicate(spans) holds (or the timeout passed)."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans(trace_id)
            if predicate(spans) or time.monotonic() > deadline:
                return spans
            time.sleep(0.1)

    def stop(self) -> None:
        self._server.stop(0)


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_offset() -> int:
    """An offset that leaves every gRPC and metrics port of the stack free."""
    for _ in range(200):
        offset = random.randrange(2000, 15000, 10)
        ports = [p + offset for p in stack_ports()]
        if all(_free(p) for p in ports):
            return offset
    raise RuntimeError("no free port offset for the stack")


@dataclass
class Stack:
    data_dir: Path
    offset: int
    env: dict[str, str]

    def port(self, service: str) -> int:
        return next(i.port for i in SERVICES if i.name == service) + self.offset

    def metrics_port(self, service: str) -> int:
        return next(i.metrics_port for i in SERVICES if i.name == service) + self.offset

    def target(self, service: str) -> str:
        return f"127.0.0.1:{self.port(service)}"

    @property
    def transport(self):
        """The CLI's certificate from the stack's CA (`citetrace up` runs mutual TLS)."""
        from apps.cli.common import cli_transport

        return cli_transport(self.data_dir)

    def channel(self, service: str):
        """A channel of its own (close it) to a service of the stack, as the CLI."""
        from citetrace.kit.tls import open_channel

        return open_channel(self.target(service), self.transport)

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([CITETRACE, *args, "--data-dir", str(self.data_dir)], capture_output=True, text=True,
                              env=self.env, cwd=ROOT, timeout=timeout)

    def scrape(self, service: str) -> dict[tuple[str, tuple], float]:
        """{(sample name, sorted label items): value} from the service's /metrics."""
        url = f"http://127.0.0.1:{self.metrics_port(service)}/metrics"
        with urllib.request.urlopen(url, timeout=5) as reply:  # noqa: S310 - loopback only
            text = reply.read().decode()
        samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
        return samples

    def log(self, service: str) -> str:
        path = self.data_dir / "logs" / f"{service}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""


@contextlib.contextmanager
def running_stack(data_dir: Path, otlp_endpoint: str) -> Iterator[Stack]:
    offset = free_port_offset()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITETRACE_", "OTEL_"))}
    env.update({
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "OPENBLAS_NUM_THREADS": "1",
    })
    stack = Stack(data_dir, offset, env)
    started = subprocess.run([CITETRACE, "up", "--detach", "--data-dir", str(data_dir), "--port-offset", str(offset),
                              "--timeout", "240"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    try:
        if started.returncode != 0:
            logs = "\n".join(f"--- {i.name}\n{stack.log(i.name)}" for i in SERVICES)
            raise RuntimeError(f"citetrace up failed: {started.stdout}\n{started.stderr}\n{logs}")
        yield stack
    finally:
        subprocess.run([CITETRACE, "down", "--data-dir", str(data_dir)], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=60)
