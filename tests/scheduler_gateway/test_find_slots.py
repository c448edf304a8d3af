"""FindSlots and ListLocations over real gRPC on SQLite and PostgreSQL: free-and-future only,
deterministic order, scope isolation across tenants and locations, validation, paging."""

from __future__ import annotations

import datetime as dt

import grpc
import pytest
from citetrace.common.v1 import common_pb2
from citetrace.kit.clients import error_info
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from google.protobuf import timestamp_pb2

from .conftest import NOW, UTC

TIMEOUT = 10


def ts(value: dt.datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value)
    return stamp


def find(stub, md, **fields):
    return stub.FindSlots(pb.FindSlotsRequest(**fields), timeout=TIMEOUT, metadata=md)


def ids(reply) -> list[str]:
    return [slot.slot_id for slot in reply.slots]


def rpc_error(call):
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


def test_only_free_future_slots_in_start_then_id_order(loaded, metadata_for):
    stub, _ = loaded
    reply = find(stub, metadata_for("acme-health"), specialty="cardiology", page_size=100)
    # ns-past started before NOW; busy, entered-in-error and busy-tentative are never offered;
    # ng-2 and ns-2 start together and are ordered by slot_id.
    assert ids(reply) == ["ns-1", "ng-1", "ng-2", "ns-2", "ng-3"]
    assert reply.next_page_token == ""
    assert reply.as_of.ToDatetime(tzinfo=UTC) == NOW
    first = reply.slots[0]
    assert first.version == 1
    assert first.status == common_pb2.SLOT_STATUS_FREE
    assert first.as_of == reply.as_of
    assert first.location_id == "acme-northside" and first.location_name == "Northside Family Clinic"
    assert first.time_zone == "America/New_York"
    assert first.provider_id == "acme-dr-avery" and first.provider_name == "Dr. Avery (synthetic)"
    assert first.specialty == "cardiology" and first.appointment_type == "follow_up"
    assert first.start_time.ToDatetime(tzinfo=UTC) == dt.datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
    assert first.end_time.ToDatetime(tzinfo=UTC) == dt.datetime(2026, 11, 30, 14, 30, tzinfo=UTC)


def test_filters_by_location_provider_type_and_range(loaded, metadata_for):
    stub, _ = loaded
    md = metadata_for("acme-health")
    assert ids(find(stub, md, specialty="cardiology", location_id="acme-northgate")) == ["ng-1", "ng-2", "ng-3"]
    assert ids(find(stub, md, specialty="cardiology", provider_id="acme-dr-avery")) == ["ns-1", "ns-2"]
    assert ids(find(stub, md, specialty="cardiology", appointment_type="new_patient")) == ["ng-2", "ng-3"]
    day = find(stub, md, specialty="Cardiology ", start_time=ts(dt.datetime(2026, 12, 1, tzinfo=UTC)),
               end_time=ts(dt.datetime(2026, 12, 2, tzinfo=UTC)))
    assert ids(day) == ["ng-2", "ns-2"]
    # End is exclusive, start inclusive.
    edge = find(stub, md, specialty="cardiology", start_time=ts(dt.datetime(2026, 12, 1, 14, tzinfo=UTC)),
                end_time=ts(dt.datetime(2026, 12, 2, 15, tzinfo=UTC)))
    assert ids(edge) == ["ng-2", "ns-2"]


def test_past_slots_are_excluded_relative_to_as_of(loaded, metadata_for):
    stub, _ = loaded
    md = metadata_for("acme-health")
    later = find(stub, md, specialty="cardiology", as_of=ts(dt.datetime(2026, 11, 30, 15, 0, tzinfo=UTC)))
    assert ids(later) == ["ng-1", "ng-2", "ns-2", "ng-3"]  # ns-1 (14:00) has started by then
    # An as_of before the time of the read cannot bring back a slot that has already started.
    earlier = find(stub, md, specialty="cardiology", as_of=ts(dt.datetime(2026, 11, 30, 10, 0, tzinfo=UTC)),
                   start_time=ts(dt.datetime(2026, 11, 30, 0, 0, tzinfo=UTC)),
                   end_time=ts(dt.datetime(2026, 12, 1, 0, 0, tzinfo=UTC)))
    assert ids(earlier) == ["ns-1", "ng-1"]
    assert "ns-past" not in ids(earlier)


