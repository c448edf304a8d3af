"""A check that cannot run is never a silent pass: retrieval down or slower than the reload
deadline -> CHECK_UNAVAILABLE and UNRESOLVED, in bounded time."""

from __future__ import annotations

import socket
import time

from citetrace.common.v1 import common_pb2
from citetrace.kit.server import ServiceSpec
from citetrace.kit.testing import serving
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc

from .conftest import claim, reasons, validator_service

ARRIVE = "Please arrive 15 minutes before your appointment time."


def _dead_target() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"  # nothing listens there once closed


class SlowRetrieval(ret_grpc.RetrievalServiceServicer):
    """Answers GetPassages only after a delay longer than the validator's reload deadline."""

    def GetPassages(self, request, context):
        time.sleep(1.5)
        return ret_pb.GetPassagesResponse()


def _check_unavailable(reply):
    c1, c2 = reply.claims
    assert reasons(c1) == ["CHECK_UNAVAILABLE"]
    assert c1.support == common_pb2.SUPPORT_VERDICT_UNRESOLVED and c1.withheld
    assert list(c1.citations) == []
    assert "store of record" in c1.support_reason
    # connective text needs no store and is still decided
    assert list(c2.findings) == [] and c2.support == common_pb2.SUPPORT_VERDICT_SUPPORTED
    assert not reply.passed


def test_retrieval_down_is_check_unavailable(auth, world, validate):
    claims = [claim("c1", ARRIVE, "S1"),
              claim("c2", "Thank you for asking.", claim_type=common_pb2.CLAIM_TYPE_NON_FACTUAL)]
    with validator_service(auth, _dead_target(), reload_timeout_seconds=1.0) as stub:
        started = time.monotonic()
        reply = validate(claims, world.offered("val-arrival"), stub=stub)
        assert time.monotonic() - started < 3.0
    _check_unavailable(reply)


def test_retrieval_slower_than_the_deadline_is_check_unavailable(auth, world, validate):
    slow = ServiceSpec(name="retrieval", full_name=ret_pb.DESCRIPTOR.services_by_name["RetrievalService"].full_name,
                       servicer=SlowRetrieval(), register=ret_grpc.add_RetrievalServiceServicer_to_server)
    claims = [claim("c1", ARRIVE, "S1"),
              claim("c2", "Thank you for asking.", claim_type=common_pb2.CLAIM_TYPE_NON_FACTUAL)]
    with serving(slow, auth, grace=0.1) as runner, \
            validator_service(auth, runner.address, reload_timeout_seconds=0.3) as stub:
        started = time.monotonic()
        reply = validate(claims, world.offered("val-arrival"), stub=stub)
        elapsed = time.monotonic() - started
    assert elapsed < 1.2, f"validation was not bounded by the reload deadline ({elapsed:.2f}s)"
    _check_unavailable(reply)
