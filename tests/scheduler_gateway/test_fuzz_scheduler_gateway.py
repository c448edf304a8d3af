"""The fuzz suite (issue 17 §3, tests/fuzzing.py) over every RPC of the scheduler-gateway, over real
gRPC on SQLite and on PostgreSQL with the synthetic test world loaded: generated, mutated and raw requests with tokens of
every role (a patient with a patient_ref, staff at a location) and invalid ones. Never INTERNAL/UNKNOWN,
never a hang past the deadline, INVALID_ARGUMENT names its field, a failed call leaves every table's
row count unchanged (slots, appointments, proposals, outbox events, idempotency keys), and the gateway
is still SERVING afterwards."""

from __future__ import annotations

import contextlib

import fuzzing
import grpc
import pytest
from citetrace.common.v1 import appointments_pb2 as ap
from citetrace.kit.testing import serving
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from google.protobuf.timestamp_pb2 import Timestamp

from services.scheduler_gateway import schema
from services.scheduler_gateway.bootstrap import build_spec
from services.scheduler_gateway.settings import Settings

from . import conftest
from .conftest import NOW, FixedClock, load
from .workflow_fixtures import fee

SERVICE = pb.DESCRIPTOR.services_by_name["SchedulerGatewayService"]
TENANT = "acme-health"
REGRESSIONS = (
    fuzzing.Regression("GetAppointment", bytes.fromhex("0a06007070742d31"), "patient",
                       "a NUL in a string field was INTERNAL on PostgreSQL (found by this suite)"),
    fuzzing.Regression("FindSlots", pb.FindSlotsRequest(start_time=Timestamp(seconds=10**15)).SerializeToString(),
                       "staff", "an out-of-range Timestamp (issue 17)"),
)


def _seeds() -> dict:
    start = Timestamp()
    start.FromDatetime(NOW)
    return {
        "FindSlots": pb.FindSlotsRequest(specialty="cardiology", location_id="acme-northside", start_time=start,
                                         page_size=5),
        "ConfirmSlot": pb.ConfirmSlotRequest(slot_id="ns-1", expected_version=1, patient_ref="pat-1"),
        "ListLocations": pb.ListLocationsRequest(page_size=5),
        "ListAppointments": pb.ListAppointmentsRequest(patient_ref="pat-1"),
        "GetAppointment": pb.GetAppointmentRequest(appointment_id="appt-1"),
        "ProposeChange": pb.ProposeChangeRequest(
            kind=ap.CHANGE_KIND_RESCHEDULE, appointment_id="appt-1", expected_appointment_version=1,
            slots=[pb.SlotChoice(slot_id="ns-2", expected_version=1)], consequences=[fee()],
            ask_trace_id="0af7651916cd43dd8448eb211c80319c", consequence_rules_version="consequences-test.1"),
        "ListProposals": pb.ListProposalsRequest(page_size=5),
        "ConfirmProposal": pb.ConfirmProposalRequest(proposal_id="prop-unknown", idempotency_key="fuzz-key-2"),
        "RejectProposal": pb.RejectProposalRequest(proposal_id="prop-unknown", note="fuzz"),
    }


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request, auth, tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz-gateway")
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            url, counts = schema.default_database_url(data), fuzzing.directory_counts(data)
        else:
            url = stack.enter_context(fuzzing.postgres_database())
            counts = fuzzing.sql_counts(url)
        load(url, conftest.world())
        spec = build_spec(Settings(port=0, metrics_port=-1, database_url=url), clock=FixedClock(NOW))
        runner = stack.enter_context(serving(spec, auth))
        channel = stack.enter_context(grpc.insecure_channel(runner.address))
        yield fuzzing.World(channel, SERVICE, auth, TENANT, counts, seeds=_seeds(), locations=("acme-northside",),
                            patient_ref="pat-1")


test_generated, test_mutated, test_raw, test_regressions, test_still_serving = fuzzing.suite(REGRESSIONS)
