"""A tiny in-memory SlotSource: the adapter interface's second implementation (tests, demos, and
the model for a FHIR Slot-search adapter). Same semantics as the SQL source: tenant-scoped,
(start, slot_id) order, compare-and-set confirmation under a lock."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import uuid
from collections.abc import Iterable, Sequence

from citetrace.kit.errors import AlreadyExists

from services.scheduler_gateway.domain import (
    BUSY,
    CONFIRMED,
    FREE,
    SLOT_NO_LONGER_AVAILABLE,
    SLOT_NOT_FOUND,
    ConfirmOutcome,
    Idempotency,
    LocationRecord,
    SlotQuery,
    SlotRecord,
    TenantCatalog,
)


class InMemorySlotSource:
    def __init__(
        self,
        locations: dict[str, Iterable[LocationRecord]],
        slots: dict[str, Iterable[SlotRecord]],
        providers: dict[str, Iterable[str]] | None = None,
    ) -> None:
        self._locations = {tenant: {loc.location_id: loc for loc in locs} for tenant, locs in locations.items()}
        self._slots = {tenant: {slot.slot_id: slot for slot in items} for tenant, items in slots.items()}
        self._providers = {tenant: frozenset(ids) for tenant, ids in (providers or {}).items()}
        self._lock = threading.Lock()
        self.appointments: dict[str, list[tuple[str, str]]] = {}  # tenant -> [(slot_id, patient_ref)]
        # (tenant, idempotency key) -> (fingerprint, original outcome)
        self._results: dict[tuple[str, str], tuple[str, ConfirmOutcome]] = {}

    def warm_up(self) -> None:
        pass

    def close(self) -> None:
        pass

    def catalog(self, tenant_id: str) -> TenantCatalog:
        locations = self._locations.get(tenant_id, {}).values()
        return TenantCatalog(
            specialties=frozenset(s for loc in locations for s in loc.specialties),
            location_ids=frozenset(loc.location_id for loc in locations),
            provider_ids=self._providers.get(tenant_id, frozenset()),
            appointment_types=frozenset(t for loc in locations for t in loc.appointment_types),
        )

    def find_free_slots(self, query: SlotQuery) -> list[SlotRecord]:
        with self._lock:
            candidates = list(self._slots.get(query.tenant_id, {}).values())
        out = [
            slot for slot in candidates
            if slot.status == FREE
            and slot.specialty == query.specialty
            and (query.location_ids is None or slot.location_id in query.location_ids)
            and (not query.provider_id or slot.provider_id == query.provider_id)
            and (not query.appointment_type or slot.appointment_type == query.appointment_type)
            and query.start <= slot.start < query.end
            and slot.start > query.after
            and (query.cursor is None or (slot.start, slot.slot_id) > query.cursor)
        ]
        out.sort(key=lambda slot: (slot.start, slot.slot_id))
        return out[: query.limit]

    def confirm(self, tenant_id: str, location_ids: frozenset[str] | None, slot_id: str,
                expected_version: int, patient_ref: str, now: dt.datetime,
                idempotency: Idempotency | None = None, actor_ref: str = "") -> ConfirmOutcome:
        with self._lock:
            if idempotency is not None:
                prior = self._results.get((tenant_id, idempotency.key))
                if prior is not None:
                    if prior[0] != idempotency.fingerprint:
                        raise AlreadyExists("IDEMPOTENCY_KEY_REUSED",
                                            f"idempotency key {idempotency.key!r} was already used for a different "
                                            "request; use a new key for a new request", field="idempotency_key")
                    return prior[1]
            outcome = self._confirm(tenant_id, location_ids, slot_id, expected_version, patient_ref, now)
            if idempotency is not None and outcome.result != SLOT_NOT_FOUND:
                self._results[(tenant_id, idempotency.key)] = (idempotency.fingerprint, outcome)
            return outcome

    def _confirm(self, tenant_id: str, location_ids: frozenset[str] | None, slot_id: str,
                 expected_version: int, patient_ref: str, now: dt.datetime) -> ConfirmOutcome:
        # Called under self._lock.
        slot = self._slots.get(tenant_id, {}).get(slot_id)
        if slot is None or (location_ids is not None and slot.location_id not in location_ids):
            return ConfirmOutcome(SLOT_NOT_FOUND)
        if slot.version != expected_version or slot.status != FREE or slot.start <= now:
            return ConfirmOutcome(SLOT_NO_LONGER_AVAILABLE, slot)
        booked = dataclasses.replace(slot, status=BUSY, version=slot.version + 1)
        self._slots[tenant_id][slot_id] = booked
        self.appointments.setdefault(tenant_id, []).append((slot_id, patient_ref))
        return ConfirmOutcome(CONFIRMED, booked, f"appt-{uuid.uuid4().hex}")

    def list_locations(self, tenant_id: str, location_ids: frozenset[str] | None, after_id: str | None,
                       limit: int) -> Sequence[LocationRecord]:
        rows = sorted(self._locations.get(tenant_id, {}).values(), key=lambda loc: loc.location_id)
        rows = [loc for loc in rows if (location_ids is None or loc.location_id in location_ids)
                and (after_id is None or loc.location_id > after_id)]
        return rows[:limit]
