"""The orchestrator over real gRPC, in-process: retries, deadlines, verified slots only, token
forwarding, and the trace outbox, with a scheduler that flaps or stalls on purpose and the real
trace service."""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time

import grpc
import pytest
from citetrace.common.v1 import common_pb2 as c
from citetrace.kit.context import current_principal
from citetrace.kit.errors import Unavailable
from citetrace.kit.server import ServiceRunner, ServiceSpec
from citetrace.kit.settings import ServerSettings
from citetrace.kit.testing import serving, token_metadata
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as sched_pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as sched_grpc
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from citetrace.trace.v1 import trace_service_pb2_grpc as trace_grpc
from google.protobuf.timestamp_pb2 import Timestamp

from services.orchestrator.bootstrap import build_spec as orchestrator_spec
from services.orchestrator.settings import Settings
from services.trace.bootstrap import build_spec as trace_spec
from services.trace.settings import Settings as TraceSettings

QUESTION = "Can I book cardiology at Alpha Clinic tomorrow?"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stamp(value: dt.datetime) -> Timestamp:
    out = Timestamp()
    out.FromDatetime(value.replace(tzinfo=None))
    return out


class StubScheduler(sched_grpc.SchedulerGatewayServiceServicer):
    """Stands in for scheduler-gateway: fails the first `failures` FindSlots with UNAVAILABLE,
    waits `delay` seconds, and records the principal each call carried."""

    def __init__(self, failures: int = 0, delay: float = 0.0, verified: bool = True) -> None:
        self.failures, self.delay, self.verified = failures, delay, verified
        self.find_calls = 0
        self.principals = []
        self._lock = threading.Lock()

    def ListLocations(self, request, context):
        self.principals.append(current_principal())
        return sched_pb.ListLocationsResponse(locations=[
            sched_pb.Location(location_id="t-alpha", name="Alpha Clinic", time_zone="UTC", specialties=["cardiology"]),
            sched_pb.Location(location_id="t-beta", name="Beta Clinic", time_zone="UTC", specialties=["cardiology"]),
        ])

    def FindSlots(self, request, context):
        self.principals.append(current_principal())
        with self._lock:
            self.find_calls += 1
            failing = self.find_calls <= self.failures
        if failing:
            raise Unavailable("SCHEDULER_DOWN", "the system of record is not answering")
        time.sleep(self.delay)
        now = dt.datetime.now(dt.UTC)
        start = request.start_time.ToDatetime() + dt.timedelta(hours=9)
        slot = c.Slot(slot_id="slot-1", version=1, location_id=request.location_id, specialty=request.specialty,
                      time_zone="UTC", status=c.SLOT_STATUS_FREE, start_time=_stamp(start),
                      end_time=_stamp(start + dt.timedelta(minutes=30)))
        busy = c.Slot(slot_id="slot-2", version=1, location_id=request.location_id, specialty=request.specialty,
                      time_zone="UTC", status=c.SLOT_STATUS_BUSY, start_time=_stamp(start))
        reply = sched_pb.FindSlotsResponse(slots=[slot, busy])
        if self.verified:
            reply.as_of.CopyFrom(_stamp(now))
        return reply


def _scheduler_spec(servicer) -> ServiceSpec:
    return ServiceSpec("scheduler_gateway", "citetrace.scheduler_gateway.v1.SchedulerGatewayService", servicer,
                       sched_grpc.add_SchedulerGatewayServiceServicer_to_server)


@pytest.fixture
def trace_service(auth, tmp_path):
    with serving(trace_spec(TraceSettings(port=0, metrics_port=-1, data_dir=tmp_path / "trace")), auth) as runner:
        yield runner


def _orchestrator(auth, tmp_path, scheduler_address: str, trace_address: str, **overrides):
    dead = f"127.0.0.1:{_free_port()}"
    settings = Settings(port=0, metrics_port=-1, data_dir=tmp_path / "orch", scheduler_gateway_target=scheduler_address,
                        trace_target=trace_address, retrieval_target=dead, generation_target=dead,
                        citation_validator_target=dead, **overrides)
    return orchestrator_spec(settings, auth)


def _ask(runner, auth, question=QUESTION, timeout=10.0, tenant="tenant-a"):
    with grpc.insecure_channel(runner.address) as channel:
        return pb_grpc.OrchestratorServiceStub(channel).Ask(
            pb.AskRequest(question=question), timeout=timeout, metadata=token_metadata(auth, tenant, ("patient",)))


def _get_trace(auth, address, trace_id, tenant="tenant-a", wait=10.0):
    """The record; by default the orchestrator delivers it in the background, so NOT_FOUND is retried."""
    deadline = time.monotonic() + wait
    with grpc.insecure_channel(address) as channel:
        while True:
            try:
                return trace_grpc.TraceServiceStub(channel).GetTrace(
                    trace_pb.GetTraceRequest(trace_id=trace_id), timeout=5,
                    metadata=token_metadata(auth, tenant, ("auditor", "patient")))
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.NOT_FOUND or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)