def test_other_tenants_slots_are_never_visible(loaded, metadata_for):
    stub, _ = loaded
    bor = find(stub, metadata_for("borealis-clinics"), specialty="cardiology")
    assert ids(bor) == ["bor-1", "bor-2"]
    assert {slot.location_id for slot in bor.slots} == {"bor-fjord"}
    acme = find(stub, metadata_for("acme-health"), specialty="cardiology", page_size=100)
    assert not {"bor-1", "bor-2"} & set(ids(acme))
    # A tenant with nothing loaded knows no specialty at all.
    err = rpc_error(lambda: find(stub, metadata_for("empty-tenant"), specialty="cardiology"))
    assert error_info(err).reason == "UNKNOWN_SPECIALTY"


def test_other_tenants_location_looks_exactly_like_a_nonexistent_one(loaded, metadata_for):
    stub, _ = loaded
    md = metadata_for("borealis-clinics")
    foreign = rpc_error(lambda: find(stub, md, specialty="cardiology", location_id="acme-northside"))
    missing = rpc_error(lambda: find(stub, md, specialty="cardiology", location_id="zz-nowhere"))
    assert foreign.code() == missing.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(foreign).reason == error_info(missing).reason == "UNKNOWN_LOCATION"
    assert foreign.details().replace("acme-northside", "X") == missing.details().replace("zz-nowhere", "X")
    assert dict(error_info(foreign).metadata) == dict(error_info(missing).metadata)


def test_permitted_locations_come_from_the_principal(loaded, metadata_for):
    stub, _ = loaded
    md = metadata_for("acme-health", locations=("acme-northgate",))
    assert ids(find(stub, md, specialty="cardiology")) == ["ng-1", "ng-2", "ng-3"]
    # A location of the tenant outside the caller's permitted ones returns nothing from it.
    outside = find(stub, md, specialty="cardiology", location_id="acme-northside")
    assert ids(outside) == [] and outside.next_page_token == ""


def test_unknown_specialty_of_the_tenant_even_if_another_tenant_has_it(loaded, metadata_for):
    stub, _ = loaded
    err = rpc_error(lambda: find(stub, metadata_for("acme-health"), specialty="physiotherapy"))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(err).reason == "UNKNOWN_SPECIALTY"
    assert "physiotherapy" in err.details() and "cardiology" in err.details()


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"specialty": "  "}, "MISSING_SPECIALTY"),
        ({"specialty": "cardiology", "start_time": ts(dt.datetime(2026, 12, 5, tzinfo=UTC)),
          "end_time": ts(dt.datetime(2026, 12, 1, tzinfo=UTC))}, "INVERTED_DATE_RANGE"),
        ({"specialty": "cardiology", "start_time": ts(dt.datetime(2026, 12, 1, tzinfo=UTC)),
          "end_time": ts(dt.datetime(2026, 12, 1, tzinfo=UTC))}, "INVERTED_DATE_RANGE"),
        ({"specialty": "cardiology", "start_time": ts(dt.datetime(2026, 12, 1, tzinfo=UTC)),
          "end_time": ts(dt.datetime(2027, 1, 1, 0, 1, tzinfo=UTC))}, "DATE_RANGE_TOO_LONG"),
        ({"specialty": "cardiology", "page_size": 101}, "PAGE_SIZE_OUT_OF_RANGE"),
        ({"specialty": "cardiology", "page_size": -1}, "PAGE_SIZE_OUT_OF_RANGE"),
        ({"specialty": "cardiology", "provider_id": "bor-nobody"}, "UNKNOWN_PROVIDER"),
        ({"specialty": "cardiology", "appointment_type": "mri"}, "UNKNOWN_APPOINTMENT_TYPE"),
        ({"specialty": "cardiology", "page_token": "not-a-token"}, "INVALID_PAGE_TOKEN"),
        ({"specialty": "cardiology", "start_time": timestamp_pb2.Timestamp(seconds=10**12)}, "INVALID_TIMESTAMP"),
    ],
)
def test_bad_input_is_invalid_argument_with_a_reason(auth, sqlite_url, metadata_for, fields, reason):
    from .conftest import gateway, load, world

    load(sqlite_url, world())
    with gateway(auth, sqlite_url) as stub:
        err = rpc_error(lambda: find(stub, metadata_for("acme-health"), **fields))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    info = error_info(err)
    assert info.reason == reason and info.domain == "scheduler_gateway.citetrace"


