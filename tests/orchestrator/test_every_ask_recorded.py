"""Issue 16 point 4, over real gRPC with the real trace service: every Ask that passes
authentication leaves a trace record with its outcome or error code before the response leaves —
refused at the kit's edge (an out-of-range as_of), refused by the core (an unknown conversation),
failed internally — and when the durable outbox cannot be written the answer does not leave
(UNAVAILABLE TRACE_NOT_RECORDED, counted in citetrace_trace_outbox_write_failures_total)."""

from __future__ import annotations

import grpc
import pytest
from citetrace.kit.testing import serving, token_metadata
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from citetrace.trace.v1 import trace_service_pb2_grpc as trace_grpc
from google.protobuf.timestamp_pb2 import Timestamp
from test_ask_inprocess import (
    QUESTION,
    StubScheduler,
    _free_port,
    _get_trace,
    _orchestrator,
    _sample,
    _scheduler_spec,
)

from services.trace.bootstrap import build_spec as trace_spec
from services.trace.settings import Settings as TraceSettings

TENANT = "tenant-a"


def _ask_request(orch, auth, request: pb.AskRequest, tenant: str = TENANT):
    with grpc.insecure_channel(orch.address) as channel:
        return pb_grpc.OrchestratorServiceStub(channel).Ask(
            request, timeout=10, metadata=token_metadata(auth, tenant, ("patient",)))


def _records(auth, trace_address: str, tenant: str) -> list[trace_pb.TraceRecord]:
    """Every record of the tenant (full records), waiting for the background outbox to deliver."""
    with grpc.insecure_channel(trace_address) as channel:
        listed = trace_grpc.TraceServiceStub(channel).ListTraces(
            trace_pb.ListTracesRequest(page_size=50), timeout=5,
            metadata=token_metadata(auth, tenant, ("auditor",)))
    return [_get_trace(auth, trace_address, t.trace_id, tenant=tenant).record for t in listed.traces]


def _refusal(caught) -> tuple[grpc.StatusCode, str]:
    from citetrace.kit.clients import domain_error

    return caught.value.code(), domain_error(caught.value, "orchestrator").reason


@pytest.fixture
def trace_service(auth, tmp_path):
    with serving(trace_spec(TraceSettings(port=0, metrics_port=-1, data_dir=tmp_path / "trace")), auth) as runner:
        yield runner


@pytest.fixture
def stack(auth, tmp_path, trace_service):
    """(build the orchestrator's spec, the trace service's address); records delivered directly."""
    with serving(_scheduler_spec(StubScheduler()), auth) as sched:
        yield (lambda: _orchestrator(auth, tmp_path, sched.address, trace_service.address, trace_delivery="direct"),
               trace_service.address)


def test_an_out_of_range_as_of_is_refused_at_the_edge_and_recorded(auth, stack):
    build, trace_address = stack
    with serving(build(), auth) as orch, pytest.raises(grpc.RpcError) as caught:
        _ask_request(orch, auth, pb.AskRequest(question=QUESTION, as_of=Timestamp(seconds=300_000_000_000)),
                     tenant="tenant-asof")
    assert _refusal(caught) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_TIMESTAMP")
    (record,) = _records(auth, trace_address, "tenant-asof")
    (part,) = record.parts
    assert part.error.startswith("INVALID_ARGUMENT INVALID_TIMESTAMP: as_of: seconds 300000000000")
    assert record.trace_id  # the record of the refused Ask is keyed by its trace ID like any other


def test_an_unknown_conversation_is_refused_and_recorded(auth, stack):
    build, trace_address = stack
    with serving(build(), auth) as orch, pytest.raises(grpc.RpcError) as caught:
        _ask_request(orch, auth, pb.AskRequest(question=QUESTION, conversation_id="conv-never-opened"),
                     tenant="tenant-conv")
    assert _refusal(caught) == (grpc.StatusCode.NOT_FOUND, "CONVERSATION_NOT_FOUND")
    (record,) = _records(auth, trace_address, "tenant-conv")
    assert record.parts[-1].error.startswith("NOT_FOUND CONVERSATION_NOT_FOUND: conversation 'conv-never-opened'")


