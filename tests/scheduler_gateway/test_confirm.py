"""ConfirmSlot over real gRPC on SQLite and PostgreSQL: optimistic concurrency, exactly one winner,
typed SLOT_NO_LONGER_AVAILABLE, and no leak of other tenants' or other locations' slots."""

from __future__ import annotations

import threading

import grpc
import pytest
from citetrace.common.v1 import common_pb2
from citetrace.kit.clients import error_info
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from sqlalchemy import select

from services.scheduler_gateway import schema
from services.scheduler_gateway.sql_source import SqlSlotSource

TIMEOUT = 15


def confirm(stub, md, slot_id, version, patient=""):
    """patient: empty for a patient token (the patient comes from the token); staff name one."""
    return stub.ConfirmSlot(pb.ConfirmSlotRequest(slot_id=slot_id, expected_version=version, patient_ref=patient),
                            timeout=TIMEOUT, metadata=md)


def slot_row(url: str, tenant: str, slot_id: str):
    engine = schema.make_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(select(schema.slots).where(schema.slots.c.tenant_id == tenant,
                                                           schema.slots.c.slot_id == slot_id)).one()
    finally:
        engine.dispose()


def bookings(url: str, tenant: str, slot_id: str) -> int:
    source = SqlSlotSource(url)
    source.warm_up()
    try:
        return source.count_appointments(tenant, slot_id)
    finally:
        source.close()


def test_confirm_books_once_and_the_second_gets_no_longer_available(loaded, metadata_for):
    stub, url = loaded
    md = metadata_for("acme-health")
    slot = [s for s in stub.FindSlots(pb.FindSlotsRequest(specialty="cardiology"), timeout=TIMEOUT,
                                      metadata=md).slots if s.slot_id == "ns-1"][0]
    won = confirm(stub, md, "ns-1", slot.version)
    assert won.result == pb.CONFIRM_RESULT_CONFIRMED
    assert won.appointment_id.startswith("appt-")
    assert won.slot.slot_id == "ns-1" and won.slot.version == slot.version + 1
    assert won.slot.status == common_pb2.SLOT_STATUS_BUSY
    lost = confirm(stub, metadata_for("acme-health", subject="another-patient"), "ns-1", slot.version)
    assert lost.result == pb.CONFIRM_RESULT_SLOT_NO_LONGER_AVAILABLE
    assert lost.appointment_id == ""
    assert lost.slot.version == slot.version + 1 and lost.slot.status == common_pb2.SLOT_STATUS_BUSY
    # Even with the current version, a booked slot is not free.
    assert confirm(stub, md, "ns-1", lost.slot.version).result == pb.CONFIRM_RESULT_SLOT_NO_LONGER_AVAILABLE
    assert "ns-1" not in [s.slot_id for s in stub.FindSlots(pb.FindSlotsRequest(specialty="cardiology"),
                                                            timeout=TIMEOUT, metadata=md).slots]
    row = slot_row(url, "acme-health", "ns-1")
    assert (row.status, row.version) == ("busy", 2)
    assert bookings(url, "acme-health", "ns-1") == 1


@pytest.mark.parametrize(
    ("slot_id", "version"),
    [("ns-1", 7), ("ns-past", 1), ("ns-eie", 1), ("ns-busy", 1), ("ns-tentative", 1)],
)
def test_stale_past_or_unavailable_slots_are_no_longer_available(loaded, metadata_for, slot_id, version):
    stub, url = loaded
    reply = confirm(stub, metadata_for("acme-health"), slot_id, version)
    assert reply.result == pb.CONFIRM_RESULT_SLOT_NO_LONGER_AVAILABLE
    assert reply.slot.slot_id == slot_id
    assert bookings(url, "acme-health", slot_id) == 0


def test_other_tenants_and_other_locations_slots_are_not_found(loaded, metadata_for):
    stub, url = loaded
    errors = []
    for md, slot_id in [
        (metadata_for("borealis-clinics"), "ns-1"),  # another tenant's slot
        (metadata_for("borealis-clinics"), "zz-no-such-slot"),  # nothing at all
        (metadata_for("acme-health", locations=("acme-northgate",)), "ns-1"),  # outside permitted locations
    ]:
        with pytest.raises(grpc.RpcError) as caught:
            confirm(stub, md, slot_id, 1)
        errors.append(caught.value)
    assert all(err.code() == grpc.StatusCode.NOT_FOUND for err in errors)
    assert {error_info(err).reason for err in errors} == {"SLOT_NOT_FOUND"}
    assert errors[0].details().replace("ns-1", "X") == errors[1].details().replace("zz-no-such-slot", "X")
    row = slot_row(url, "acme-health", "ns-1")
    assert (row.status, row.version) == ("free", 1)


