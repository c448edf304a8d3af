"""The fuzz suite (issue 17 §3, tests/fuzzing.py) over the orchestrator's RPC (Ask), over real gRPC with
a real trace service and a real scheduler-gateway (the synthetic slot world loaded) behind it; retrieval,
generation and the validator are dead ports, so policy parts meet an unavailable source while slot,
appointment and proposal parts reach the gateway. Generated, mutated and raw requests with tokens of
every role and invalid ones. Never INTERNAL/UNKNOWN, never a hang past the deadline, INVALID_ARGUMENT
names its field, a failed Ask leaves no conversation turn, no idempotency record and no gateway row
(proposal, appointment, event), and the orchestrator is still SERVING afterwards.

A refused or failed Ask leaves its evidence record by design (issue 16 §4): the orchestrator's trace
outbox and the trace store are therefore not counted (conversations, Ask results and the gateway's
tables are)."""

from __future__ import annotations

import contextlib
import socket

import fuzzing
import grpc
import pytest
from citetrace.kit.testing import serving
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from google.protobuf.timestamp_pb2 import Timestamp
from scheduler_gateway.conftest import NOW, FixedClock, load
from scheduler_gateway.conftest import world as slot_world

from services.orchestrator.bootstrap import build_spec as orchestrator_spec
from services.orchestrator.settings import Settings
from services.scheduler_gateway import schema
from services.scheduler_gateway.bootstrap import build_spec as gateway_spec
from services.scheduler_gateway.settings import Settings as GatewaySettings
from services.trace.bootstrap import build_spec as trace_spec
from services.trace.settings import Settings as TraceSettings

SERVICE = pb.DESCRIPTOR.services_by_name["OrchestratorService"]
TENANT = "acme-health"
REGRESSIONS = (
    fuzzing.Regression("Ask", pb.AskRequest(question="When should I arrive?", as_of=Timestamp(seconds=1, nanos=-1))
                       .SerializeToString(), "patient", "a negative-nanos Timestamp was INTERNAL (issue 17)"),
    fuzzing.Regression("Ask", pb.AskRequest(question="When should I arrive?", locale="e" * 5000).SerializeToString(),
                       "patient", "a 5,000-character locale was 'policy documents can't be reached' (issue 17)"),
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request, auth, tmp_path_factory):
    """Conversations and Ask results on SQLite, or on PostgreSQL (production's choice)."""
    tmp = tmp_path_factory.mktemp("fuzz-orchestrator")
    with contextlib.ExitStack() as stack:
        database_url = "" if request.param == "sqlite" else stack.enter_context(fuzzing.postgres_database())
        yield stack.enter_context(_world(auth, tmp, database_url))


@contextlib.contextmanager
def _world(auth, tmp, database_url):
    dead = f"127.0.0.1:{_free_port()}"
    slots_url = schema.default_database_url(tmp / "gateway")
    (tmp / "gateway").mkdir()
    load(slots_url, slot_world())
    with serving(trace_spec(TraceSettings(port=0, metrics_port=-1, data_dir=tmp / "trace", retrieval_target="")),
                 auth) as trace, \
            serving(gateway_spec(GatewaySettings(port=0, metrics_port=-1, database_url=slots_url, trace_target=""),
                                 clock=FixedClock(NOW)), auth) as gateway:
        settings = Settings(port=0, metrics_port=-1, data_dir=tmp / "orch", scheduler_gateway_target=gateway.address,
                            trace_target=trace.address, retrieval_target=dead, generation_target=dead,
                            citation_validator_target=dead, database_url=database_url)
        with serving(orchestrator_spec(settings, auth), auth) as orch, grpc.insecure_channel(orch.address) as channel:
            seeds = {"Ask": pb.AskRequest(question="Can I get a cardiology appointment at Northside tomorrow?",
                                          location_id="acme-northside", locale="en")}
            # (No idempotency key in the seed: after its first answer every mutation would be
            # ALREADY_EXISTS IDEMPOTENCY_KEY_REUSED and reach nothing deeper; keys are generated.)
            orchestrator_rows = (fuzzing.sql_counts(database_url) if database_url
                                 else fuzzing.directory_counts(settings.data_dir, skip=("outbox",)))
            gateway_rows = fuzzing.directory_counts(tmp / "gateway")

            def counted() -> dict[str, int]:
                return {**orchestrator_rows(), **{f"gateway:{k}": v for k, v in gateway_rows().items()}}

            yield fuzzing.World(channel, SERVICE, auth, TENANT, counted, seeds=seeds, locations=("acme-northside",),
                                patient_ref="pat-1", timeout=20)


test_generated, test_mutated, test_raw, test_regressions, test_still_serving = fuzzing.suite(REGRESSIONS)
