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
        idempotency: Idempotency | None = None,
        actor_ref: str = "",
    ) -> ConfirmOutcome:
        """Atomically books the slot if it is still free, starts after `now` and has
        `expected_version`; exactly one of several concurrent callers may win. With an
        idempotency key, a repeated call returns the first call's outcome; a different request
        under the key raises AlreadyExists (IDEMPOTENCY_KEY_REUSED)."""
        ...

    def list_locations(
        self, tenant_id: str, location_ids: frozenset[str] | None, after_id: str | None, limit: int
    ) -> Sequence[LocationRecord]:
        """Locations ordered by location_id, after `after_id`, at most `limit`."""
        ...


# -- appointments and proposals (workflow state) -------------------------------------------------

# FHIR R4 Appointment.status (the subset used).
APPOINTMENT_BOOKED = "booked"
APPOINTMENT_CANCELLED = "cancelled"
APPOINTMENT_FULFILLED = "fulfilled"
APPOINTMENT_NOSHOW = "noshow"
APPOINTMENT_ENTERED_IN_ERROR = "entered-in-error"
APPOINTMENT_STATUSES = (APPOINTMENT_BOOKED, APPOINTMENT_CANCELLED, APPOINTMENT_FULFILLED, APPOINTMENT_NOSHOW,
                        APPOINTMENT_ENTERED_IN_ERROR)

BOOK = "book"
RESCHEDULE = "reschedule"
CANCEL = "cancel"
CHANGE_KINDS = (BOOK, RESCHEDULE, CANCEL)

PENDING = "pending"
PROPOSAL_CONFIRMED = "confirmed"
REJECTED = "rejected"
EXPIRED = "expired"
FAILED = "failed"
PROPOSAL_STATUSES = (PENDING, PROPOSAL_CONFIRMED, REJECTED, EXPIRED, FAILED)

FEE = "fee"
REVIEW_REQUIRED = "review_required"
POLICY_TERM = "policy_term"
TERMS_UNVERIFIED = "terms_unverified"
CONSEQUENCE_KINDS = (FEE, REVIEW_REQUIRED, POLICY_TERM, TERMS_UNVERIFIED)
# Consequences that make a proposal a staff review task.
REVIEW_KINDS = frozenset({REVIEW_REQUIRED, TERMS_UNVERIFIED})

# ConfirmProposal results (besides CONFIRMED and SLOT_NO_LONGER_AVAILABLE above).
APPOINTMENT_CHANGED = "appointment_changed"

# Action events: the evidence of every workflow step, delivered to the trace service.
EVENT_PROPOSED = "proposed"
EVENT_CONFIRMED = "confirmed"
EVENT_REJECTED = "rejected"
EVENT_EXPIRED = "expired"
EVENT_FAILED = "failed"
EVENT_SLOT_CONFIRMED = "slot_confirmed"


@dataclasses.dataclass(frozen=True)
class AppointmentRecord:
    appointment_id: str
    patient_ref: str
    status: str  # one of APPOINTMENT_STATUSES
    version: int
    slot: SlotRecord  # the slot it occupies (or occupied)
    updated_at: dt.datetime

    @property
    def start(self) -> dt.datetime:
        return self.slot.start


@dataclasses.dataclass(frozen=True)
class AppointmentQuery:
    """A scoped appointment query, validated by the core: the store applies it literally."""

    tenant_id: str
    location_ids: frozenset[str] | None  # None: every location of the tenant
    patient_ref: str | None  # None: every patient (staff only)
    statuses: tuple[str, ...]
    specialty: str | None
    starts_after: dt.datetime | None
    cursor: tuple[dt.datetime, str] | None  # keyset: (start, appointment_id)
    limit: int


@dataclasses.dataclass(frozen=True)
class Consequence:
    """A policy consequence as the orchestrator derived it. `citations` are kept as given (the
    gateway does not interpret evidence; the validator already checked it)."""

    kind: str  # one of CONSEQUENCE_KINDS
    text: str
    citations: tuple[dict, ...] = ()
    support: str = ""
    explanation: str = ""
    part_id: str = ""


@dataclasses.dataclass(frozen=True)
class SlotChoice:
    slot_id: str
    expected_version: int


@dataclasses.dataclass(frozen=True)
class NewProposal:
    """A validated ProposeChange, with the live reads it was checked against."""

    tenant_id: str
    proposal_id: str
    kind: str
    patient_ref: str
    appointment: AppointmentRecord | None
    options: tuple[SlotRecord, ...]
    consequences: tuple[Consequence, ...]
    review_required: bool
    review_reason: str
    created_at: dt.datetime
    expires_at: dt.datetime
    created_by_ref: str
    ask_trace_id: str
    consequence_rules_version: str
    policy_version_ids: tuple[str, ...]
    location_ids: frozenset[str]


@dataclasses.dataclass(frozen=True)
class ProposalRecord:
    tenant_id: str
    proposal_id: str
    kind: str
    status: str
    patient_ref: str
    appointment: AppointmentRecord | None  # as read when proposed
    options: tuple[SlotRecord, ...]  # as read when proposed
    consequences: tuple[Consequence, ...]
    review_required: bool
    review_reason: str
    created_at: dt.datetime
    expires_at: dt.datetime
    created_by_ref: str
    ask_trace_id: str
    consequence_rules_version: str
    policy_version_ids: tuple[str, ...]
    location_ids: frozenset[str]
    version: int = 1
    decided_at: dt.datetime | None = None
    decided_by_ref: str = ""
    chosen_slot_id: str = ""
    result_appointment_id: str = ""
    outcome_reason: str = ""
    decision_note: str = ""

    def option(self, slot_id: str) -> SlotRecord | None:
        return next((o for o in self.options if o.slot_id == slot_id), None)


@dataclasses.dataclass(frozen=True)
class ProposalQuery:
    tenant_id: str
    location_ids: frozenset[str] | None
    patient_ref: str | None
    statuses: tuple[str, ...]
    review_required_only: bool
    before: tuple[dt.datetime, str] | None  # keyset, newest first: (created_at, proposal_id)
    limit: int


@dataclasses.dataclass(frozen=True)
class ProposalOutcome:
    """What ConfirmProposal did: CONFIRMED, SLOT_NO_LONGER_AVAILABLE or APPOINTMENT_CHANGED."""

    result: str
    proposal: ProposalRecord
    appointment: AppointmentRecord | None = None
    slot: SlotRecord | None = None


@dataclasses.dataclass(frozen=True)
class Decision:
    """Who decides a proposal, and how (ConfirmProposal / RejectProposal)."""

    tenant_id: str
    proposal_id: str
    actor_ref: str
    now: dt.datetime
    slot_id: str = ""
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Idempotency:
    """An idempotency key of a write: the key, the operation, and the request's fingerprint."""

    key: str
    operation: str
    fingerprint: str


@dataclasses.dataclass(frozen=True)
class PendingEvent:
    """An action event waiting in the outbox for delivery to the trace service."""

    id: int
    tenant_id: str
    event_id: str
    payload: dict
    attempts: int
