"""SlotSource over the SQL system of record (SQLite or PostgreSQL through SQLAlchemy)."""

from __future__ import annotations

import datetime as dt
import functools
import logging
import uuid
from collections.abc import Callable, Sequence

from citetrace.kit.errors import Unavailable
from sqlalchemy import Engine, and_, func, literal, or_, select, union_all, update
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from services.scheduler_gateway import codec
from services.scheduler_gateway import schema as s
from services.scheduler_gateway.domain import (
    APPOINTMENT_BOOKED,
    BUSY,
    CONFIRMED,
    EVENT_SLOT_CONFIRMED,
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
from services.scheduler_gateway.sql_tx import Completed, append_event, idempotent_write

log = logging.getLogger("citetrace.scheduler_gateway")


def unavailable_on_db_error(method):
    """A database that cannot be reached (or a lock or pooled connection that cannot be had in
    time) is UNAVAILABLE with a reason the orchestrator turns into SOURCE_UNAVAILABLE. Anything
    else (a bug) stays INTERNAL."""

    @functools.wraps(method)
    def wrapped(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (OperationalError, InterfaceError, PoolTimeout) as exc:
            log.warning("scheduling database error in %s: %s", method.__name__, exc.__class__.__name__)
            raise Unavailable(
                "SCHEDULING_DB_UNAVAILABLE", "the scheduling system of record cannot be read right now; retry later"
            ) from exc

    return wrapped


class SqlSlotSource:
    def __init__(self, database_url: str, *, before_commit: Callable[[], None] | None = None) -> None:
        """`before_commit` (tests only) runs inside every scheduling write just before its deadline
        check and commit (sql_tx.idempotent_write): a slowed commit."""
        self.database_url = database_url
        self.before_commit = before_commit
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise RuntimeError("SqlSlotSource used before warm_up()")
        return self._engine

    def warm_up(self) -> None:
        if self._engine is None:
            engine = s.make_engine(self.database_url)
            s.ensure_schema(engine)
            self._engine = engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    # -- reads ---------------------------------------------------------------------------------

    @unavailable_on_db_error
    def catalog(self, tenant_id: str) -> TenantCatalog:
        """The tenant's names in one round trip."""
        parts = [
            select(literal(kind).label("kind"), column.label("value")).where(table.c.tenant_id == tenant_id)
            for kind, table, column in (
                ("specialty", s.specialties, s.specialties.c.specialty_id),
                ("location", s.locations, s.locations.c.location_id),
                ("provider", s.providers, s.providers.c.provider_id),
                ("type", s.appointment_types, s.appointment_types.c.appointment_type_id),
            )
        ]
        found: dict[str, set[str]] = {"specialty": set(), "location": set(), "provider": set(), "type": set()}
        with self.engine.connect() as conn:
            for kind, value in conn.execute(union_all(*parts)):
                found[kind].add(value)
        return TenantCatalog(
            specialties=frozenset(found["specialty"]),
            location_ids=frozenset(found["location"]),
            provider_ids=frozenset(found["provider"]),
            appointment_types=frozenset(found["type"]),
        )

    def slot_select(self):
        """The slot with its location, clinic and provider (built once: statements are immutable)."""
        return _SLOT_SELECT

    @staticmethod
    def _build_slot_select():
        sl, sc, lo, cl, pr = s.slots, s.schedules, s.locations, s.clinics, s.providers
        return (
            select(
                sl.c.slot_id, sl.c.version, lo.c.location_id, lo.c.name.label("location_name"),
                cl.c.name.label("clinic_name"), lo.c.time_zone, sc.c.provider_id,
                pr.c.name.label("provider_name"), sl.c.specialty_id, sl.c.appointment_type_id,
                sl.c.start_time, sl.c.end_time, sl.c.status,
            )
            .select_from(sl)
            .join(sc, and_(sc.c.tenant_id == sl.c.tenant_id, sc.c.schedule_id == sl.c.schedule_id))
            .join(lo, and_(lo.c.tenant_id == sc.c.tenant_id, lo.c.location_id == sc.c.location_id))
            .join(cl, and_(cl.c.tenant_id == lo.c.tenant_id, cl.c.clinic_id == lo.c.clinic_id))
            .outerjoin(pr, and_(pr.c.tenant_id == sc.c.tenant_id, pr.c.provider_id == sc.c.provider_id))
        )

    @unavailable_on_db_error
    def find_free_slots(self, query: SlotQuery) -> list[SlotRecord]:
        sl, sc = s.slots, s.schedules
        stmt = self.slot_select().where(
            sl.c.tenant_id == query.tenant_id,
            sl.c.specialty_id == query.specialty,
            sl.c.status == FREE,
            sl.c.start_time >= query.start,
            sl.c.start_time < query.end,
            sl.c.start_time > query.after,
        )
        if query.location_ids is not None:
            if not query.location_ids:
                return []
            stmt = stmt.where(sc.c.location_id.in_(sorted(query.location_ids)))
        if query.provider_id:
            stmt = stmt.where(sc.c.provider_id == query.provider_id)
        if query.appointment_type:
            stmt = stmt.where(sl.c.appointment_type_id == query.appointment_type)
        if query.cursor is not None:
            start, slot_id = query.cursor
            stmt = stmt.where(or_(sl.c.start_time > start, and_(sl.c.start_time == start, sl.c.slot_id > slot_id)))
        stmt = stmt.order_by(sl.c.start_time, sl.c.slot_id).limit(query.limit)
        with self.engine.connect() as conn:
            return [slot_from_row(row) for row in conn.execute(stmt)]

    @unavailable_on_db_error
    def list_locations(
        self, tenant_id: str, location_ids: frozenset[str] | None, after_id: str | None, limit: int
    ) -> Sequence[LocationRecord]:
        lo, cl = s.locations, s.clinics
        stmt = (
            select(lo.c.location_id, lo.c.name, cl.c.name.label("clinic_name"), lo.c.time_zone, lo.c.aliases)
            .join(cl, and_(cl.c.tenant_id == lo.c.tenant_id, cl.c.clinic_id == lo.c.clinic_id))
            .where(lo.c.tenant_id == tenant_id)
            .order_by(lo.c.location_id)
            .limit(limit)
        )
        if location_ids is not None:
            if not location_ids:
                return []
            stmt = stmt.where(lo.c.location_id.in_(sorted(location_ids)))
        if after_id:
            stmt = stmt.where(lo.c.location_id > after_id)
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
            ids = [row.location_id for row in rows]
            specs = _grouped(conn, s.location_specialties, s.location_specialties.c.specialty_id, tenant_id, ids)
            types = _grouped(
                conn, s.location_appointment_types, s.location_appointment_types.c.appointment_type_id, tenant_id, ids
            )
        return [
            LocationRecord(
                location_id=row.location_id,
                name=row.name,
                clinic_name=row.clinic_name,
                time_zone=row.time_zone,
                specialties=tuple(specs.get(row.location_id, ())),
                appointment_types=tuple(types.get(row.location_id, ())),
                aliases=tuple(row.aliases or ()),
            )
            for row in rows
        ]

    # -- the direct booking (proposals are in sql_workflow.py) -------------------------------------

    @unavailable_on_db_error
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
        sl, sc = s.slots, s.schedules
        in_scope = select(sc.c.schedule_id).where(sc.c.tenant_id == tenant_id)
        if location_ids is not None:
            in_scope = in_scope.where(sc.c.location_id.in_(sorted(location_ids)))
        scoped = and_(sl.c.tenant_id == tenant_id, sl.c.slot_id == slot_id, sl.c.schedule_id.in_(in_scope))
        # On PostgreSQL a concurrent updater waits for the row lock and then re-evaluates the WHERE
        # clause against the new row (0 rows); on SQLite BEGIN IMMEDIATE serializes writers.
        claim = (
            update(sl)
            .where(scoped, sl.c.version == expected_version, sl.c.status == FREE, sl.c.start_time > now)
            .values(status=BUSY, version=sl.c.version + 1, updated_at=now)
        )

        def work(conn) -> Completed[ConfirmOutcome]:
            won = conn.execute(claim).rowcount == 1
            appointment_id = ""
            if won:
                appointment_id = f"appt-{uuid.uuid4().hex}"
                conn.execute(s.appointments.insert().values(
                    tenant_id=tenant_id, appointment_id=appointment_id, slot_id=slot_id, patient_ref=patient_ref,
                    status=APPOINTMENT_BOOKED, created_at=now, version=1, updated_at=now))
            row = conn.execute(self.slot_select().where(scoped)).first()
            if row is None:
                outcome = ConfirmOutcome(SLOT_NOT_FOUND)
            elif won:
                outcome = ConfirmOutcome(CONFIRMED, slot_from_row(row), appointment_id)
                append_event(conn, tenant_id, {
                    "kind": EVENT_SLOT_CONFIRMED, "actor_ref": actor_ref, "occurred_at": codec.time_to_json(now),
                    "appointment_id": appointment_id, "patient_ref": patient_ref,
                    "slot": codec.slot_to_json(outcome.slot), "expected_version": expected_version}, now)
            else:
                outcome = ConfirmOutcome(SLOT_NO_LONGER_AVAILABLE, slot_from_row(row))
            return Completed(outcome, codec.confirm_outcome_to_json(outcome))

        try:
            return idempotent_write(self.engine, tenant_id, idempotency, now, work, codec.confirm_outcome_from_json,
                                    self.before_commit)
        except IntegrityError:
            # Only reachable if the slot was booked outside the version protocol: still no double booking.
            with self.engine.connect() as conn:
                row = conn.execute(self.slot_select().where(scoped)).first()
            return ConfirmOutcome(SLOT_NOT_FOUND) if row is None else ConfirmOutcome(SLOT_NO_LONGER_AVAILABLE,
                                                                                     slot_from_row(row))

    def count_appointments(self, tenant_id: str, slot_id: str) -> int:
        """For operators and tests: booked appointments of one slot (never more than one)."""
        with self.engine.connect() as conn:
            return conn.execute(
                select(func.count()).select_from(s.appointments).where(
                    s.appointments.c.tenant_id == tenant_id, s.appointments.c.slot_id == slot_id,
                    s.appointments.c.status == APPOINTMENT_BOOKED,
                )
            ).scalar_one()


def _grouped(conn, table, column, tenant_id: str, location_ids: list[str]) -> dict[str, list[str]]:
    if not location_ids:
        return {}
    out: dict[str, list[str]] = {}
    rows = conn.execute(
        select(table.c.location_id, column)
        .where(table.c.tenant_id == tenant_id, table.c.location_id.in_(location_ids))
        .order_by(table.c.location_id, column)
    )
    for location_id, value in rows:
        out.setdefault(location_id, []).append(value)
    return out


_SLOT_SELECT = SqlSlotSource._build_slot_select()


def slot_from_row(row) -> SlotRecord:
    return SlotRecord(
        slot_id=row.slot_id,
        version=int(row.version),
        location_id=row.location_id,
        location_name=row.location_name,
        clinic_name=row.clinic_name,
        time_zone=row.time_zone,
        provider_id=row.provider_id or "",
        provider_name=row.provider_name or "",
        specialty=row.specialty_id,
        appointment_type=row.appointment_type_id,
        start=row.start_time,
        end=row.end_time,
        status=row.status,
    )
