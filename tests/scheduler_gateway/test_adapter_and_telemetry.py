"""The SlotSource interface exercised through the unchanged servicer with a second implementation
(in-memory); the stage spans and the stage histogram; `citetrace slots find` end to end."""

from __future__ import annotations

import datetime as dt
import json
import threading

import grpc
import pytest
from citetrace.kit.clients import error_info
from citetrace.kit.telemetry import add_span_processor, setup_tracing, tenant_ref
from citetrace.kit.testing import install_dev_issuer, serving
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY

from apps.cli.main import main as cli
from services.scheduler_gateway.bootstrap import build_spec
from services.scheduler_gateway.domain import BUSY, FREE, LocationRecord, SlotRecord, SlotSource
from services.scheduler_gateway.memory_source import InMemorySlotSource
from services.scheduler_gateway.settings import Settings
from services.scheduler_gateway.sql_source import SqlSlotSource

from .conftest import NOW, UTC, FixedClock, gateway, load, world


def _slot(slot_id: str, location: str, hours: float, status: str = FREE, zone: str = "America/New_York"):
    start = NOW + dt.timedelta(hours=hours)
    return SlotRecord(
        slot_id=slot_id, version=1, location_id=location, location_name=location.title(), clinic_name="C",
        time_zone=zone, provider_id="p1", provider_name="Dr. P (synthetic)", specialty="cardiology",
        appointment_type="follow_up", start=start, end=start + dt.timedelta(minutes=30), status=status,
    )


def memory_source() -> InMemorySlotSource:
    loc = LocationRecord
    return InMemorySlotSource(
        locations={
            "t-one": [loc("one-a", "One A", "One", "America/New_York", ("cardiology",), ("follow_up",)),
                      loc("one-b", "One B", "One", "America/New_York", ("cardiology",), ("follow_up",))],
            "t-two": [loc("two-a", "Two A", "Two", "Europe/Oslo", ("cardiology",), ("follow_up",))],
        },
        slots={
            "t-one": [_slot("a-past", "one-a", -1), _slot("a-1", "one-a", 2), _slot("b-1", "one-b", 2),
                      _slot("a-busy", "one-a", 3, BUSY), _slot("b-2", "one-b", 5)],
            "t-two": [_slot("two-1", "two-a", 1, zone="Europe/Oslo")],
        },
        providers={"t-one": ["p1"]},
    )


def test_both_sources_implement_the_interface(sqlite_url):
    assert isinstance(memory_source(), SlotSource)
    assert isinstance(SqlSlotSource(sqlite_url), SlotSource)


def test_the_servicer_runs_unchanged_on_another_source(auth, metadata_for):
    source = memory_source()
    with gateway(auth, source=source) as stub:
        md = metadata_for("t-one")
        reply = stub.FindSlots(pb.FindSlotsRequest(specialty="cardiology"), timeout=10, metadata=md)
        assert [s.slot_id for s in reply.slots] == ["a-1", "b-1", "b-2"]
        assert reply.as_of.ToDatetime(tzinfo=UTC) == NOW
        page = stub.FindSlots(pb.FindSlotsRequest(specialty="cardiology", page_size=2), timeout=10, metadata=md)
        rest = stub.FindSlots(pb.FindSlotsRequest(specialty="cardiology", page_size=2,
                                                  page_token=page.next_page_token), timeout=10, metadata=md)
        assert [s.slot_id for s in [*page.slots, *rest.slots]] == ["a-1", "b-1", "b-2"]
        scoped = stub.FindSlots(pb.FindSlotsRequest(specialty="cardiology"), timeout=10,
                                metadata=metadata_for("t-one", locations=("one-b",)))
        assert [s.slot_id for s in scoped.slots] == ["b-1", "b-2"]
        with pytest.raises(grpc.RpcError) as caught:
            stub.FindSlots(pb.FindSlotsRequest(specialty="cardiology", location_id="two-a"), timeout=10,
                           metadata=md)
        assert error_info(caught.value).reason == "UNKNOWN_LOCATION"
        with pytest.raises(grpc.RpcError) as caught:
            stub.ConfirmSlot(pb.ConfirmSlotRequest(slot_id="two-1", expected_version=1, ),
                             timeout=10, metadata=md)
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        locations = stub.ListLocations(pb.ListLocationsRequest(), timeout=10, metadata=metadata_for("t-two"))
        assert [(loc.location_id, loc.time_zone) for loc in locations.locations] == [("two-a", "Europe/Oslo")]

        results: list[int] = []
        barrier = threading.Barrier(6)

        def attempt(i: int) -> None:
            barrier.wait(timeout=10)
            results.append(stub.ConfirmSlot(
                pb.ConfirmSlotRequest(slot_id="b-2", expected_version=1),
                timeout=10, metadata=md).result)

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
    assert sorted(results) == [pb.CONFIRM_RESULT_CONFIRMED] + [pb.CONFIRM_RESULT_SLOT_NO_LONGER_AVAILABLE] * 5
    assert [slot for slot, _ in source.appointments["t-one"]] == ["b-2"]