def test_an_internal_failure_is_recorded_with_its_error(auth, stack, monkeypatch):
    build, trace_address = stack
    spec = build()
    with serving(spec, auth) as orch:
        core = spec.servicer._core

        def broken(*args, **kwargs):
            raise RuntimeError("router state corrupted")

        monkeypatch.setattr(core, "_answer", broken)
        with pytest.raises(grpc.RpcError) as caught:
            _ask_request(orch, auth, pb.AskRequest(question=QUESTION), tenant="tenant-bug")
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    (record,) = _records(auth, trace_address, "tenant-bug")
    assert record.parts[-1].error == "INTERNAL RuntimeError: router state corrupted"


@pytest.mark.parametrize("delivery", ["background", "direct"])
def test_when_the_outbox_cannot_be_written_no_answer_leaves(auth, tmp_path, trace_service, delivery):
    # direct: the trace service is down, so the record must go to the outbox, which fails.
    trace_address = trace_service.address if delivery == "background" else f"127.0.0.1:{_free_port()}"
    spec = _orchestrator(auth, tmp_path, f"127.0.0.1:{_free_port()}", trace_address, trace_delivery=delivery)
    before = _sample("citetrace_trace_outbox_write_failures_total", service="orchestrator")
    with serving(spec, auth) as orch:
        outbox = spec.servicer._sink._outbox
        with outbox._db_lock:
            outbox._db.execute("PRAGMA query_only = ON")  # the disk refuses writes from now on
        with pytest.raises(grpc.RpcError) as caught:
            _ask_request(orch, auth, pb.AskRequest(question="Should I double my insulin dose?"),
                         tenant="tenant-outbox")
        with outbox._db_lock:
            outbox._db.execute("PRAGMA query_only = OFF")
    assert _refusal(caught) == (grpc.StatusCode.UNAVAILABLE, "TRACE_NOT_RECORDED")
    assert "could not be stored" in caught.value.details() and "answer is withheld" in caught.value.details()
    assert _sample("citetrace_trace_outbox_write_failures_total", service="orchestrator") == before + 1
    if delivery == "background":
        with grpc.insecure_channel(trace_address) as channel:
            listed = trace_grpc.TraceServiceStub(channel).ListTraces(
                trace_pb.ListTracesRequest(page_size=5), timeout=5,
                metadata=token_metadata(auth, "tenant-outbox", ("auditor",)))
        assert list(listed.traces) == []


def test_a_reused_idempotency_key_is_refused_and_recorded(auth, stack):
    build, trace_address = stack
    with serving(build(), auth) as orch:
        _ask_request(orch, auth, pb.AskRequest(question="Should I double my insulin dose?", idempotency_key="k-1"),
                     tenant="tenant-key")
        with pytest.raises(grpc.RpcError) as caught:
            _ask_request(orch, auth, pb.AskRequest(question="Can I stop my statin?", idempotency_key="k-1"),
                         tenant="tenant-key")
    assert _refusal(caught) == (grpc.StatusCode.ALREADY_EXISTS, "IDEMPOTENCY_KEY_REUSED")
    errors = sorted(r.parts[-1].error for r in _records(auth, trace_address, "tenant-key"))
    assert len(errors) == 2 and errors[1].startswith("ALREADY_EXISTS IDEMPOTENCY_KEY_REUSED: idempotency key 'k-1'")


def test_an_ask_before_warm_up_is_unavailable_and_recorded(tmp_path):
    """The kit authenticates before the servicer runs: an Ask that reaches an orchestrator still
    warming up (or already draining) is refused NOT_READY and still leaves its record."""
    from citetrace.kit.context import call_context
    from citetrace.kit.errors import Unavailable
    from test_change_workflow import (
        FEE_TEXT,
        PATIENT,
        Downstream,
        Generation,
        Retrieval,
        Scheduler,
        Sink,
        Validator,
    )

    from services.orchestrator.bootstrap import build_servicer
    from services.orchestrator.settings import Settings

    sink = Sink()
    servicer = build_servicer(Settings(port=0, metrics_port=-1, data_dir=tmp_path),
                              downstream=Downstream(Scheduler([]), Retrieval(FEE_TEXT), Generation(FEE_TEXT),
                                                    Validator()),
                              trace_sink=sink)
    with call_context(PATIENT, None, 10), pytest.raises(Unavailable) as refused:
        servicer.Ask(pb.AskRequest(question=QUESTION), None)
    assert refused.value.reason == "NOT_READY"
    (record,) = sink.records
    assert record.trace_id and record.tenant_id == PATIENT.tenant_id
    assert record.parts[0].error.startswith("UNAVAILABLE NOT_READY")
