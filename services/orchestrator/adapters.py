"""gRPC adapters behind the core's ports (services/orchestrator/core/ports.py): each translates the
core's plain values to the downstream request and the reply back (services/orchestrator/codec.py),
carries the caller's bearer token (forwarded by kit.clients.call) and a deadline; a failed RPC
becomes the kit DomainError of the same code."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from citetrace.citation_validator.v1 import citation_validator_service_pb2_grpc as cv_grpc
from citetrace.generation.v1 import generation_service_pb2_grpc as gen_grpc
from citetrace.kit.auth import AuthSettings, Principal
from citetrace.kit.clients import invoke, stub
from citetrace.kit.trace_client import TraceClient
from citetrace.outbox import TraceOutbox, trace_deliverer
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as sched_pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as sched_grpc
from citetrace.trace.v1 import trace_service_pb2 as trace_pb

from services.orchestrator import codec
from services.orchestrator.core import model as m
from services.orchestrator.core.clinics import LocationInfo

log = logging.getLogger("citetrace.orchestrator")


class _Client:
    """A downstream service behind a stub: a grpc stub over a channel (`of_target`), or anything
    with the same unary methods (bench/ask_bench.py calls the servicers in process)."""

    service = ""
    stub_class: Any = None

    def __init__(self, service_stub: Any) -> None:
        self._stub = service_stub

    @classmethod
    def of_target(cls, target: str):
        return cls(stub(cls.stub_class, target))

    def _invoke(self, method, request, timeout: float, token: str | None = None):
        return invoke(method, request, self.service, timeout=timeout, token=token, caller="orchestrator")


class SchedulerClient(_Client):
    service = "scheduler_gateway"

    stub_class = sched_grpc.SchedulerGatewayServiceStub

    def list_locations(self, page_token: str, timeout: float) -> tuple[list[LocationInfo], str]:
        page = self._invoke(self._stub.ListLocations,
                            sched_pb.ListLocationsRequest(page_size=100, page_token=page_token), timeout)
        return [codec.location_from_pb(loc) for loc in page.locations], page.next_page_token

    def __init__(self, service_stub: Any, auth: AuthSettings | None = None) -> None:
        super().__init__(service_stub)
        self._auth = auth

    @classmethod
    def of_target(cls, target: str, auth: AuthSettings | None = None):
        return cls(stub(cls.stub_class, target), auth)

    def find_slots(self, query: m.SlotQuery, timeout: float) -> m.SlotResult:
        return codec.slots_from_pb(self._invoke(self._stub.FindSlots, codec.find_slots_pb(query), timeout))

    def list_appointments(self, query: m.AppointmentQuery, timeout: float) -> m.AppointmentList:
        request = sched_pb.ListAppointmentsRequest(specialty=query.specialty, page_size=query.page_size)
        return codec.appointments_from_pb(self._invoke(self._stub.ListAppointments, request, timeout))

    def propose_change(self, request: m.ProposalRequest, principal: Principal, timeout: float) -> m.Proposal:
        """The gateway stores proposals only from staff or from the assistant acting for the user:
        the call forwards the user's own token (tenant, roles, locations, patient) and comes from the
        orchestrator's certificate, which is how the gateway knows the assistant acts for the user."""
        reply = self._invoke(self._stub.ProposeChange, codec.propose_pb(request), timeout)
        return codec.proposal_from_pb(reply.proposal)


class RetrievalClient(_Client):
    service = "retrieval"

    stub_class = ret_grpc.RetrievalServiceStub

    def search(self, query: m.SearchQuery, timeout: float) -> m.SearchResult:
        return codec.search_from_pb(self._invoke(self._stub.Search, codec.search_pb(query), timeout))

    def versions_of(self, passage_ids, timeout: float) -> list[m.VersionInfo]:
        reply = self._invoke(self._stub.GetPassages, ret_pb.GetPassagesRequest(passage_ids=list(passage_ids)), timeout)
        return codec.versions_from_pb(reply)


class GenerationClient(_Client):
    service = "generation"

    stub_class = gen_grpc.GenerationServiceStub

    def generate(self, request: m.GenerationRequest, timeout: float) -> m.GenerationResult:
        return codec.generated_from_pb(self._invoke(self._stub.Generate, codec.generate_pb(request), timeout))


class ValidatorClient(_Client):
    service = "citation_validator"

    stub_class = cv_grpc.CitationValidatorServiceStub

    def validate(self, request: m.ValidationRequest, timeout: float) -> m.ValidationResult:
        return codec.validated_from_pb(self._invoke(self._stub.Validate, codec.validate_pb(request), timeout))


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
        client = TraceClient(target, caller="orchestrator", timeout=timeout)
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
        import secrets

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
                        trace_id, secrets.randbits(64) or 1, is_remote=True,
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
