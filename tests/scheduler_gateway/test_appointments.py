"""ListAppointments / GetAppointment over real gRPC on SQLite and PostgreSQL: a patient reads only
their own appointments (the patient from the token), staff a named patient within their
locations; another patient's, tenant's or location's appointment is NOT_FOUND exactly like one
that does not exist. Plus the loader's appointments and the schema 1 -> 2 migration."""

from __future__ import annotations

import datetime as dt

import grpc
import pytest
import sqlalchemy as sa
from citetrace.common.v1 import appointments_pb2 as ap
from citetrace.kit.clients import error_info
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

from services.scheduler_gateway import schema
from services.scheduler_gateway.loader import LoadError, build_plan

from .conftest import UTC, world
from .workflow_fixtures import TIMEOUT, appointment, patient, rows, staff, workflow_gateway


def listed(stub, md, **fields):
    reply = stub.ListAppointments(pb.ListAppointmentsRequest(**fields), timeout=TIMEOUT, metadata=md)
    return [a.appointment_id for a in reply.appointments], reply


def test_a_patient_lists_their_own_upcoming_booked_appointments(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        ids, reply = listed(stub, patient(auth, "pat-1"))
        assert ids == ["appt-1"]  # not the past one, the cancelled one, pat-2's or borealis' pat-1
        (only,) = reply.appointments
        assert (only.patient_ref, only.status, only.version) == ("pat-1", ap.APPOINTMENT_STATUS_BOOKED, 1)
        assert (only.slot_id, only.location_id, only.location_name, only.time_zone) == (
            "ns-appt-1", "acme-northside", "Northside Family Clinic", "America/New_York")
        assert (only.specialty, only.appointment_type, only.provider_id, only.provider_name) == (
            "cardiology", "follow_up", "acme-dr-avery", "Dr. Avery (synthetic)")
        assert only.start_time.ToDatetime(tzinfo=UTC) == dt.datetime(2026, 12, 2, 15, 0, tzinfo=UTC)
        assert only.end_time.ToDatetime(tzinfo=UTC) == dt.datetime(2026, 12, 2, 15, 30, tzinfo=UTC)
        everything, _ = listed(stub, patient(auth, "pat-1"), include_past=True,
                               statuses=[ap.APPOINTMENT_STATUS_BOOKED, ap.APPOINTMENT_STATUS_CANCELLED])
        assert everything == ["appt-old", "appt-cx", "appt-1"]  # start order
        assert listed(stub, patient(auth, "pat-1"), specialty="dermatology")[0] == []
        # Repeating one's own reference is allowed; it still comes from the token.
        assert listed(stub, patient(auth, "pat-1"), patient_ref="pat-1")[0] == ["appt-1"]
        assert listed(stub, patient(auth, "pat-1", tenant="borealis-clinics"))[0] == ["bor-appt-1"]
        assert listed(stub, patient(auth, "nobody"))[0] == []


def test_a_patient_cannot_name_another_patient(auth, sqlite_url):
    with workflow_gateway(auth, sqlite_url) as (stub, _):
        errors = []
        for other in ("pat-2", "no-such-patient"):  # the same answer whoever that is
            with pytest.raises(grpc.RpcError) as caught:
                listed(stub, patient(auth, "pat-1"), patient_ref=other)
            errors.append(caught.value)
        assert {e.code() for e in errors} == {grpc.StatusCode.PERMISSION_DENIED}
        assert {error_info(e).reason for e in errors} == {"PATIENT_REF_FROM_TOKEN"}
        assert errors[0].details() == errors[1].details()


def test_staff_name_a_patient_of_their_locations(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        assert listed(stub, staff(auth), patient_ref="pat-1")[0] == ["appt-1"]
        assert listed(stub, staff(auth))[0] == ["appt-1", "appt-2"]  # every patient of the scope
        northgate = staff(auth, locations=("acme-northgate",))
        assert listed(stub, northgate)[0] == ["appt-2"]
        assert listed(stub, northgate, patient_ref="pat-1")[0] == []
        assert appointment(stub, northgate, "appt-2").patient_ref == "pat-2"
        with pytest.raises(grpc.RpcError) as caught:
            appointment(stub, northgate, "appt-1")
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND


def test_another_patients_tenants_or_nonexistent_appointment_is_not_found_alike(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        assert appointment(stub, patient(auth, "pat-1"), "appt-1").slot_id == "ns-appt-1"
        errors = []
        for md, appointment_id in [
            (patient(auth, "pat-2"), "appt-1"),  # another patient's
            (patient(auth, "pat-1"), "bor-appt-1"),  # the same reference's appointment in another tenant
            (patient(auth, "pat-1", tenant="borealis-clinics"), "appt-1"),  # another tenant's
            (patient(auth, "pat-1", locations=("acme-northgate",)), "appt-1"),  # outside the token's locations
            (patient(auth, "pat-1"), "appt-none"),  # nothing at all
        ]:
            with pytest.raises(grpc.RpcError) as caught:
                appointment(stub, md, appointment_id)
            errors.append((caught.value, appointment_id))
        assert {e.code() for e, _ in errors} == {grpc.StatusCode.NOT_FOUND}
        assert {error_info(e).reason for e, _ in errors} == {"APPOINTMENT_NOT_FOUND"}
        assert len({e.details().replace(i, "X") for e, i in errors}) == 1


def test_roles_without_a_patient_read_nothing_and_pages_are_stable(auth, sqlite_url, metadata_for):
    with workflow_gateway(auth, sqlite_url) as (stub, _):
        with pytest.raises(grpc.RpcError) as caught:
            listed(stub, metadata_for("acme-health", roles=("reviewer",)))
        assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
        first, reply = listed(stub, staff(auth), page_size=1)
        second, last = listed(stub, staff(auth), page_size=1, page_token=reply.next_page_token)
        assert (first, second, last.next_page_token) == (["appt-1"], ["appt-2"], "")
        with pytest.raises(grpc.RpcError) as caught:  # a token from another query
            listed(stub, staff(auth), page_size=1, patient_ref="pat-1", page_token=reply.next_page_token)
        assert error_info(caught.value).reason == "INVALID_PAGE_TOKEN"


def _errors(document) -> list[str]:
    with pytest.raises(LoadError) as caught:
        build_plan(document, "bad.yaml", clock=lambda: dt.datetime(2026, 11, 30, 12, tzinfo=UTC))
    return caught.value.errors


def test_loader_checks_appointments():
    document = world()
    acme = document["tenants"][0]
    acme["appointments"] += [
        {"id": "appt-x", "patient": "pat-9", "slot": "bor-1"},  # another tenant's slot
        {"id": "appt-y", "patient": "pat-9", "slot": "ns-appt-1"},  # already booked by appt-1
        {"id": "appt-z", "patient": "pat-9", "slot": "ns-eie"},  # entered in error
        {"id": "appt-1", "patient": "pat-9", "slot": "ns-2"},  # duplicate ID
        {"id": "appt-w", "patient": "pat-9", "slot": "ns-2", "status": "waiting"},
        {"id": "appt-v", "slot": "ns-2"},
    ]
    assert _errors(document) == [
        "bad.yaml: tenants[0].appointments[4].slot: unknown slot 'bor-1' (not a slot of this tenant)",
        "bad.yaml: tenants[0].appointments[5].slot: slot 'ns-appt-1' is already booked by appointment 'appt-1'",
        "bad.yaml: tenants[0].appointments[6].slot: slot 'ns-eie' is entered-in-error: it cannot hold a booked "
        "appointment",
        "bad.yaml: tenants[0].appointments[7].id: duplicate appointment 'appt-1'",
        "bad.yaml: tenants[0].appointments[8].status: 'waiting' is not an appointment status (booked, cancelled, "
        "fulfilled, noshow, entered-in-error)",
        "bad.yaml: tenants[0].appointments[9].patient: required key is missing",
        "bad.yaml: tenants[0].appointments[9].patient: expected a non-empty string, got nothing",
    ]


def test_a_booked_appointment_makes_its_slot_busy(sqlite_url):
    plan = build_plan(world(), "w.yaml", clock=lambda: dt.datetime(2026, 11, 30, 12, tzinfo=UTC))
    statuses = {r["slot_id"]: r["status"] for r in plan.rows["slots"] if r["tenant_id"] == "acme-health"}
    assert statuses["ns-appt-1"] == statuses["ng-appt-2"] == "busy"
    assert plan.count("appointments") == 5


def _schema_1(engine) -> None:
    """A database as schema 1 created it: the v1 appointments table, no workflow tables."""
    v1 = sa.MetaData()
    for table in schema.metadata.sorted_tables:
        if table.name in {"proposals", "proposal_locations", "idempotency_keys", "action_events_outbox",
                          "appointments"}:
            continue
        table.to_metadata(v1)
    sa.Table("appointments", v1,
             sa.Column("tenant_id", schema.ID, primary_key=True), sa.Column("appointment_id", schema.ID, primary_key=True),
             sa.Column("slot_id", schema.ID, nullable=False), sa.Column("patient_ref", sa.String(256), nullable=False),
             sa.Column("status", sa.String(32), nullable=False), sa.Column("created_at", schema.UTCDateTime, nullable=False),
             sa.ForeignKeyConstraint(["tenant_id", "slot_id"], ["slots.tenant_id", "slots.slot_id"]),
             sa.Index("ux_appointments_slot", "tenant_id", "slot_id", unique=True))
    with engine.begin() as conn:
        v1.create_all(conn)
        conn.execute(schema.schema_version.insert().values(version=1, applied_at=dt.datetime.now(UTC)))


def test_schema_1_databases_are_migrated_in_place(db_url):
    engine = schema.make_engine(db_url)
    try:
        _schema_1(engine)
        plan = build_plan(world(), "w.yaml", clock=lambda: dt.datetime(2026, 11, 30, 12, tzinfo=UTC))
        with engine.begin() as conn:
            for table in reversed(schema.TENANT_TABLES):
                if table.name in {"proposals", "proposal_locations", "idempotency_keys"}:
                    continue
                values = plan.rows.get(table.name)
                if table.name == "appointments":
                    values = [{k: v for k, v in r.items() if k not in ("version", "updated_at")} for r in values]
                if values:
                    conn.execute(sa.Table(table.name, sa.MetaData(), autoload_with=conn).insert(), values)
        assert schema.ensure_schema(engine) == 2
        migrated = rows(db_url, schema.appointments, schema.appointments.c.appointment_id == "appt-1")
        assert [(r.version, r.updated_at == r.created_at) for r in migrated] == [(1, True)]
        # Booked-only uniqueness: a cancelled appointment and a booked one may share a slot now.
        with engine.begin() as conn:
            conn.execute(schema.appointments.insert().values(
                tenant_id="acme-health", appointment_id="appt-again", slot_id="ns-busy", patient_ref="pat-3",
                status="booked", created_at=dt.datetime.now(UTC), version=1, updated_at=dt.datetime.now(UTC)))
        assert rows(db_url, schema.proposals) == []
        assert schema.ensure_schema(engine) == 2  # idempotent
    finally:
        engine.dispose()


@pytest.mark.parametrize(("call", "reason"), [
    (lambda stub, md: stub.ListAppointments(pb.ListAppointmentsRequest(statuses=[ap.APPOINTMENT_STATUS_BOOKED, 99]),
                                            timeout=TIMEOUT, metadata=md), "UNKNOWN_ENUM_VALUE"),
    (lambda stub, md: stub.ListProposals(pb.ListProposalsRequest(statuses=[ap.PROPOSAL_STATUS_PENDING, 99]),
                                         timeout=TIMEOUT, metadata=md), "UNKNOWN_ENUM_VALUE"),
])
def test_a_status_number_this_build_does_not_know_is_refused_by_name(auth, sqlite_url, call, reason):
    """The edge validation layer (citetrace.kit.validation, before the servicer) refuses it, naming
    the field and the value."""
    with workflow_gateway(auth, sqlite_url) as (stub, _):
        with pytest.raises(grpc.RpcError) as caught:
            call(stub, staff(auth))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        info = error_info(caught.value)
        assert (info.reason, info.metadata["field"]) == (reason, "statuses")
        assert "'99'" in caught.value.details()
