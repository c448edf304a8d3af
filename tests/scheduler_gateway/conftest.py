"""Fixtures for the scheduler-gateway: a small synthetic world loaded through the real loader into
a real database (SQLite, or PostgreSQL via `postgres_url`), and the gateway in-process over real
gRPC with a fixed clock."""

from __future__ import annotations

import contextlib
import datetime as dt

import grpc
import pytest
from citetrace.kit.testing import serving
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc

from services.scheduler_gateway import schema
from services.scheduler_gateway.bootstrap import build_spec
from services.scheduler_gateway.loader import build_plan, write_plan
from services.scheduler_gateway.settings import Settings

UTC = dt.UTC
# The fixed "now" of most tests: Monday 2026-11-30 12:00 UTC (07:00 in New York, 13:00 in Oslo,
# 01:00 Tuesday in Auckland).
NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def world() -> dict:
    """Three synthetic tenants; explicit slots at fixed instants around NOW."""
    return {
        "format": "citetrace.slots/v1",
        "tenants": [
            {
                "id": "acme-health", "name": "Acme Health (synthetic)", "time_zone": "America/New_York",
                "specialties": ["cardiology", "dermatology", "family_medicine"],
                "appointment_types": ["new_patient", "follow_up"],
                "locations": [
                    {"id": "acme-northside", "name": "Northside Family Clinic", "aliases": ["Northside"],
                     "specialties": ["cardiology", "dermatology"], "appointment_types": ["new_patient", "follow_up"]},
                    {"id": "acme-northgate", "name": "Northgate Family Clinic", "aliases": ["Northgate"],
                     "specialties": ["cardiology", "family_medicine"], "appointment_types": ["new_patient", "follow_up"]},
                ],
                "providers": [
                    {"id": "acme-dr-avery", "name": "Dr. Avery (synthetic)", "specialty": "cardiology"},
                    {"id": "acme-dr-blake", "name": "Dr. Blake (synthetic)", "specialty": "cardiology"},
                ],
                "schedules": [
                    {"id": "ns-cardio", "location": "acme-northside", "provider": "acme-dr-avery",
                     "appointment_type": "follow_up"},
                    {"id": "ng-cardio", "location": "acme-northgate", "provider": "acme-dr-blake",
                     "appointment_type": "new_patient"},
                    {"id": "ns-derm", "location": "acme-northside", "specialty": "dermatology",
                     "appointment_type": "new_patient"},
                ],
                "slots": [
                    {"id": "ns-past", "schedule": "ns-cardio", "start": "2026-11-30T11:00:00Z"},
                    {"id": "ns-1", "schedule": "ns-cardio", "start": "2026-11-30T14:00:00Z"},
                    {"id": "ns-busy", "schedule": "ns-cardio", "start": "2026-11-30T14:30:00Z", "status": "busy"},
                    {"id": "ns-eie", "schedule": "ns-cardio", "start": "2026-11-30T15:00:00Z",
                     "status": "entered-in-error"},
                    {"id": "ns-tentative", "schedule": "ns-cardio", "start": "2026-11-30T15:30:00Z",
                     "status": "busy-tentative"},
                    # Same start at both clinics: ordered by slot_id.
                    {"id": "ns-2", "schedule": "ns-cardio", "start": "2026-12-01T14:00:00Z"},
                    {"id": "ng-2", "schedule": "ng-cardio", "start": "2026-12-01T14:00:00Z"},
                    {"id": "ng-1", "schedule": "ng-cardio", "start": "2026-11-30T16:00:00Z",
                     "appointment_type": "follow_up"},
                    {"id": "ng-3", "schedule": "ng-cardio", "start": "2026-12-02T15:00:00Z"},
                    {"id": "ns-derm-1", "schedule": "ns-derm", "start": "2026-12-01T16:00:00Z"},
                    # Slots of existing appointments (booked ones become busy when loaded).
                    {"id": "ns-appt-1", "schedule": "ns-cardio", "start": "2026-12-02T15:00:00Z"},
                    {"id": "ng-appt-2", "schedule": "ng-cardio", "start": "2026-12-03T15:00:00Z"},
                    {"id": "ns-appt-old", "schedule": "ns-cardio", "start": "2026-11-29T15:00:00Z"},
                ],
                "appointments": [
                    {"id": "appt-1", "patient": "pat-1", "slot": "ns-appt-1"},
                    {"id": "appt-2", "patient": "pat-2", "slot": "ng-appt-2"},
                    {"id": "appt-old", "patient": "pat-1", "slot": "ns-appt-old"},
                    {"id": "appt-cx", "patient": "pat-1", "slot": "ns-busy", "status": "cancelled"},
                ],
            },
            {
                "id": "borealis-clinics", "name": "Borealis Clinics (synthetic)", "time_zone": "Europe/Oslo",
                "specialties": ["cardiology", "physiotherapy"], "appointment_types": ["new_patient"],
                "locations": [
                    {"id": "bor-fjord", "name": "Fjordview Clinic", "specialties": ["cardiology", "physiotherapy"],
                     "appointment_types": ["new_patient"]},
                ],
                "schedules": [
                    {"id": "bor-cardio", "location": "bor-fjord", "specialty": "cardiology",
                     "appointment_type": "new_patient"},
                ],
                "slots": [
                    {"id": "bor-1", "schedule": "bor-cardio", "start": "2026-11-30T13:00:00Z"},
                    {"id": "bor-2", "schedule": "bor-cardio", "start": "2026-12-01T08:00:00Z"},
                    {"id": "bor-appt-slot", "schedule": "bor-cardio", "start": "2026-12-02T08:00:00Z"},
                ],
                # The same patient reference in another tenant: another person, never visible to acme.
                "appointments": [{"id": "bor-appt-1", "patient": "pat-1", "slot": "bor-appt-slot"}],
            },
            {
                "id": "cedar-care", "name": "Cedar Care (synthetic)", "time_zone": "Pacific/Auckland",
                "specialties": ["family_medicine"], "appointment_types": ["follow_up"],
                "locations": [
                    {"id": "cedar-main", "name": "Cedar Main Street Clinic", "specialties": ["family_medicine"],
                     "appointment_types": ["follow_up"]},
                ],
                "schedules": [
                    {"id": "cedar-fm", "location": "cedar-main", "specialty": "family_medicine",
                     "appointment_type": "follow_up"},
                ],
                "slots": [
                    # NOW is Tuesday 01:00 in Auckland: "tomorrow" there is Wednesday 2 December.
                    {"id": "cedar-tue-0900", "schedule": "cedar-fm", "day": 0, "time": "09:00"},
                    {"id": "cedar-tue-2330", "schedule": "cedar-fm", "day": 0, "time": "23:30"},
                    {"id": "cedar-wed-0000", "schedule": "cedar-fm", "day": 1, "time": "00:00"},
                    {"id": "cedar-wed-0900", "schedule": "cedar-fm", "day": 1, "time": "09:00"},
                    {"id": "cedar-wed-2330", "schedule": "cedar-fm", "day": 1, "time": "23:30"},
                    {"id": "cedar-thu-0000", "schedule": "cedar-fm", "day": 2, "time": "00:00"},
                ],
            },
        ],
    }


def load(url: str, document: dict, now: dt.datetime = NOW, today: dt.date | None = None):
    engine = schema.make_engine(url)
    try:
        plan = build_plan(document, "test-world.yaml", today=today, clock=lambda: now)
        write_plan(engine, plan)
        return plan
    finally:
        engine.dispose()


class FixedClock:
    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now


@contextlib.contextmanager
def gateway(auth, url: str | None = None, *, source=None, clock=None, **settings):
    spec = build_spec(Settings(port=0, metrics_port=-1, database_url=url, **settings), source=source,
                      clock=clock or FixedClock(NOW))
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        yield pb_grpc.SchedulerGatewayServiceStub(channel)


@pytest.fixture
def sqlite_url(tmp_path):
    return schema.default_database_url(tmp_path)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """The same test on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        return schema.default_database_url(tmp_path)
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def loaded(auth, db_url):
    """The test world in a database and a gateway over it: (stub, url)."""
    load(db_url, world())
    with gateway(auth, db_url) as stub:
        yield stub, db_url
