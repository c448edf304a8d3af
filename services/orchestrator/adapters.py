"""gRPC adapters behind the core's ports: each call carries the caller's bearer token (forwarded by
kit.clients.call) and a deadline; a failed RPC becomes the kit DomainError of the same code."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from citetrace.citation_validator.v1 import citation_validator_service_pb2_grpc as cv_grpc
from citetrace.generation.v1 import generation_service_pb2_grpc as gen_grpc
from citetrace.kit.auth import AuthSettings
from citetrace.kit.clients import invoke, stub
from citetrace.kit.trace_client import TraceClient
from citetrace.outbox import TraceOutbox, trace_deliverer
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as sched_grpc
from citetrace.trace.v1 import trace_service_pb2 as trace_pb

log = logging.getLogger("citetrace.orchestrator")


class _Client:
    service = ""

    def _invoke(self, method, request, timeout: float, token: str | None = None):
        return invoke(method, request, self.service, timeout=timeout, token=token)


class SchedulerClient(_Client):
    service = "scheduler_gateway"

    def __init__(self, target: str) -> None:
        self._stub = stub(sched_grpc.SchedulerGatewayServiceStub, target)

    def list_locations(self, request, timeout):
        return self._invoke(self._stub.ListLocations, request, timeout)

    def find_slots(self, request, timeout):
        return self._invoke(self._stub.FindSlots, request, timeout)


class RetrievalClient(_Client):
    service = "retrieval"

    def __init__(self, target: str) -> None:
        self._stub = stub(ret_grpc.RetrievalServiceStub, target)

    def search(self, request, timeout):
        return self._invoke(self._stub.Search, request, timeout)

    def get_passages(self, request, timeout):
        return self._invoke(self._stub.GetPassages, request, timeout)


class GenerationClient(_Client):
    service = "generation"

    def __init__(self, target: str) -> None:
        self._stub = stub(gen_grpc.GenerationServiceStub, target)

    def generate(self, request, timeout):
        return self._invoke(self._stub.Generate, request, timeout)


class ValidatorClient(_Client):
    service = "citation_validator"

    def __init__(self, target: str) -> None:
        self._stub = stub(cv_grpc.CitationValidatorServiceStub, target)

    def validate(self, request, timeout):
        return self._invoke(self._stub.Validate, request, timeout)


class TraceSink:
    """Every record goes through the durable outbox (citetrace.outbox.TraceOutbox).

    background (default): the record is written to the outbox file (one committed INSERT) and the
    outbox's background deliverer sends it, in order per tenant; `submit` returns False ("queued
    durably"), and the answer does not wait for the trace service.
    direct: delivered now when the trace service answers (`submit` returns True), else kept on disk
    and redelivered in order by the background deliverer."""

    def __init__(self, target: str, auth: AuthSettings | None, outbox_path: Path, timeout: float,
                 delivery: str = "background", synchronous: str = "NORMAL") -> None:
        self._background = delivery == "background"
        self._timeout = timeout
        self._contexts: dict[str, object] = {}
        self._contexts_lock = threading.Lock()
        client = TraceClient(target, auth, caller="orchestrator", timeout=timeout)
        self._outbox = TraceOutbox(outbox_path, self._in_ask_trace(trace_deliverer(client)), synchronous=synchronous)

    # Span contexts of Asks whose records wait for background delivery (bounded; after a restart
    # the trace ID alone is used as the remote parent).
    _MAX_CONTEXTS = 10_000

    def _remember_context(self, record: trace_pb.TraceRecord) -> None:
        from opentelemetry import trace as otel_trace

        span_context = otel_trace.get_current_span().get_span_context()
        if span_context.is_valid:
            with self._contexts_lock:
                self._contexts[record.trace_id] = span_context
                while len(self._contexts) > self._MAX_CONTEXTS:
                    self._contexts.pop(next(iter(self._contexts)))

    def _in_ask_trace(self, deliver):
        """Delivery in the background still belongs to the Ask's OpenTelemetry trace: RecordTrace
        and trace.record appear under the Ask's span (its trace ID is the record's trace ID)."""
        import random

        from opentelemetry import context as otel_context
        from opentelemetry import trace as otel_trace

        def delivered_in_trace(record: trace_pb.TraceRecord) -> None:
            if otel_trace.get_current_span().get_span_context().is_valid:
                deliver(record)  # direct delivery, inside the Ask's own span
                return
            with self._contexts_lock:
                span_context = self._contexts.get(record.trace_id)
            if span_context is None:
                try:
                    trace_id = int(record.trace_id, 16) if len(record.trace_id) == 32 else 0
                except ValueError:
                    trace_id = 0
                if trace_id:
                    span_context = otel_trace.SpanContext(
                        trace_id, random.getrandbits(64) or 1, is_remote=True,
                        trace_flags=otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED))
            if span_context is None:
                deliver(record)
                return
            token = otel_context.attach(otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(span_context)))
            try:
                deliver(record)
            finally:
                otel_context.detach(token)
            with self._contexts_lock:
                self._contexts.pop(record.trace_id, None)

        return delivered_in_trace

    def start(self) -> None:
        self._outbox.start()

    def stop(self, drain_seconds: float | None = None) -> None:
        """Stops the deliverer; first gives records still waiting a bounded chance to be delivered
        (what is left stays on disk and is delivered by the next start)."""
        if self._outbox.pending_count():
            self._outbox.wait_empty(self._timeout if drain_seconds is None else drain_seconds)
        self._outbox.stop()

    def flush(self) -> int:
        """Delivers waiting records now; returns how many are still waiting."""
        return self._outbox.flush()

    def submit(self, record: trace_pb.TraceRecord) -> bool:
        if self._background:
            self._remember_context(record)
            self._outbox.enqueue(record)
            return False
        return bool(self._outbox.submit(record))