def test_exactly_31_days_is_allowed_and_the_limit_is_a_setting(auth, sqlite_url, metadata_for):
    from .conftest import gateway, load, world

    load(sqlite_url, world())
    start = dt.datetime(2026, 12, 1, tzinfo=UTC)
    with gateway(auth, sqlite_url) as stub:
        ok = find(stub, metadata_for("acme-health"), specialty="cardiology", start_time=ts(start),
                  end_time=ts(start + dt.timedelta(days=31)))
        assert ids(ok) == ["ng-2", "ns-2", "ng-3"]
    with gateway(auth, sqlite_url, max_range_days=1, default_range_days=1) as stub:
        err = rpc_error(lambda: find(stub, metadata_for("acme-health"), specialty="cardiology",
                                     start_time=ts(start), end_time=ts(start + dt.timedelta(days=2))))
        assert error_info(err).reason == "DATE_RANGE_TOO_LONG"
        assert error_info(err).metadata["max_days"] == "1"


def test_paging_covers_every_slot_once_in_order(loaded, metadata_for):
    stub, _ = loaded
    md = metadata_for("acme-health")
    everything = ids(find(stub, md, specialty="cardiology", page_size=100))
    for size in (1, 2, 3, 4):
        seen, token, pages = [], "", 0
        while True:
            reply = find(stub, md, specialty="cardiology", page_size=size, page_token=token)
            assert len(reply.slots) <= size
            seen += ids(reply)
            pages += 1
            token = reply.next_page_token
            if not token:
                break
        assert seen == everything, size
        assert pages == -(-len(everything) // size)  # no empty trailing page


def test_a_page_token_only_continues_its_own_query(loaded, metadata_for):
    stub, _ = loaded
    md = metadata_for("acme-health")
    token = find(stub, md, specialty="cardiology", page_size=1).next_page_token
    assert token
    err = rpc_error(lambda: find(stub, md, specialty="cardiology", location_id="acme-northgate", page_token=token))
    assert error_info(err).reason == "INVALID_PAGE_TOKEN"
    err = rpc_error(lambda: find(stub, metadata_for("borealis-clinics"), specialty="cardiology", page_token=token))
    assert error_info(err).reason == "INVALID_PAGE_TOKEN"


def test_list_locations_is_scoped_and_paged(loaded, metadata_for):
    stub, _ = loaded
    reply = stub.ListLocations(pb.ListLocationsRequest(), timeout=TIMEOUT, metadata=metadata_for("acme-health"))
    assert [loc.location_id for loc in reply.locations] == ["acme-northgate", "acme-northside"]
    northside = reply.locations[1]
    assert northside.name == "Northside Family Clinic" and northside.time_zone == "America/New_York"
    assert list(northside.specialties) == ["cardiology", "dermatology"]
    assert list(northside.appointment_types) == ["follow_up", "new_patient"]
    assert list(northside.aliases) == ["Northside"]
    assert northside.clinic_name == "Northside Family Clinic"  # implicit clinic of a location

    first = stub.ListLocations(pb.ListLocationsRequest(page_size=1), timeout=TIMEOUT,
                               metadata=metadata_for("acme-health"))
    assert [loc.location_id for loc in first.locations] == ["acme-northgate"] and first.next_page_token
    second = stub.ListLocations(pb.ListLocationsRequest(page_size=1, page_token=first.next_page_token),
                                timeout=TIMEOUT, metadata=metadata_for("acme-health"))
    assert [loc.location_id for loc in second.locations] == ["acme-northside"]
    assert second.next_page_token == ""
    # Another tenant cannot continue the token, and sees only its own locations.
    err = rpc_error(lambda: stub.ListLocations(pb.ListLocationsRequest(page_token=first.next_page_token),
                                               timeout=TIMEOUT, metadata=metadata_for("borealis-clinics")))
    assert error_info(err).reason == "INVALID_PAGE_TOKEN"
    bor = stub.ListLocations(pb.ListLocationsRequest(), timeout=TIMEOUT, metadata=metadata_for("borealis-clinics"))
    assert [loc.location_id for loc in bor.locations] == ["bor-fjord"]
    assert bor.locations[0].time_zone == "Europe/Oslo"
    restricted = stub.ListLocations(pb.ListLocationsRequest(), timeout=TIMEOUT,
                                    metadata=metadata_for("acme-health", locations=("acme-northside",)))
    assert [loc.location_id for loc in restricted.locations] == ["acme-northside"]
    err = rpc_error(lambda: stub.ListLocations(pb.ListLocationsRequest(page_size=101), timeout=TIMEOUT,
                                               metadata=metadata_for("acme-health")))
    assert error_info(err).reason == "PAGE_SIZE_OUT_OF_RANGE"
