"""The slots loader and `citetrace slots load`: path-named validation errors, nothing half-stored,
YAML and JSON, replace-per-tenant semantics, the schema version guard."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path

import pytest
import yaml
from sqlalchemy import func, select

from apps.cli.main import main as cli
from services.scheduler_gateway import schema
from services.scheduler_gateway.loader import LoadError, build_plan, load_file

from .conftest import NOW, load, world

SAMPLE = str(Path(__file__).resolve().parents[2] / "deploy" / "samples" / "slots.yaml")


def count(url: str, table) -> int:
    engine = schema.make_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(table)).scalar_one()
    finally:
        engine.dispose()


def errors_of(document) -> list[str]:
    with pytest.raises(LoadError) as caught:
        build_plan(document, "bad.yaml", clock=lambda: NOW)
    return caught.value.errors


def mutate(change) -> dict:
    document = copy.deepcopy(world())
    change(document)
    return document


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["tenants"][0]["locations"][1].__setitem__("time_zone", "Europe/Olso"),
         "bad.yaml: tenants[0].locations[1].time_zone: unknown IANA time zone 'Europe/Olso'"),
        (lambda d: d["tenants"][1]["locations"][0].__setitem__("specialtys", ["cardiology"]),
         "bad.yaml: tenants[1].locations[0].specialtys: unknown key"),
        (lambda d: d["tenants"][0]["slots"][2].__setitem__("status", "booked"),
         "bad.yaml: tenants[0].slots[2].status: 'booked' is not a FHIR Slot.status"),
        (lambda d: d["tenants"][0]["slots"][0].__setitem__("start", "2026-11-30T11:00:00"),
         "bad.yaml: tenants[0].slots[0].start: '2026-11-30T11:00:00' has no UTC offset"),
        (lambda d: d["tenants"][0]["slots"][0].__setitem__("schedule", "nope"),
         "bad.yaml: tenants[0].slots[0].schedule: unknown schedule 'nope'"),
        (lambda d: d["tenants"][0]["schedules"][0].__setitem__("location", "bor-fjord"),
         "bad.yaml: tenants[0].schedules[0].location: unknown location 'bor-fjord'"),
        (lambda d: d["tenants"][0]["locations"][0]["specialties"].append("physiotherapy"),
         "bad.yaml: tenants[0].locations[0].specialties[2]: unknown specialty 'physiotherapy'"),
        (lambda d: d["tenants"][0]["slots"][1].__setitem__("id", "ns-past"),
         "bad.yaml: tenants[0].slots[1].id: duplicate slot 'ns-past'"),
        (lambda d: d["tenants"][2]["slots"][0].__setitem__("time", 630),
         "bad.yaml: tenants[2].slots[0].time: got the number 630: quote times"),
        (lambda d: d["tenants"][2]["slots"][0].__setitem__("time", "9am"),
         "bad.yaml: tenants[2].slots[0].time: expected a time HH:MM"),
        (lambda d: d["tenants"][0]["schedules"][1].__setitem__("weekly", [
            {"days": ["mon", "funday"], "start": "09:00", "end": "08:00", "minutes": 30}]),
         "bad.yaml: tenants[0].schedules[1].weekly[0].days[1]: expected a weekday mon..sun, got 'funday'"),
        (lambda d: d["tenants"][0]["schedules"][1].__setitem__("specialty", "dermatology"),
         "bad.yaml: tenants[0].schedules[1].specialty: location 'acme-northgate' does not offer specialty"),
        (lambda d: d["tenants"].append(copy.deepcopy(d["tenants"][1])),
         "bad.yaml: tenants[3].id: duplicate tenant 'borealis-clinics'"),
        (lambda d: d.__setitem__("format", "citetrace.slots/v9"),
         "bad.yaml: format: expected 'citetrace.slots/v1'"),
        (lambda d: d["tenants"][1]["specialties"].append("Oncology"),
         "bad.yaml: tenants[1].specialties[2]: 'Oncology': specialty and appointment type IDs are lowercase"),
        (lambda d: d["tenants"][0].pop("locations"),
         "bad.yaml: tenants[0].locations: required key is missing"),
    ],
)
def test_errors_name_the_file_and_the_path_of_the_bad_key(change, expected):
    errors = errors_of(mutate(change))
    assert any(error.startswith(expected) for error in errors), errors


def test_every_error_is_reported_at_once():
    def change(d):
        d["tenants"][0]["time_zone"] = "Mars/Olympus"
        d["tenants"][1]["slots"][0]["status"] = "open"
    errors = errors_of(mutate(change))
    assert len(errors) == 2
    assert errors[0].startswith("bad.yaml: tenants[0].time_zone:")
    assert errors[1].startswith("bad.yaml: tenants[1].slots[0].status:")


def test_not_a_mapping_or_no_tenants():
    assert errors_of([1, 2]) == ["bad.yaml: expected a mapping, got a list"]
    assert errors_of({"tenants": []}) == ["bad.yaml: tenants: no tenants to load"]


def test_a_bad_file_writes_nothing_and_keeps_what_was_there(tmp_path, sqlite_url):
    load(sqlite_url, world())
    before = count(sqlite_url, schema.slots)
    bad = tmp_path / "bad.yaml"
    document = world()
    document["tenants"][0]["slots"] = []  # would replace acme's slots ...
    document["tenants"][0]["appointments"] = []
    document["tenants"][2]["locations"][0]["time_zone"] = "Pacific/Atlantis"  # ... but the file is invalid
    bad.write_text(yaml.safe_dump(document))
    with pytest.raises(LoadError) as caught:
        load_file(bad, sqlite_url)
    assert caught.value.errors == [
        f"{bad}: tenants[2].locations[0].time_zone: unknown IANA time zone 'Pacific/Atlantis'"]
    assert count(sqlite_url, schema.slots) == before


def test_a_database_failure_mid_load_rolls_everything_back(sqlite_url):
    """One transaction: when an insert fails (a slot row violating a constraint), the earlier
    deletes and inserts of the same load are undone too."""
    from services.scheduler_gateway.loader import write_plan

    load(sqlite_url, world())
    before = (count(sqlite_url, schema.tenants), count(sqlite_url, schema.slots))
    plan = build_plan(world(), "x.yaml", clock=lambda: NOW)
    plan.rows["slots"][-1]["end_time"] = plan.rows["slots"][-1]["start_time"]  # violates end > start
    engine = schema.make_engine(sqlite_url)
    with pytest.raises(Exception, match="slot_end_after_start|CHECK constraint"):
        write_plan(engine, plan)
    engine.dispose()
    assert (count(sqlite_url, schema.tenants), count(sqlite_url, schema.slots)) == before


def test_reloading_replaces_only_the_tenants_in_the_file(tmp_path, sqlite_url):
    load(sqlite_url, world())
    total = count(sqlite_url, schema.slots)
    only_cedar = world()
    only_cedar["tenants"] = [only_cedar["tenants"][2]]
    only_cedar["tenants"][0]["slots"] = only_cedar["tenants"][0]["slots"][:2]
    path = tmp_path / "cedar.json"
    path.write_text(json.dumps(only_cedar))  # JSON works as well as YAML
    plan = load_file(path, sqlite_url)
    assert plan.tenant_ids == ["cedar-care"]
    assert count(sqlite_url, schema.slots) == total - 6 + 2
    load(sqlite_url, world())
    assert count(sqlite_url, schema.slots) == total


def test_a_database_newer_than_the_code_is_refused(sqlite_url):
    engine = schema.make_engine(sqlite_url)
    schema.ensure_schema(engine)
    with engine.begin() as conn:
        conn.execute(schema.schema_version.insert().values(version=schema.SCHEMA_VERSION + 1,
                                                           applied_at=dt.datetime.now(dt.UTC)))
    with pytest.raises(RuntimeError, match="newer than this code"):
        schema.ensure_schema(engine)
    engine.dispose()


def test_cli_load_reports_errors_and_loads_the_sample(tmp_path, capsys):
    bad = tmp_path / "slots.yaml"
    document = world()
    document["tenants"][1]["schedules"][0]["appointment_type"] = "massage"
    bad.write_text(yaml.safe_dump(document))
    assert cli(["slots", "load", str(bad), "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: tenants[1].schedules[0].appointment_type: unknown appointment type 'massage'" in err
    assert "nothing was loaded" in err
    assert not (tmp_path / schema.SQLITE_FILE).exists()

    assert cli(["slots", "load", SAMPLE, "--data-dir", str(tmp_path), "--check"]) == 0
    assert "valid: 4 tenants" in capsys.readouterr().out
    assert not (tmp_path / schema.SQLITE_FILE).exists()
    assert cli(["slots", "load", SAMPLE, "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "loaded 4 tenants (acme-health, borealis-clinics, cedar-care, lakeside-health)" in out
    url = schema.default_database_url(tmp_path)
    assert count(url, schema.tenants) == 4 and count(url, schema.locations) == 8
    assert count(url, schema.slots) > 500


def test_unquoted_yaml_timestamps_keep_their_offset(tmp_path, sqlite_url):
    document = world()
    document["tenants"] = [document["tenants"][0]]
    document["tenants"][0]["slots"] = [{"id": "x", "schedule": "ns-cardio", "start": "PLACEHOLDER"}]
    document["tenants"][0].pop("appointments")
    text = yaml.safe_dump(document).replace("PLACEHOLDER", "2026-12-01T09:00:00-05:00")
    path = tmp_path / "slots.yaml"
    path.write_text(text)
    plan = load_file(path, sqlite_url)
    (row,) = plan.rows["slots"]
    assert row["start_time"] == dt.datetime(2026, 12, 1, 14, 0, tzinfo=dt.UTC)
    path.write_text(text.replace("2026-12-01T09:00:00-05:00", "2026-12-01 09:00:00"))
    with pytest.raises(LoadError, match=r"tenants\[0\]\.slots\[0\]\.start: .* has no UTC offset"):
        load_file(path, sqlite_url)
