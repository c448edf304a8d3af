"""The fuzz suite (issue 17 §3, tests/fuzzing.py) over the generation service's RPC (Generate, the
extractive backend), over real gRPC: generated, mutated and raw requests with tokens of every role and
invalid ones. Never INTERNAL/UNKNOWN, never a hang past the deadline, INVALID_ARGUMENT names its
field, and the service is still SERVING afterwards. Generation keeps no store (it answers from the
passages it is given), so there are no rows to count: `counts` is empty by construction."""

from __future__ import annotations

import fuzzing
import grpc
import pytest
from citetrace.common.v1 import common_pb2
from citetrace.generation.v1 import generation_service_pb2 as pb
from citetrace.kit.testing import serving

from services.generation.bootstrap import build_spec
from services.generation.settings import Settings

from .fixtures import labelled

SERVICE = pb.DESCRIPTOR.services_by_name["GenerationService"]
REGRESSIONS = (
    fuzzing.Regression("Generate", pb.GenerateRequest(question="x", budget=pb.ContextBudget(max_chars=-1))
                       .SerializeToString(), "service", "a negative budget names its field"),
)


@pytest.fixture(scope="module")
def world(auth):
    with serving(build_spec(Settings(port=0, metrics_port=-1)), auth) as runner, \
            grpc.insecure_channel(runner.address) as channel:
        seeds = {"Generate": pb.GenerateRequest(question="When should I arrive for my MRI?",
                                                intent=common_pb2.INTENT_ARRIVAL_PREPARATION,
                                                passages=labelled("arrival", "cancellation"),
                                                budget=pb.ContextBudget(max_passages=4, max_chars=4000))}
        yield fuzzing.World(channel, SERVICE, auth, "acme-health", dict, seeds=seeds)


test_generated, test_mutated, test_raw, test_regressions, test_still_serving = fuzzing.suite(REGRESSIONS)