def test_transient_unavailable_is_retried_once_and_the_token_is_forwarded(auth, tmp_path, trace_service):
    scheduler = StubScheduler(failures=1)
    with serving(_scheduler_spec(scheduler), auth) as sched, \
            serving(_orchestrator(auth, tmp_path, sched.address, trace_service.address), auth) as orch:
        response = _ask(orch, auth)
    (part,) = response.parts
    assert part.outcome == c.PART_OUTCOME_ANSWERED
    assert scheduler.find_calls == 2
    assert [s.slot_id for s in part.slots] == ["slot-1"], "only FREE slots are shown"
    assert part.HasField("slots_as_of")
    assert {p.tenant_id for p in scheduler.principals} == {"tenant-a"}
    assert {p.subject for p in scheduler.principals} == {"test-user"}
    # Background delivery (the default): the answer did not wait for RecordTrace; the outbox delivers.
    assert response.trace_delivered is False
    record = _get_trace(auth, trace_service.address, response.trace_id).record
    assert record.parts[0].outcome == c.PART_OUTCOME_ANSWERED


def test_direct_trace_delivery_records_before_answering(auth, tmp_path, trace_service):
    with serving(_scheduler_spec(StubScheduler()), auth) as sched, \
            serving(_orchestrator(auth, tmp_path, sched.address, trace_service.address, trace_delivery="direct"),
                    auth) as orch:
        response = _ask(orch, auth)
        assert response.trace_delivered is True
        record = _get_trace(auth, trace_service.address, response.trace_id, wait=0.0).record
    assert record.parts[0].outcome == c.PART_OUTCOME_ANSWERED


def test_background_delivery_keeps_the_record_when_the_trace_service_is_down(auth, tmp_path):
    trace_port = _free_port()
    spec = _orchestrator(auth, tmp_path, f"127.0.0.1:{_free_port()}", f"127.0.0.1:{trace_port}")
    with serving(spec, auth) as orch:
        response = _ask(orch, auth, "Should I double my insulin dose?")
        assert response.trace_delivered is False and response.trace_id
    # The orchestrator stopped with the trace service still down: the record is on disk.
    from citetrace.outbox import TraceOutbox

    def never(record):
        raise RuntimeError("trace service down")

    outbox = TraceOutbox(tmp_path / "orch" / "orchestrator" / "trace-outbox.sqlite", never)
    try:
        assert outbox.pending_count("tenant-a") == 1
    finally:
        outbox.close()


def test_a_scheduler_that_stays_down_gives_source_unavailable_after_one_retry(auth, tmp_path, trace_service):
    scheduler = StubScheduler(failures=10)
    with serving(_scheduler_spec(scheduler), auth) as sched, \
            serving(_orchestrator(auth, tmp_path, sched.address, trace_service.address), auth) as orch:
        response = _ask(orch, auth, "Can I book cardiology at Alpha Clinic tomorrow, and can I cancel it later?")
    slot_part, policy_part = response.parts
    assert slot_part.outcome == c.PART_OUTCOME_SOURCE_UNAVAILABLE and not slot_part.slots
    assert scheduler.find_calls == 2
    # The policy part fails on its own (retrieval is down too) and is not hidden by the slot part.
    assert policy_part.outcome == c.PART_OUTCOME_SOURCE_UNAVAILABLE
    assert policy_part.kind != slot_part.kind
    record = _get_trace(auth, trace_service.address, response.trace_id).record
    assert "SCHEDULER_DOWN" in record.parts[0].error and "retrieval" in record.parts[1].error


def test_a_stalled_scheduler_is_cut_off_by_the_callers_deadline(auth, tmp_path, trace_service):
    scheduler = StubScheduler(delay=5.0)
    with serving(_scheduler_spec(scheduler), auth) as sched, \
            serving(_orchestrator(auth, tmp_path, sched.address, trace_service.address), auth) as orch:
        started = time.monotonic()
        response = _ask(orch, auth, timeout=2.0)
        elapsed = time.monotonic() - started
    assert elapsed < 2.0
    assert response.parts[0].outcome == c.PART_OUTCOME_SOURCE_UNAVAILABLE
    record = _get_trace(auth, trace_service.address, response.trace_id).record
    assert "DEADLINE_EXCEEDED" in record.parts[0].error


def test_slots_the_gateway_did_not_verify_are_never_shown(auth, tmp_path, trace_service):
    with serving(_scheduler_spec(StubScheduler(verified=False)), auth) as sched, \
            serving(_orchestrator(auth, tmp_path, sched.address, trace_service.address), auth) as orch:
        response = _ask(orch, auth)
    assert not response.parts[0].slots and not response.parts[0].HasField("slots_as_of")


def test_ambiguous_clinic_gets_one_question(auth, tmp_path, trace_service):
    with serving(_scheduler_spec(StubScheduler()), auth) as sched, \
            serving(_orchestrator(auth, tmp_path, sched.address, trace_service.address), auth) as orch:
        response = _ask(orch, auth, "Can I book cardiology tomorrow?")
    assert response.parts[0].outcome == c.PART_OUTCOME_NEEDS_CLARIFICATION
    assert response.parts[0].clarification_question == "Which clinic would you like for cardiology: " \
                                                       "Alpha Clinic or Beta Clinic?"


