"""Time zones: day bounds in the location's zone (date line, DST changes), slots generated in wall
time, and "tomorrow" queried the way the orchestrator will: day_bounds_utc(date, zone) -> FindSlots."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from citetrace.kit.timestamps import utc_now
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from google.protobuf import timestamp_pb2

from services.scheduler_gateway.core import day_bounds_utc

from .conftest import UTC, FixedClock, gateway, load

SAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "samples" / "slots.yaml"


def ts(value: dt.datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value)
    return stamp


def day_query(stub, md, specialty: str, day: dt.date, zone: str, **fields):
    start, end = day_bounds_utc(day, zone)
    return stub.FindSlots(pb.FindSlotsRequest(specialty=specialty, start_time=ts(start), end_time=ts(end),
                                              page_size=100, **fields), timeout=10, metadata=md)


def local(slot) -> dt.datetime:
    return slot.start_time.ToDatetime(tzinfo=UTC).astimezone(ZoneInfo(slot.time_zone))


@pytest.mark.parametrize(
    ("day", "zone", "start", "hours"),
    [
        (dt.date(2027, 3, 28), "Europe/Oslo", dt.datetime(2027, 3, 27, 23, tzinfo=UTC), 23),  # spring forward
        (dt.date(2027, 10, 31), "Europe/Oslo", dt.datetime(2027, 10, 30, 22, tzinfo=UTC), 25),  # fall back
        (dt.date(2027, 3, 14), "America/New_York", dt.datetime(2027, 3, 14, 5, tzinfo=UTC), 23),
        (dt.date(2027, 11, 7), "America/New_York", dt.datetime(2027, 11, 7, 4, tzinfo=UTC), 25),
        # Across the date line: the Auckland day starts on the previous UTC date.
        (dt.date(2026, 12, 2), "Pacific/Auckland", dt.datetime(2026, 12, 1, 11, tzinfo=UTC), 24),
        (dt.date(2027, 4, 4), "Pacific/Auckland", dt.datetime(2027, 4, 3, 11, tzinfo=UTC), 25),
        # Midnight itself inside the DST gap: the day starts at the end of the gap (01:00 local).
        (dt.date(2026, 9, 6), "America/Santiago", dt.datetime(2026, 9, 6, 4, tzinfo=UTC), 23),
    ],
)
def test_day_bounds_utc(day, zone, start, hours):
    got_start, got_end = day_bounds_utc(day, zone)
    assert got_start == start
    assert got_end - got_start == dt.timedelta(hours=hours)
    assert got_end == day_bounds_utc(day + dt.timedelta(days=1), zone)[0]  # days tile without gaps
    assert got_start.tzinfo is not None and got_start.utcoffset() == dt.timedelta(0)
    assert got_start.astimezone(ZoneInfo(zone)).date() == day


def test_day_bounds_utc_rejects_an_unknown_zone():
    with pytest.raises(ValueError, match="Europe/Olso"):
        day_bounds_utc(dt.date(2026, 12, 1), "Europe/Olso")


def test_tomorrow_in_auckland_crosses_the_date_line(loaded, metadata_for):
    stub, _ = loaded
    md = metadata_for("cedar-care")
    # NOW (2026-11-30 12:00 UTC) is already Tuesday 1 December, 01:00 in Auckland.
    now_local = dt.datetime(2026, 11, 30, 12, tzinfo=UTC).astimezone(ZoneInfo("Pacific/Auckland"))
    tomorrow = now_local.date() + dt.timedelta(days=1)
    assert tomorrow == dt.date(2026, 12, 2)
    reply = day_query(stub, md, "family_medicine", tomorrow, "Pacific/Auckland")
    assert [s.slot_id for s in reply.slots] == ["cedar-wed-0000", "cedar-wed-0900", "cedar-wed-2330"]
    assert {local(s).date() for s in reply.slots} == {tomorrow}
    nine = reply.slots[1]
    assert local(nine).hour == 9 and nine.time_zone == "Pacific/Auckland"
    # 09:00 on Wednesday in Auckland is still Tuesday in UTC.
    assert nine.start_time.ToDatetime(tzinfo=UTC) == dt.datetime(2026, 12, 1, 20, tzinfo=UTC)
    # The UTC calendar day would have been the wrong question: it mixes Tuesday and Wednesday slots.
    utc_day = stub.FindSlots(pb.FindSlotsRequest(
        specialty="family_medicine", start_time=ts(dt.datetime(2026, 12, 2, tzinfo=UTC)),
        end_time=ts(dt.datetime(2026, 12, 3, tzinfo=UTC))), timeout=10, metadata=md)
    assert [s.slot_id for s in reply.slots] != [s.slot_id for s in utc_day.slots]


def _dst_world() -> dict:
    return {
        "tenants": [{
            "id": "borealis-clinics", "name": "Borealis (synthetic)", "time_zone": "Europe/Oslo",
            "specialties": ["cardiology"], "appointment_types": ["new_patient"],
            "locations": [{"id": "bor-fjord", "name": "Fjordview Clinic", "specialties": ["cardiology"],
                           "appointment_types": ["new_patient"]}],
            "schedules": [{
                "id": "bor-cardio", "location": "bor-fjord", "specialty": "cardiology",
                "appointment_type": "new_patient", "from_day": 0, "days_ahead": 4,
                "weekly": [
                    {"days": "daily", "start": "02:00", "end": "03:00", "minutes": 30},  # the DST gap
                    {"days": "daily", "start": "09:00", "end": "10:00", "minutes": 30},
                ],
            }],
            "slots": [
                {"id": "late-sun", "schedule": "bor-cardio", "day": 2, "time": "23:30"},
                {"id": "early-mon", "schedule": "bor-cardio", "day": 3, "time": "00:15"},
            ],
        }],
    }


def test_generated_wall_times_across_the_oslo_dst_change(auth, sqlite_url, metadata_for):
    now = dt.datetime(2027, 3, 25, 12, tzinfo=UTC)
    plan = load(sqlite_url, _dst_world(), now=now, today=dt.date(2027, 3, 26))
    generated = [row["slot_id"] for row in plan.rows["slots"]]
    # 02:00 and 02:30 do not exist on 28 March 2027 in Oslo: not generated that day only.
    assert "bor-cardio-20270328-0200" not in generated and "bor-cardio-20270328-0230" not in generated
    assert "bor-cardio-20270327-0200" in generated and "bor-cardio-20270329-0230" in generated
    md = metadata_for("borealis-clinics")
    with gateway(auth, sqlite_url, clock=FixedClock(now)) as stub:
        saturday = day_query(stub, md, "cardiology", dt.date(2027, 3, 27), "Europe/Oslo")
        sunday = day_query(stub, md, "cardiology", dt.date(2027, 3, 28), "Europe/Oslo")
    assert [s.slot_id for s in sunday.slots] == [
        "bor-cardio-20270328-0900", "bor-cardio-20270328-0930", "late-sun"]
    # Same wall time, different UTC instant: 09:00 CET = 08:00Z, 09:00 CEST = 07:00Z.
    sat_nine = [s for s in saturday.slots if s.slot_id == "bor-cardio-20270327-0900"][0]
    assert sat_nine.start_time.ToDatetime(tzinfo=UTC).hour == 8
    assert sunday.slots[0].start_time.ToDatetime(tzinfo=UTC).hour == 7
    assert all(local(s).date() == dt.date(2027, 3, 28) for s in sunday.slots)
    # 00:15 on Monday (22:15Z on Sunday) belongs to Monday, not to the 23-hour Sunday.
    assert "early-mon" not in [s.slot_id for s in sunday.slots]
    assert len(saturday.slots) == 4


def test_ambiguous_wall_time_at_new_york_fall_back_takes_the_first_occurrence(sqlite_url):
    document = _dst_world()
    tenant = document["tenants"][0]
    tenant["time_zone"] = "America/New_York"
    tenant["schedules"][0]["weekly"] = [{"days": "daily", "start": "01:00", "end": "02:00", "minutes": 30}]
    tenant["slots"] = []
    tenant.pop("appointments", None)
    plan = load(sqlite_url, document, now=dt.datetime(2027, 11, 1, tzinfo=UTC), today=dt.date(2027, 11, 6))
    starts = {row["slot_id"]: row["start_time"] for row in plan.rows["slots"]}
    assert starts["bor-cardio-20271107-0100"] == dt.datetime(2027, 11, 7, 5, 0, tzinfo=UTC)  # EDT
    assert starts["bor-cardio-20271107-0130"] == dt.datetime(2027, 11, 7, 5, 30, tzinfo=UTC)
    assert starts["bor-cardio-20271108-0100"] == dt.datetime(2027, 11, 8, 6, 0, tzinfo=UTC)  # EST


def test_the_sample_always_has_free_slots_tomorrow(auth, sqlite_url, metadata_for):
    """deploy/samples/slots.yaml loaded today, queried with the real clock: every clinic the demo
    asks about has free slots tomorrow in its own zone, and nothing unavailable is offered."""
    from services.scheduler_gateway.loader import plan_file, write_plan
    from services.scheduler_gateway.schema import make_engine

    engine = make_engine(sqlite_url)
    write_plan(engine, plan_file(SAMPLE))
    engine.dispose()
    with gateway(auth, sqlite_url, clock=utc_now) as stub:
        for tenant, specialty, location, zone in [
            ("acme-health", "cardiology", "acme-northside", "America/New_York"),
            ("acme-health", "cardiology", "acme-northgate", "America/New_York"),
            ("acme-health", "imaging", "acme-harbor", "America/New_York"),
            ("borealis-clinics", "cardiology", "bor-fjord", "Europe/Oslo"),
            ("borealis-clinics", "dermatology", "bor-aurora", "Europe/Oslo"),
            ("cedar-care", "family_medicine", "cedar-main", "Pacific/Auckland"),
        ]:
            tomorrow = dt.datetime.now(ZoneInfo(zone)).date() + dt.timedelta(days=1)
            reply = day_query(stub, metadata_for(tenant), specialty, tomorrow, zone, location_id=location)
            assert reply.slots, (tenant, location, tomorrow)
            assert {s.location_id for s in reply.slots} == {location}
            assert all(local(s).date() == tomorrow for s in reply.slots)
            assert not any("eie" in s.slot_id or "blocked" in s.slot_id for s in reply.slots)
        listed = stub.ListLocations(pb.ListLocationsRequest(), timeout=10, metadata=metadata_for("acme-health"))
        assert {loc.location_id: loc.name for loc in listed.locations} == {
            "acme-harbor": "Harbor Imaging Center",
            "acme-northgate": "Northgate Family Clinic",
            "acme-northside": "Northside Family Clinic",
        }
