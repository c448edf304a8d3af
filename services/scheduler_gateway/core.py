"""The scheduler-gateway's behaviour, free of grpc: validation, scoping from the principal, paging,
and the calls to the system of record through the SlotSource interface."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Callable, Sequence

from citetrace.kit.auth import Principal
from citetrace.kit.errors import InvalidArgument, NotFound
from citetrace.kit.metrics import record_slot_read_age
from citetrace.kit.telemetry import stage
from citetrace.kit.timestamps import utc_now

from services.scheduler_gateway import access
from services.scheduler_gateway.domain import (
    CONFIRMED,
    SLOT_NOT_FOUND,
    UTC,
    ConfirmOutcome,
    LocationRecord,
    SlotQuery,
    SlotRecord,
    SlotSource,
    day_bounds_utc,
)

SERVICE = "scheduler_gateway"
MAX_PAGE_SIZE = 100
MAX_ID_LENGTH = 128

__all__ = ["SchedulerCore", "FindSlotsInput", "FindSlotsResult", "day_bounds_utc", "Limits"]


@dataclasses.dataclass(frozen=True)
class Limits:
    max_range_days: int = 31
    default_range_days: int = 7
    default_page_size: int = 20


@dataclasses.dataclass(frozen=True)
class FindSlotsInput:
    specialty: str
    location_id: str = ""
    provider_id: str = ""
    appointment_type: str = ""
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    page_size: int = 0
    page_token: str = ""
    as_of: dt.datetime | None = None


@dataclasses.dataclass(frozen=True)
class FindSlotsResult:
    slots: list[SlotRecord]
    next_page_token: str
    as_of: dt.datetime  # when the system of record was read


@dataclasses.dataclass(frozen=True)
class LocationsPage:
    locations: Sequence[LocationRecord]
    next_page_token: str


class SchedulerCore:
    def __init__(self, source: SlotSource, limits: Limits | None = None,
                 clock: Callable[[], dt.datetime] = utc_now) -> None:
        self.source = source
        self.limits = limits or Limits()
        self.clock = clock
        # Called after a booking committed an action event (wakes the relay to trace).
        self.on_events: Callable[[], None] = _nothing

    # -- FindSlots -------------------------------------------------------------------------------

    def find_slots(self, principal: Principal, request: FindSlotsInput) -> FindSlotsResult:
        with stage(SERVICE, "scheduler.find_slots", tenant=principal.tenant_id) as span:
            result = self._find_slots(principal, request)
            span.set_attribute("citetrace.slots_returned", len(result.slots))
            span.set_attribute("citetrace.has_next_page", bool(result.next_page_token))
            return result

    def _find_slots(self, principal: Principal, request: FindSlotsInput) -> FindSlotsResult:
        specialty = request.specialty.strip().lower()
        if not specialty:
            raise InvalidArgument("MISSING_SPECIALTY", "specialty is required", field="specialty")
        page_size = checked_page_size(request.page_size, self.limits.default_page_size)
        now = self.clock()
        # A live authority never offers a slot that has already started: the cutoff is the later of
        # the caller's as_of and the time of this read.
        after = max(now, request.as_of) if request.as_of is not None else now
        start = request.start if request.start is not None else after
        end = request.end if request.end is not None else start + dt.timedelta(days=self.limits.default_range_days)
        if request.start is not None and request.end is not None and end <= start:
            raise InvalidArgument(
                "INVERTED_DATE_RANGE", f"end_time {end.isoformat()} is not after start_time {start.isoformat()}",
                field="end_time",
            )
        if end - start > dt.timedelta(days=self.limits.max_range_days):
            raise InvalidArgument(
                "DATE_RANGE_TOO_LONG",
                f"the date range is {(end - start).total_seconds() / 86400:.1f} days; "
                f"at most {self.limits.max_range_days} days are allowed",
                field="end_time", max_days=str(self.limits.max_range_days),
            )

        catalog = self.source.catalog(principal.tenant_id)
        if specialty not in catalog.specialties:
            raise InvalidArgument(
                "UNKNOWN_SPECIALTY",
                f"specialty {specialty!r} is not offered by your organization; known: "
                f"{', '.join(sorted(catalog.specialties)) or 'none'}",
                field="specialty",
            )
        location_id = request.location_id.strip()
        if location_id and location_id not in catalog.location_ids:
            # Another tenant's location is reported exactly like one that does not exist.
            raise InvalidArgument(
                "UNKNOWN_LOCATION", f"location {location_id!r} is not a known location", field="location_id"
            )
        provider_id = request.provider_id.strip()
        if provider_id and provider_id not in catalog.provider_ids:
            raise InvalidArgument(
                "UNKNOWN_PROVIDER", f"provider {provider_id!r} is not a known provider", field="provider_id"
            )
        appointment_type = request.appointment_type.strip().lower()
        if appointment_type and appointment_type not in catalog.appointment_types:
            raise InvalidArgument(
                "UNKNOWN_APPOINTMENT_TYPE",
                f"appointment type {appointment_type!r} is not offered; known: "
                f"{', '.join(sorted(catalog.appointment_types)) or 'none'}",
                field="appointment_type",
            )

        fingerprint = _fingerprint(
            principal.tenant_id, specialty, location_id, provider_id, appointment_type,
            request.start, request.end,
        )
        cursor = _decode_slot_token(request.page_token, fingerprint) if request.page_token else None
        scope = scope_of(principal, location_id)
        if scope is not None and not scope:
            return FindSlotsResult([], "", now)  # a location outside the caller's scope: nothing
        if end <= start:
            return FindSlotsResult([], "", now)
        rows = self.source.find_free_slots(
            SlotQuery(
                tenant_id=principal.tenant_id, location_ids=scope, specialty=specialty,
                provider_id=provider_id or None, appointment_type=appointment_type or None,
                start=start, end=end, after=after, cursor=cursor, limit=page_size + 1,
            )
        )
        # The SQL source reads the system of record live: the data is as old as the read itself.
        record_slot_read_age((self.clock() - now).total_seconds())
        next_token = ""
        if len(rows) > page_size:
            rows = rows[:page_size]
            next_token = _encode_slot_token(rows[-1], fingerprint)
        return FindSlotsResult(rows, next_token, now)

    # -- ConfirmSlot -----------------------------------------------------------------------------

    def confirm_slot(self, principal: Principal, slot_id: str, expected_version: int,
                     patient_ref: str, idempotency_key: str = "") -> ConfirmOutcome:
        slot_id = slot_id.strip()
        if not slot_id:
            raise InvalidArgument("MISSING_SLOT_ID", "slot_id is required", field="slot_id")
        if expected_version < 1:
            raise InvalidArgument(
                "MISSING_EXPECTED_VERSION",
                "expected_version is required: pass the version FindSlots returned with the slot",
                field="expected_version",
            )
        if len(slot_id) > MAX_ID_LENGTH:
            raise InvalidArgument("VALUE_TOO_LONG", f"slot_id is at most {MAX_ID_LENGTH} characters", field="slot_id")
        access.require_record_role(principal, "booking a slot")
        patient = access.patient_of(principal, patient_ref, required=True)
        idem = access.idempotency(principal, idempotency_key, "ConfirmSlot", slot_id=slot_id,
                                  expected_version=expected_version, patient_ref=patient)
        with stage(SERVICE, "scheduler.confirm_slot", tenant=principal.tenant_id) as span:
            outcome = self.source.confirm(
                principal.tenant_id, scope_of(principal, ""), slot_id, expected_version,
                patient, self.clock(), idempotency=idem, actor_ref=access.actor_ref(principal),
            )
            span.set_attribute("citetrace.result", outcome.result)
        if is_confirmed(outcome):
            self.on_events()
        if outcome.result == SLOT_NOT_FOUND:
            # The same answer for a slot of another tenant, outside the caller's locations, or none.
            raise NotFound("SLOT_NOT_FOUND", f"slot {slot_id!r} was not found", field="slot_id")
        return outcome

    # -- ListLocations ---------------------------------------------------------------------------

    def list_locations(self, principal: Principal, page_size: int, page_token: str) -> LocationsPage:
        size = checked_page_size(page_size, self.limits.default_page_size)
        after = _decode_location_token(page_token, principal.tenant_id) if page_token else None
        with stage(SERVICE, "scheduler.list_locations", tenant=principal.tenant_id):
            rows = list(self.source.list_locations(principal.tenant_id, scope_of(principal, ""), after, size + 1))
        next_token = ""
        if len(rows) > size:
            rows = rows[:size]
            next_token = encode_token({"v": 1, "t": short_hash(principal.tenant_id), "l": rows[-1].location_id})
        return LocationsPage(rows, next_token)


def _nothing() -> None:
    return None


def is_confirmed(outcome: ConfirmOutcome) -> bool:
    return outcome.result == CONFIRMED


def scope_of(principal: Principal, location_id: str) -> frozenset[str] | None:
    """The locations a query may read: the principal's permitted locations (none listed = all of
    the tenant), narrowed to the requested one."""
    permitted = frozenset(principal.location_ids) if principal.location_ids else None
    if not location_id:
        return permitted
    if permitted is None or location_id in permitted:
        return frozenset({location_id})
    return frozenset()


def checked_page_size(value: int, default: int) -> int:
    if value == 0:
        return default
    if not 1 <= value <= MAX_PAGE_SIZE:
        raise InvalidArgument(
            "PAGE_SIZE_OUT_OF_RANGE", f"page_size {value} is out of range 1..{MAX_PAGE_SIZE} (0 = default)",
            field="page_size",
        )
    return value


def short_hash(*parts: object) -> str:
    return hashlib.sha256("\x1f".join("" if p is None else str(p) for p in parts).encode()).hexdigest()[:16]


def _fingerprint(*parts: object) -> str:
    return short_hash(*[p.isoformat() if isinstance(p, dt.datetime) else p for p in parts])


def encode_token(payload: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_token(token: str) -> dict:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        payload = json.loads(raw)
        if not isinstance(payload, dict) or payload.get("v") != 1:
            raise ValueError("unknown token version")
        return payload
    except (ValueError, TypeError) as exc:
        raise bad_page_token() from exc


def bad_page_token() -> InvalidArgument:
    return InvalidArgument(
        "INVALID_PAGE_TOKEN", "page_token is not a token returned by this query; start again without it",
        field="page_token",
    )


def _encode_slot_token(last: SlotRecord, fingerprint: str) -> str:
    return encode_token({"v": 1, "f": fingerprint, "s": last.start.isoformat(), "i": last.slot_id})


def _decode_slot_token(token: str, fingerprint: str) -> tuple[dt.datetime, str]:
    payload = decode_token(token)
    if payload.get("f") != fingerprint:
        raise bad_page_token()
    try:
        start = dt.datetime.fromisoformat(payload["s"]).astimezone(UTC)
        return start, str(payload["i"])
    except (KeyError, ValueError, TypeError) as exc:
        raise bad_page_token() from exc


def _decode_location_token(token: str, tenant_id: str) -> str:
    payload = decode_token(token)
    if payload.get("t") != short_hash(tenant_id) or not isinstance(payload.get("l"), str):
        raise bad_page_token()
    return payload["l"]
