"""Issue 17 at the orchestrator over real gRPC (in-process orchestrator and trace service; the other
downstreams are dead ports): malformed Ask input is INVALID_ARGUMENT with its reason (§2); an as_of in
the past beyond the clock-skew tolerance is a replay, for reviewer and auditor only, and every answer
states the as_of it was computed for (§5)."""

from __future__ import annotations

import datetime as dt
import socket

import grpc
import pytest
from citetrace.kit.clients import error_info
from citetrace.kit.testing import serving, token_metadata
from citetrace.kit.timestamps import to_timestamp
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from google.protobuf.timestamp_pb2 import Timestamp

from services.orchestrator.bootstrap import build_spec as orchestrator_spec
from services.orchestrator.settings import Settings
from services.trace.bootstrap import build_spec as trace_spec
from services.trace.settings import Settings as TraceSettings

QUESTION = "When should I arrive for my MRI?"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def orchestrator(auth, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("orch-edges")
    dead = f"127.0.0.1:{_free_port()}"
    with serving(trace_spec(TraceSettings(port=0, metrics_port=-1, data_dir=tmp / "trace")), auth) as trace:
        settings = Settings(port=0, metrics_port=-1, data_dir=tmp / "orch", scheduler_gateway_target=dead,
                            trace_target=trace.address, retrieval_target=dead, generation_target=dead,
                            citation_validator_target=dead, as_of_skew_seconds=300)
        with serving(orchestrator_spec(settings, auth), auth) as orch, grpc.insecure_channel(orch.address) as ch:
            yield pb_grpc.OrchestratorServiceStub(ch)


def ask(stub, auth, roles=("patient",), **fields):
    return stub.Ask(pb.AskRequest(question=QUESTION, **fields), timeout=20,
                    metadata=token_metadata(auth, "tenant-edges", roles))


def refused(call):
    with pytest.raises(grpc.RpcError) as caught:
        call()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()[:200]
    return error_info(caught.value)


@pytest.mark.parametrize(("fields", "reason"), [
    ({"as_of": Timestamp(seconds=1_800_000_000, nanos=-1)}, "INVALID_TIMESTAMP"),
    ({"as_of": Timestamp(seconds=10**15)}, "INVALID_TIMESTAMP"),
    ({"locale": "e" * 5000}, "INVALID_LOCALE"),
    ({"locale": "nb-NO\n"}, "INVALID_LOCALE"),
    ({"conversation_id": "c" * 100_000}, "INVALID_CONVERSATION_ID"),
    ({"location_id": "loc-1\n"}, "INVALID_LOCATION_ID"),
])
def test_malformed_ask_input_is_invalid_argument_with_its_reason(orchestrator, auth, fields, reason):
    info = refused(lambda: ask(orchestrator, auth, **fields))
    assert info.reason == reason


def test_a_past_as_of_beyond_the_skew_tolerance_is_a_replay_for_reviewer_and_auditor_only(orchestrator, auth):
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    last_week = now - dt.timedelta(days=7)
    for roles in (("patient",), ("staff",), ("policy_admin",)):
        info = refused(lambda roles=roles: ask(orchestrator, auth, roles, as_of=to_timestamp(last_week)))
        assert (info.reason, info.metadata["field"]) == ("AS_OF_IN_PAST", "as_of")
    for roles in (("auditor",), ("reviewer",)):
        answer = ask(orchestrator, auth, roles, as_of=to_timestamp(last_week))
        assert answer.as_of.ToDatetime(tzinfo=dt.UTC) == last_week
    # Within the tolerance a patient's as_of is taken as given, and stated in the answer.
    recent = now - dt.timedelta(seconds=60)
    assert ask(orchestrator, auth, as_of=to_timestamp(recent)).as_of.ToDatetime(tzinfo=dt.UTC) == recent
    # Without one, the answer states the time it was computed for.
    before = dt.datetime.now(dt.UTC)
    stated = ask(orchestrator, auth).as_of.ToDatetime(tzinfo=dt.UTC)
    assert before - dt.timedelta(seconds=1) <= stated <= dt.datetime.now(dt.UTC)
