"""The fuzz suite (issue 17 §3, tests/fuzzing.py) over every RPC of the trace service, over real gRPC
on SQLite and on PostgreSQL: generated, mutated and raw requests with tokens of every role and
invalid ones. Never INTERNAL/UNKNOWN, never a hang past the deadline, INVALID_ARGUMENT names its
field, a failed call leaves every table's row count unchanged, and the service is still SERVING
afterwards."""

from __future__ import annotations

import contextlib

import fuzzing
import grpc
import pytest
from citetrace.kit.testing import service_metadata
from citetrace.trace.v1 import trace_service_pb2 as pb
from tracefixtures import TENANT, make_record, trace_service

SERVICE = pb.DESCRIPTOR.services_by_name["TraceService"]
REGRESSIONS = (
    fuzzing.Regression("RecordReview", pb.RecordReviewRequest(trace_id="t-fuzz", decision=99).SerializeToString(),
                       "reviewer", "an unknown decision was stored (issue 17)"),
    fuzzing.Regression("ApplyRetention", pb.ApplyRetentionRequest(retention_days=2**31 - 1).SerializeToString(),
                       "policy_admin", "INTERNAL (issue 17)"),
)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request, auth, tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz-trace")
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{data / 'trace.db'}"
            counts = fuzzing.sqlite_counts(data / "trace.db")
        else:
            url = stack.enter_context(fuzzing.postgres_database())
            counts = fuzzing.sql_counts(url)
        yield stack.enter_context(_world(auth, data, url, counts))


@contextlib.contextmanager
def _world(auth, data, url, counts):
    with trace_service(auth, data, url) as (runner, stub, _), grpc.insecure_channel(runner.address) as channel:
        stub.RecordTrace(pb.RecordTraceRequest(record=make_record("t-fuzz")), timeout=10,
                         metadata=service_metadata(TENANT))
        seeds = {
            "RecordTrace": pb.RecordTraceRequest(record=make_record("t-fuzz-seed")),
            "GetTrace": pb.GetTraceRequest(trace_id="t-fuzz"),
            "ListTraces": pb.ListTracesRequest(page_size=5),
            "RecordReview": pb.RecordReviewRequest(trace_id="t-fuzz", decision=pb.REVIEW_DECISION_ACCEPTED,
                                                   rubric_note="fuzz"),
            "ListReviews": pb.ListReviewsRequest(trace_id="t-fuzz"),
            "VerifyChain": pb.VerifyChainRequest(),
            "ApplyRetention": pb.ApplyRetentionRequest(retention_days=30),
        }
        yield fuzzing.World(channel, SERVICE, auth, TENANT, counts, seeds=seeds)


test_generated, test_mutated, test_raw, test_regressions, test_still_serving = fuzzing.suite(REGRESSIONS)
