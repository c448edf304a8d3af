"""Issue 17 §4 at the orchestrator, over real gRPC (in-process orchestrator and trace service; the other
downstreams are dead ports): an Ask whose conversation-turn commit is slowed (the bootstrap's
before_commit test seam) past its caller's deadline is DEADLINE_EXCEEDED and leaves no conversation
turn and no idempotency record (the key is given back); its evidence record says DEADLINE_EXCEEDED.
The caller's retry under the same key then answers once, and a further retry is told it got the
stored answer (AskResponse.replayed)."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time

import grpc
import pytest
from citetrace.kit.context import remaining_seconds
from citetrace.kit.testing import serving, token_metadata
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from citetrace.trace.v1 import trace_service_pb2_grpc as trace_grpc

from services.orchestrator.bootstrap import build_spec as orchestrator_spec
from services.orchestrator.settings import Settings
from services.trace.bootstrap import build_spec as trace_spec
from services.trace.settings import Settings as TraceSettings

TENANT = "tenant-deadline"
CALLER_TIMEOUT = 4.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rows(db, table: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]


def test_an_ask_whose_commit_outlives_the_callers_deadline_leaves_no_turn_and_no_key(auth, tmp_path):
    slow, slept = threading.Event(), threading.Event()

    def before_commit():
        if slow.is_set():  # hold the commit until the caller's deadline has passed
            time.sleep(max(remaining_seconds() or 0.0, 0.0) + 0.3)
            slept.set()

    dead = f"127.0.0.1:{_free_port()}"
    with serving(trace_spec(TraceSettings(port=0, metrics_port=-1, data_dir=tmp_path / "trace",
                                          retrieval_target="")), auth) as trace:
        settings = Settings(port=0, metrics_port=-1, data_dir=tmp_path / "orch", scheduler_gateway_target=dead,
                            trace_target=trace.address, retrieval_target=dead, generation_target=dead,
                            citation_validator_target=dead)
        spec = orchestrator_spec(settings, auth, before_commit=before_commit)
        with serving(spec, auth) as orch, grpc.insecure_channel(orch.address) as channel, \
                grpc.insecure_channel(trace.address) as trace_channel:
            stub = pb_grpc.OrchestratorServiceStub(channel)
            patient = token_metadata(auth, TENANT, ("patient",), patient_ref="pat-9")
            request = pb.AskRequest(question="When should I arrive for my MRI?", idempotency_key="deadline-key-1")
            db = settings.data_dir / "orchestrator" / "conversations.sqlite"

            slow.set()
            with pytest.raises(grpc.RpcError) as caught:
                stub.Ask(request, timeout=CALLER_TIMEOUT, metadata=patient)
            assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert slept.wait(CALLER_TIMEOUT + 5)
            slow.clear()
            time.sleep(0.5)  # the handler runs on past the client's deadline; let it end
            assert _rows(db, "orch_conversations") == 0
            assert _rows(db, "orch_ask_results") == 0
            # The Ask failed visibly: its evidence record names the deadline (every Ask is recorded).
            auditor = token_metadata(auth, TENANT, ("auditor",))
            traces = trace_grpc.TraceServiceStub(trace_channel)
            listed = _eventually(lambda: list(traces.ListTraces(trace_pb.ListTracesRequest(), timeout=10,
                                                                 metadata=auditor).traces))
            record = traces.GetTrace(trace_pb.GetTraceRequest(trace_id=listed[0].trace_id), timeout=10,
                                     metadata=auditor).record
            assert any("DEADLINE_EXCEEDED" in part.error for part in record.parts)

            # The caller's retry under the same key answers once; a further retry is the replay.
            first = stub.Ask(request, timeout=30, metadata=patient)
            again = stub.Ask(request, timeout=30, metadata=patient)
            assert not first.replayed and again.replayed and again.trace_id == first.trace_id
            assert _rows(db, "orch_conversations") == 1
            assert _rows(db, "orch_ask_results") == 1


def _eventually(read, seconds: float = 10.0):
    """The outbox delivers in the background: poll until `read` returns something."""
    stop = time.monotonic() + seconds
    while True:
        got = read()
        if got or time.monotonic() > stop:
            return got
        time.sleep(0.1)
