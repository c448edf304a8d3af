"""Issue 17 §4 over real gRPC: a RecordTrace whose commit is slowed (the bootstrap's before_commit test
seam) past its caller's deadline is DEADLINE_EXCEEDED for the caller and stores nothing; the same
record sent again without the slow commit is stored once."""

from __future__ import annotations

import sqlite3
import threading
import time

import grpc
import pytest
from citetrace.kit.testing import service_metadata, serving
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc
from tracefixtures import TENANT, make_record

from services.trace.bootstrap import build_spec
from services.trace.settings import Settings

SLOW_COMMIT_SECONDS = 1.0
CALLER_TIMEOUT = 0.3


def _rows(db, table: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]


def test_a_record_whose_commit_outlives_the_callers_deadline_is_not_stored(auth, tmp_path):
    slow = threading.Event()
    passed = threading.Event()

    def before_commit():
        if slow.is_set():
            time.sleep(SLOW_COMMIT_SECONDS)
            passed.set()

    spec = build_spec(Settings(port=0, metrics_port=-1, data_dir=tmp_path, retrieval_target=""),
                      before_commit=before_commit)
    writer = service_metadata(TENANT)
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        stub = pb_grpc.TraceServiceStub(channel)
        db = tmp_path / "trace.db"
        stub.RecordTrace(pb.RecordTraceRequest(record=make_record("t-before")), timeout=10, metadata=writer)
        before = _rows(db, "trace_records")

        late = pb.RecordTraceRequest(record=make_record("t-late"))
        slow.set()
        with pytest.raises(grpc.RpcError) as caught:
            stub.RecordTrace(late, timeout=CALLER_TIMEOUT,
                             metadata=writer)
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        # The server goes on to its commit after the caller gave up: wait for it, then count.
        assert passed.wait(5)
        time.sleep(0.3)
        assert _rows(db, "trace_records") == before

        slow.clear()
        # The caller's retry of the same record: stored once (a second retry is an idempotent replay).
        stub.RecordTrace(late, timeout=10, metadata=writer)
        stub.RecordTrace(late, timeout=10, metadata=writer)
        assert _rows(db, "trace_records") == before + 1