@pytest.mark.parametrize(
    ("role", "fields", "reason"),
    [
        ("patient", {"expected_version": 1}, "MISSING_SLOT_ID"),
        ("patient", {"slot_id": "ns-1"}, "MISSING_EXPECTED_VERSION"),
        ("staff", {"slot_id": "ns-1", "expected_version": 1}, "MISSING_PATIENT_REF"),
        ("staff", {"slot_id": "ns-1", "expected_version": 1, "patient_ref": "p" * 257}, "VALUE_TOO_LONG"),
        ("patient", {"slot_id": "s" * 129, "expected_version": 1}, "VALUE_TOO_LONG"),
        ("patient", {"slot_id": "ns-1", "expected_version": 1, "idempotency_key": "no spaces"},
         "INVALID_IDEMPOTENCY_KEY"),
    ],
)
def test_confirm_bad_input(auth, sqlite_url, metadata_for, role, fields, reason):
    from .conftest import gateway, load, world

    load(sqlite_url, world())
    with gateway(auth, sqlite_url) as stub, pytest.raises(grpc.RpcError) as caught:
        stub.ConfirmSlot(pb.ConfirmSlotRequest(**fields), timeout=TIMEOUT,
                         metadata=metadata_for("acme-health", roles=(role,)))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(caught.value).reason == reason
    assert bookings(sqlite_url, "acme-health", "ns-1") == 0


def test_a_patient_books_only_for_themselves(loaded, metadata_for):
    """The patient comes from the token: naming someone else is refused, whoever that is."""
    stub, url = loaded
    with pytest.raises(grpc.RpcError) as caught:
        confirm(stub, metadata_for("acme-health"), "ns-1", 1, patient="someone-else")
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert error_info(caught.value).reason == "PATIENT_REF_FROM_TOKEN"
    assert bookings(url, "acme-health", "ns-1") == 0
    assert confirm(stub, metadata_for("acme-health"), "ns-1", 1, patient="test-user").result == \
        pb.CONFIRM_RESULT_CONFIRMED


@pytest.mark.slow
def test_concurrent_confirmations_have_exactly_one_winner(loaded, metadata_for):
    stub, url = loaded
    md = metadata_for("acme-health", roles=("staff",))
    contenders = 8
    for slot_id in ("ng-1", "ng-2", "ng-3"):  # three rounds, each on a fresh slot
        barrier = threading.Barrier(contenders)
        results: list[int] = []
        failures: list[BaseException] = []
        lock = threading.Lock()

        def attempt(i: int, slot_id=slot_id, barrier=barrier, results=results, failures=failures,
                    lock=lock) -> None:
            try:
                barrier.wait(timeout=10)
                reply = confirm(stub, md, slot_id, 1, patient=f"patient-{i}")
                with lock:
                    results.append(reply.result)
            except BaseException as exc:  # reported below
                with lock:
                    failures.append(exc)

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(contenders)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not failures, failures
        assert sorted(results) == sorted(
            [pb.CONFIRM_RESULT_CONFIRMED] + [pb.CONFIRM_RESULT_SLOT_NO_LONGER_AVAILABLE] * (contenders - 1)
        ), (slot_id, results)
        assert bookings(url, "acme-health", slot_id) == 1
        row = slot_row(url, "acme-health", slot_id)
        assert (row.status, row.version) == ("busy", 2)


def test_a_lost_database_is_unavailable_not_internal(auth, postgres_url, metadata_for):
    """The orchestrator turns UNAVAILABLE into SOURCE_UNAVAILABLE; it must never see a guess."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    from .conftest import gateway, load, world

    load(postgres_url, world())
    with gateway(auth, postgres_url) as stub:
        md = metadata_for("acme-health")
        assert stub.FindSlots(pb.FindSlotsRequest(specialty="cardiology"), timeout=TIMEOUT, metadata=md).slots
        url = make_url(postgres_url)
        admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE "{url.database}" WITH (FORCE)')
        admin.dispose()
        for call in (
            lambda: stub.FindSlots(pb.FindSlotsRequest(specialty="cardiology"), timeout=TIMEOUT, metadata=md),
            lambda: confirm(stub, md, "ns-1", 1),
            lambda: stub.ListLocations(pb.ListLocationsRequest(), timeout=TIMEOUT, metadata=md),
        ):
            with pytest.raises(grpc.RpcError) as caught:
                call()
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            assert error_info(caught.value).reason == "SCHEDULING_DB_UNAVAILABLE"


def test_only_patients_staff_and_services_may_book(loaded, metadata_for):
    stub, url = loaded
    with pytest.raises(grpc.RpcError) as caught:
        confirm(stub, metadata_for("acme-health", roles=("reviewer", "auditor")), "ns-1", 1)
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert error_info(caught.value).reason == "ROLE_NOT_ALLOWED"
    assert bookings(url, "acme-health", "ns-1") == 0
    assert confirm(stub, metadata_for("acme-health", roles=("staff",)), "ns-1", 1, patient="pat-x").result == \
        pb.CONFIRM_RESULT_CONFIRMED
