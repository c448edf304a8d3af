"""The fuzz suite (issue 17 §3, tests/fuzzing.py) over the citation validator's RPC (Validate), over
real gRPC with a real retrieval service (its own SQLite store) behind it: generated, mutated and raw
requests with tokens of every role and invalid ones. Never INTERNAL/UNKNOWN, never a hang past the
deadline, INVALID_ARGUMENT names its field, a failed call changes no row of the retrieval store it
reads, and the validator is still SERVING afterwards."""

from __future__ import annotations

import fuzzing
import grpc
import pytest
from citetrace.citation_validator.v1 import citation_validator_service_pb2 as pb
from citetrace.common.v1 import common_pb2
from citetrace.kit.testing import serving
from google.protobuf.timestamp_pb2 import Timestamp

from services.citation_validator.bootstrap import build_spec
from services.citation_validator.settings import Settings

from .conftest import ACME, DOCS, World, claim, retrieval_service

SERVICE = pb.DESCRIPTOR.services_by_name["CitationValidatorService"]
REGRESSIONS = (
    fuzzing.Regression("Validate", pb.ValidateRequest(claims=[claim("c1", "Arrive early.", "S1")],
                                                      as_of=Timestamp(seconds=-(10**13))).SerializeToString(),
                       "patient", "an out-of-range Timestamp (issue 17)"),
)


@pytest.fixture(scope="module")
def world(auth, tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz-validator-retrieval")
    with retrieval_service(auth, data) as (runner, stub):
        corpus = World(auth, stub, runner.address, {})
        spec = dict(DOCS["val-arrival"])
        reply = corpus.ingest("val-arrival", spec.pop("text"), tenant=spec.pop("tenant"), **spec)
        corpus.passages["val-arrival"] = corpus.load(reply.passages[0].passage_id)
        spec = build_spec(Settings(port=0, metrics_port=-1, retrieval_target=runner.address))
        with serving(spec, auth) as validator, grpc.insecure_channel(validator.address) as channel:
            seed = pb.ValidateRequest(claims=[claim("c1", "Arrive 30 minutes early for an MRI.", "S1")],
                                      offered=corpus.offered("val-arrival"),
                                      intent=common_pb2.INTENT_ARRIVAL_PREPARATION)
            yield fuzzing.World(channel, SERVICE, auth, ACME, fuzzing.directory_counts(data),
                                seeds={"Validate": seed})


test_generated, test_mutated, test_raw, test_regressions, test_still_serving = fuzzing.suite(REGRESSIONS)