def _stage_count(stage: str) -> float:
    value = REGISTRY.get_sample_value("citetrace_stage_duration_seconds_count",
                                      {"service": "scheduler_gateway", "stage": stage})
    return value or 0.0


def _read_age_count() -> float:
    value = REGISTRY.get_sample_value("citetrace_slot_read_age_seconds_count", {"service": "scheduler_gateway"})
    return value or 0.0


def test_stages_have_spans_and_latency_histograms(auth, sqlite_url, metadata_for):
    exporter = InMemorySpanExporter()
    setup_tracing("citetrace-test")
    add_span_processor(SimpleSpanProcessor(exporter))
    load(sqlite_url, world())
    before = {stage: _stage_count(stage) for stage in ("scheduler.find_slots", "scheduler.confirm_slot")}
    before_age = _read_age_count()
    with gateway(auth, sqlite_url) as stub:
        md = metadata_for("acme-health")
        reply = stub.FindSlots(pb.FindSlotsRequest(specialty="cardiology", page_size=2), timeout=10, metadata=md)
        stub.ConfirmSlot(pb.ConfirmSlotRequest(slot_id=reply.slots[0].slot_id, expected_version=1), timeout=10, metadata=md)
    assert _stage_count("scheduler.find_slots") == before["scheduler.find_slots"] + 1
    assert _stage_count("scheduler.confirm_slot") == before["scheduler.confirm_slot"] + 1
    assert _read_age_count() == before_age + 1
    spans = {span.name: span for span in exporter.get_finished_spans()}
    find = spans["scheduler.find_slots"]
    # The tenant is exported as a pseudonymous reference, never as its ID.
    assert dict(find.attributes) == {"citetrace.tenant": tenant_ref("acme-health"),
                                     "citetrace.slots_returned": 2, "citetrace.has_next_page": True}
    assert find.parent is not None  # under the gRPC server span, so the trace crosses services
    confirm = spans["scheduler.confirm_slot"]
    assert confirm.attributes["citetrace.result"] == "confirmed"
    assert not any("patient-ref-9" in str(v) for span in spans.values() for v in span.attributes.values())


def test_cli_find_through_the_gateway(auth, tmp_path, sqlite_url, capsys, monkeypatch):
    for key in [k for k in __import__("os").environ if k.startswith("CITETRACE_AUTH_")]:
        monkeypatch.delenv(key)
    install_dev_issuer(auth, tmp_path)  # what `citetrace up` creates
    load(sqlite_url, world())
    spec = build_spec(Settings(port=0, metrics_port=-1, database_url=sqlite_url), clock=FixedClock(NOW))
    with serving(spec, auth) as runner:
        common = ["--target", runner.address, "--data-dir", str(tmp_path)]
        assert cli(["slots", "find", "--tenant", "acme-health", "--specialty", "cardiology", "--all",
                    "--page-size", "2", "--json", *common]) == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [line["slot_id"] for line in lines] == ["ns-1", "ng-1", "ng-2", "ns-2", "ng-3"]
        assert lines[0]["local_start"] == "2026-11-30T09:00:00-05:00"

        assert cli(["slots", "find", "--tenant", "cedar-care", "--specialty", "family_medicine",
                    "--day", "2026-12-02", "--location", "cedar-main", *common]) == 0
        out = capsys.readouterr().out
        assert "Wed 2026-12-02 09:00 NZDT" in out and "cedar-wed-0900" in out and "cedar-tue" not in out
        assert "3 free slot(s) as of 2026-11-30T12:00:00+00:00" in out

        with pytest.raises(SystemExit) as caught:
            cli(["slots", "find", "--tenant", "borealis-clinics", "--specialty", "cardiology",
                 "--location", "acme-northside", *common])
        assert caught.value.code == 2
        assert "INVALID_ARGUMENT [UNKNOWN_LOCATION]" in capsys.readouterr().err

        assert cli(["slots", "locations", "--tenant", "borealis-clinics", *common]) == 0
        assert "bor-fjord" in capsys.readouterr().out