def test_trace_service_down_the_record_waits_in_the_outbox_and_is_delivered_later(auth, tmp_path):
    trace_port = _free_port()
    trace_address = f"127.0.0.1:{trace_port}"
    spec = _orchestrator(auth, tmp_path, f"127.0.0.1:{_free_port()}", trace_address)
    with serving(spec, auth) as orch:
        response = _ask(orch, auth, "Should I double my insulin dose?")
        assert response.parts[0].outcome == c.PART_OUTCOME_OUT_OF_SCOPE
        assert response.trace_delivered is False
        runner = ServiceRunner(trace_spec(TraceSettings(port=trace_port, metrics_port=-1, data_dir=tmp_path / "t")),
                               ServerSettings(port=trace_port, metrics_port=-1, grace_seconds=0.2), auth)
        runner.start()
        runner.warm_up()
        try:
            deadline = time.monotonic() + 20  # the channel reconnects after its backoff
            while spec.servicer.flush_traces() and time.monotonic() < deadline:
                time.sleep(0.3)
            assert spec.servicer.flush_traces() == 0
            record = _get_trace(auth, trace_address, response.trace_id).record
        finally:
            runner.stop(0.2)
    assert record.parts[0].outcome == c.PART_OUTCOME_OUT_OF_SCOPE
    assert record.route.scope_reason.startswith("clinical request")


def test_question_validation(auth, tmp_path, trace_service):
    spec = _orchestrator(auth, tmp_path, f"127.0.0.1:{_free_port()}", trace_service.address)
    with serving(spec, auth) as orch, pytest.raises(grpc.RpcError) as caught:
        _ask(orch, auth, "x" * 5000, tenant="tenant-rejected")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Even a refused Ask leaves its evidence record.
    with grpc.insecure_channel(trace_service.address) as channel:
        listed = trace_grpc.TraceServiceStub(channel).ListTraces(
            trace_pb.ListTracesRequest(page_size=10), timeout=5,
            metadata=token_metadata(auth, "tenant-rejected", ("auditor", "patient")))
    (summary,) = listed.traces
    record = _get_trace(auth, trace_service.address, summary.trace_id, tenant="tenant-rejected").record
    assert "QUESTION_TOO_LONG" in record.parts[0].error


def _sample(name: str, **labels: str) -> float:
    from prometheus_client import REGISTRY

    value = REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_trace_id_is_the_otel_trace_of_orchestrator_ask_and_outcomes_are_counted(auth, tmp_path, trace_service):
    from citetrace.kit.telemetry import add_span_processor, setup_tracing
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    setup_tracing("citetrace-tests")
    exporter = InMemorySpanExporter()
    add_span_processor(SimpleSpanProcessor(exporter))
    answered = _sample("citetrace_answers_total", outcome="ANSWERED")
    out_of_scope = _sample("citetrace_answers_total", outcome="OUT_OF_SCOPE")
    with serving(_scheduler_spec(StubScheduler()), auth) as sched, \
            serving(_orchestrator(auth, tmp_path, sched.address, trace_service.address), auth) as orch:
        response = _ask(orch, auth, "Can I book cardiology at Alpha Clinic tomorrow and do I have the flu?")
    assert [p.outcome for p in response.parts] == [c.PART_OUTCOME_ANSWERED, c.PART_OUTCOME_OUT_OF_SCOPE]
    spans = {s.name: s for s in exporter.get_finished_spans()
             if format(s.context.trace_id, "032x") == response.trace_id}
    assert {"orchestrator.ask", "orchestrator.route"} <= set(spans)
    ask_span = spans["orchestrator.ask"]
    assert spans["orchestrator.route"].parent.span_id == ask_span.context.span_id
    # No question text in span attributes.
    assert not any("flu" in str(v) for s in spans.values() for v in (s.attributes or {}).values())
    assert _sample("citetrace_answers_total", outcome="ANSWERED") == answered + 1
    assert _sample("citetrace_answers_total", outcome="OUT_OF_SCOPE") == out_of_scope + 1


def test_location_hint_must_be_one_of_the_callers_locations(auth, tmp_path, trace_service):
    def ask(location_id, locations):
        with grpc.insecure_channel(orch.address) as channel:
            return pb_grpc.OrchestratorServiceStub(channel).Ask(
                pb.AskRequest(question="Can I book cardiology tomorrow?", location_id=location_id), timeout=10,
                metadata=token_metadata(auth, "tenant-a", ("patient",), locations))

    with serving(_scheduler_spec(StubScheduler()), auth) as sched, \
            serving(_orchestrator(auth, tmp_path, sched.address, trace_service.address), auth) as orch:
        hinted = ask("t-beta", ())
        assert hinted.parts[0].outcome == c.PART_OUTCOME_ANSWERED
        assert {s.location_id for s in hinted.parts[0].slots} == {"t-beta"}
        with pytest.raises(grpc.RpcError) as caught:
            ask("t-beta", ("t-alpha",))
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        # The only permitted location needs no question and no hint.
        only = ask("", ("t-alpha",))
        assert {s.location_id for s in only.parts[0].slots} == {"t-alpha"}
