"""Domain types of the scheduler-gateway and the adapter interface to the system of record.
No grpc imports: the servicer converts these to and from protobuf.

Times are timezone-aware UTC datetimes everywhere; each location carries its IANA zone, and the
only place wall-clock dates become instants is `day_bounds_utc`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Protocol, runtime_checkable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

UTC = dt.UTC

# FHIR R4 Slot.status (http://hl7.org/fhir/R4/valueset-slotstatus.html).
FREE = "free"
BUSY = "busy"
BUSY_UNAVAILABLE = "busy-unavailable"
BUSY_TENTATIVE = "busy-tentative"
ENTERED_IN_ERROR = "entered-in-error"
SLOT_STATUSES = (FREE, BUSY, BUSY_UNAVAILABLE, BUSY_TENTATIVE, ENTERED_IN_ERROR)

# ConfirmOutcome.result values.
CONFIRMED = "confirmed"
SLOT_NO_LONGER_AVAILABLE = "slot_no_longer_available"
SLOT_NOT_FOUND = "slot_not_found"


def zone(name: str) -> ZoneInfo:
    """The IANA zone or ValueError naming it."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown IANA time zone {name!r}") from exc


def day_bounds_utc(day: dt.date, zone_name: str) -> tuple[dt.datetime, dt.datetime]:
    """The UTC instants [start, end) of one calendar day in an IANA zone.

    The day starts at local midnight of `day` and ends at local midnight of the next day, so a
    day with a DST change is 23 or 25 hours long. If local midnight does not exist (a zone whose
    DST gap sits at 00:00), the day starts at the first instant after the gap.
    """
    tz = zone(zone_name)
    return _local_midnight_utc(day, tz), _local_midnight_utc(day + dt.timedelta(days=1), tz)


def _local_midnight_utc(day: dt.date, tz: ZoneInfo) -> dt.datetime:
    # fold=0 maps a wall time inside a DST gap with the offset before the transition, which for
    # midnight-in-a-gap is exactly the transition instant: the first instant of that local day.
    return dt.datetime.combine(day, dt.time(0, 0), tzinfo=tz).astimezone(UTC)


def local_to_utc(day: dt.date, wall: dt.time, tz: ZoneInfo) -> dt.datetime | None:
    """A wall-clock time on a day in a zone as a UTC instant; None when that wall time does not
    exist (a DST gap). Ambiguous times (the repeated hour) take the first occurrence."""
    local = dt.datetime.combine(day, wall, tzinfo=tz)
    instant = local.astimezone(UTC)
    if instant.astimezone(tz).replace(tzinfo=None) != local.replace(tzinfo=None):
        return None
    return instant


def as_utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None:
        raise ValueError("naive datetime: give a UTC offset")
    return value.astimezone(UTC)


@dataclasses.dataclass(frozen=True)
class LocationRecord:
    location_id: str
    name: str
    clinic_name: str
    time_zone: str
    specialties: tuple[str, ...] = ()
    appointment_types: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class SlotRecord:
    slot_id: str
    version: int
    location_id: str
    location_name: str
    clinic_name: str
    time_zone: str
    provider_id: str
    provider_name: str
    specialty: str
    appointment_type: str
    start: dt.datetime  # aware UTC
    end: dt.datetime  # aware UTC
    status: str  # one of SLOT_STATUSES


@dataclasses.dataclass(frozen=True)
class TenantCatalog:
    """What a tenant has, for validating a query (never another tenant's)."""

    specialties: frozenset[str]
    location_ids: frozenset[str]
    provider_ids: frozenset[str]
    appointment_types: frozenset[str]


@dataclasses.dataclass(frozen=True)
class SlotQuery:
    """A scoped query, already validated by the core: the source applies it literally."""

    tenant_id: str
    # None: every location of the tenant; otherwise only these (may be empty: nothing matches).
    location_ids: frozenset[str] | None
    specialty: str
    provider_id: str | None
    appointment_type: str | None
    start: dt.datetime  # slot.start >= start
    end: dt.datetime  # slot.start < end
    after: dt.datetime  # slot.start > after (the as_of cutoff)
    # Keyset cursor: only slots ordered after (start, slot_id).
    cursor: tuple[dt.datetime, str] | None
    limit: int


@dataclasses.dataclass(frozen=True)
class ConfirmOutcome:
    result: str  # CONFIRMED | SLOT_NO_LONGER_AVAILABLE | SLOT_NOT_FOUND
    slot: SlotRecord | None = None
    appointment_id: str = ""


@runtime_checkable
class SlotSource(Protocol):
    """The system of record behind the gateway. The SQL implementation is the default; a FHIR
    Slot-search adapter or the in-memory one implements the same five methods.

    Every method takes the tenant explicitly and must never return another tenant's rows.
    `location_ids` None means every location of the tenant."""

    def warm_up(self) -> None: ...

    def close(self) -> None: ...

    def catalog(self, tenant_id: str) -> TenantCatalog: ...

    def find_free_slots(self, query: SlotQuery) -> list[SlotRecord]:
        """Free slots matching the query, ordered by (start, slot_id), at most query.limit."""
        ...

    def confirm(
        self,
        tenant_id: str,
        location_ids: frozenset[str] | None,
        slot_id: str,
        expected_version: int,
        patient_ref: str,
        now: dt.datetime,
    ) -> ConfirmOutcome:
        """Atomically books the slot if it is still free, starts after `now` and has
        `expected_version`; exactly one of several concurrent callers may win."""
        ...

    def list_locations(
        self, tenant_id: str, location_ids: frozenset[str] | None, after_id: str | None, limit: int
    ) -> Sequence[LocationRecord]:
        """Locations ordered by location_id, after `after_id`, at most `limit`."""
        ...
