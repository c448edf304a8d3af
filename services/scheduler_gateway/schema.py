"""The scheduling system of record: SQLAlchemy 2.0 tables (SQLite default, PostgreSQL supported)
and a versioned create.

Every table is keyed by (tenant_id, <id>) so IDs only need to be unique within a tenant and no
query can reach another tenant's rows without naming that tenant. Times are stored as naive UTC
(the `UTCDateTime` type converts at the boundary) so SQLite and PostgreSQL behave the same.

Schema versions: `scheduler_schema_version` holds the applied version. `ensure_schema` creates a
fresh database at SCHEMA_VERSION, applies the steps in MIGRATIONS to an older one, and refuses a
database newer than this code.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from citetrace.kit import sql as kit_sql
from citetrace.kit.sql import WRITE, SqliteBegin
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Connection,
    DateTime,
    Engine,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    inspect,
    select,
    text,
)
from sqlalchemy.types import TypeDecorator

from services.scheduler_gateway.domain import SLOT_STATUSES, UTC

SCHEMA_VERSION = 2
SQLITE_FILE = "scheduler.sqlite3"


class UTCDateTime(TypeDecorator):
    """Aware UTC datetimes in Python, naive UTC in the database."""

    impl = DateTime(timezone=False)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        return value.replace(tzinfo=UTC)


metadata = MetaData()
ID = String(128)

schema_version = Table(
    "scheduler_schema_version",
    metadata,
    Column("version", Integer, primary_key=True),
    Column("applied_at", UTCDateTime, nullable=False),
)

tenants = Table(
    "tenants",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("name", String(256), nullable=False),
    Column("time_zone", String(64), nullable=False),
)

clinics = Table(
    "clinics",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("clinic_id", ID, primary_key=True),
    Column("name", String(256), nullable=False),
    ForeignKeyConstraint(["tenant_id"], ["tenants.tenant_id"]),
)

locations = Table(
    "locations",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("location_id", ID, primary_key=True),
    Column("clinic_id", ID, nullable=False),
    Column("name", String(256), nullable=False),
    Column("time_zone", String(64), nullable=False),
    Column("aliases", JSON, nullable=False, default=list),
    ForeignKeyConstraint(["tenant_id", "clinic_id"], ["clinics.tenant_id", "clinics.clinic_id"]),
)

specialties = Table(
    "specialties",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("specialty_id", ID, primary_key=True),
    Column("name", String(256), nullable=False),
    ForeignKeyConstraint(["tenant_id"], ["tenants.tenant_id"]),
)

appointment_types = Table(
    "appointment_types",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("appointment_type_id", ID, primary_key=True),
    Column("name", String(256), nullable=False),
    ForeignKeyConstraint(["tenant_id"], ["tenants.tenant_id"]),
)

location_specialties = Table(
    "location_specialties",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("location_id", ID, primary_key=True),
    Column("specialty_id", ID, primary_key=True),
    ForeignKeyConstraint(["tenant_id", "location_id"], ["locations.tenant_id", "locations.location_id"]),
    ForeignKeyConstraint(["tenant_id", "specialty_id"], ["specialties.tenant_id", "specialties.specialty_id"]),
)

location_appointment_types = Table(
    "location_appointment_types",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("location_id", ID, primary_key=True),
    Column("appointment_type_id", ID, primary_key=True),
    ForeignKeyConstraint(["tenant_id", "location_id"], ["locations.tenant_id", "locations.location_id"]),
    ForeignKeyConstraint(
        ["tenant_id", "appointment_type_id"],
        ["appointment_types.tenant_id", "appointment_types.appointment_type_id"],
    ),
)

providers = Table(
    "providers",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("provider_id", ID, primary_key=True),
    Column("name", String(256), nullable=False),
    Column("specialty_id", ID, nullable=False),
    ForeignKeyConstraint(["tenant_id", "specialty_id"], ["specialties.tenant_id", "specialties.specialty_id"]),
)

# A FHIR Schedule: the bookable time of one provider (or none, e.g. an imaging room) at one location.
schedules = Table(
    "schedules",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("schedule_id", ID, primary_key=True),
    Column("location_id", ID, nullable=False),
    Column("provider_id", ID, nullable=True),
    Column("specialty_id", ID, nullable=False),
    ForeignKeyConstraint(["tenant_id", "location_id"], ["locations.tenant_id", "locations.location_id"]),
    ForeignKeyConstraint(["tenant_id", "provider_id"], ["providers.tenant_id", "providers.provider_id"]),
    ForeignKeyConstraint(["tenant_id", "specialty_id"], ["specialties.tenant_id", "specialties.specialty_id"]),
)

slots = Table(
    "slots",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("slot_id", ID, primary_key=True),
    Column("schedule_id", ID, nullable=False),
    Column("specialty_id", ID, nullable=False),
    Column("appointment_type_id", ID, nullable=False),
    Column("status", String(32), nullable=False),
    Column("start_time", UTCDateTime, nullable=False),
    Column("end_time", UTCDateTime, nullable=False),
    # Row version for optimistic concurrency: +1 on every change.
    Column("version", Integer, nullable=False, default=1),
    Column("updated_at", UTCDateTime, nullable=False),
    CheckConstraint("end_time > start_time", name="slot_end_after_start"),
    CheckConstraint("version >= 1", name="slot_version_positive"),
    CheckConstraint(
        "status IN (" + ", ".join(f"'{s}'" for s in SLOT_STATUSES) + ")", name="slot_status_fhir"
    ),
    ForeignKeyConstraint(["tenant_id", "schedule_id"], ["schedules.tenant_id", "schedules.schedule_id"]),
    ForeignKeyConstraint(["tenant_id", "specialty_id"], ["specialties.tenant_id", "specialties.specialty_id"]),
    ForeignKeyConstraint(
        ["tenant_id", "appointment_type_id"],
        ["appointment_types.tenant_id", "appointment_types.appointment_type_id"],
    ),
    Index("ix_slots_search", "tenant_id", "specialty_id", "status", "start_time", "slot_id"),
)

# An appointment books a slot; the partial unique index (one *booked* appointment per slot) is a
# second guard against double booking. A cancelled appointment keeps the slot it occupied.
appointments = Table(
    "appointments",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("appointment_id", ID, primary_key=True),
    Column("slot_id", ID, nullable=False),
    Column("patient_ref", String(256), nullable=False),
    Column("status", String(32), nullable=False),  # FHIR Appointment.status
    Column("created_at", UTCDateTime, nullable=False),
    # Row version for optimistic concurrency: +1 on every change (schema 2).
    Column("version", Integer, nullable=False, server_default="1"),
    Column("updated_at", UTCDateTime, nullable=True),  # null only for rows from schema 1
    ForeignKeyConstraint(["tenant_id", "slot_id"], ["slots.tenant_id", "slots.slot_id"]),
    Index("ux_appointments_booked_slot", "tenant_id", "slot_id", unique=True,
          sqlite_where=text("status = 'booked'"), postgresql_where=text("status = 'booked'")),
    Index("ix_appointments_patient", "tenant_id", "patient_ref", "status"),
)

# Proposals: pending changes (workflow state), owned by the gateway because confirming one must
# change slots and appointments in the same transaction.
proposals = Table(
    "proposals",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("proposal_id", ID, primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("patient_ref", String(256), nullable=False),
    Column("appointment_id", ID, nullable=True),
    Column("appointment_version", Integer, nullable=True),
    Column("review_required", Boolean, nullable=False),
    Column("review_reason", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("created_by_ref", String(256), nullable=False),
    Column("ask_trace_id", String(128), nullable=False),
    Column("consequence_rules_version", String(128), nullable=False),
    # The appointment and slots as read when proposed, the consequences, the cited versions.
    Column("detail", JSON, nullable=False),
    Column("version", Integer, nullable=False),
    Column("decided_at", UTCDateTime, nullable=True),
    Column("decided_by_ref", String(256), nullable=False, server_default=""),
    Column("chosen_slot_id", ID, nullable=False, server_default=""),
    Column("result_appointment_id", ID, nullable=False, server_default=""),
    Column("outcome_reason", String(64), nullable=False, server_default=""),
    Column("decision_note", Text, nullable=False, server_default=""),
    CheckConstraint("kind IN ('book', 'reschedule', 'cancel')", name="proposal_kind"),
    CheckConstraint("status IN ('pending', 'confirmed', 'rejected', 'expired', 'failed')", name="proposal_status"),
    Index("ix_proposals_patient", "tenant_id", "patient_ref", "created_at"),
    Index("ix_proposals_status_expiry", "status", "expires_at"),
)

# Every location a proposal touches (the appointment's and the offered slots'): staff see and
# decide a proposal only when all of them are within their scope, checked inside the query.
proposal_locations = Table(
    "proposal_locations",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("proposal_id", ID, primary_key=True),
    Column("location_id", ID, primary_key=True),
    ForeignKeyConstraint(["tenant_id", "proposal_id"], ["proposals.tenant_id", "proposals.proposal_id"]),
)

# Idempotency keys of completed writes (unique per tenant) with the original result.
idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("idempotency_key", String(128), primary_key=True),
    Column("operation", String(64), nullable=False),
    Column("fingerprint", String(64), nullable=False),
    Column("result", JSON, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

# Action events (proposed, confirmed, rejected, expired, failed, slot confirmed), written in the
# transaction of the change and delivered to the trace service by a relay: the evidence of every
# workflow step, never lost when trace is down.
action_events_outbox = Table(
    "action_events_outbox",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("tenant_id", ID, nullable=False),
    Column("event_id", String(64), nullable=False, unique=True),
    Column("payload", JSON, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("next_attempt_at", UTCDateTime, nullable=False),
    Column("delivered_at", UTCDateTime, nullable=True),
    Column("last_error", Text, nullable=False, server_default=""),
    Index("ix_action_events_pending", "delivered_at", "next_attempt_at", "id"),
)

# Child tables first: the order in which a tenant's rows are deleted.
TENANT_TABLES = (
    idempotency_keys,
    proposal_locations,
    proposals,
    appointments,
    slots,
    schedules,
    providers,
    location_appointment_types,
    location_specialties,
    locations,
    clinics,
    appointment_types,
    specialties,
    tenants,
)


def _to_2(conn: Connection) -> None:
    """Schema 1 -> 2: appointment versions and the booked-only slot index; proposals,
    idempotency keys and the action-event outbox."""
    conn.exec_driver_sql("ALTER TABLE appointments ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
    conn.exec_driver_sql("ALTER TABLE appointments ADD COLUMN updated_at " +
                         ("TIMESTAMP" if conn.dialect.name == "postgresql" else "DATETIME"))
    conn.exec_driver_sql("UPDATE appointments SET updated_at = created_at")
    conn.exec_driver_sql("DROP INDEX ux_appointments_slot")
    for index in appointments.indexes:
        index.create(conn)
    for table in (proposals, proposal_locations, idempotency_keys, action_events_outbox):
        table.create(conn)


# Steps from version N to N+1, applied in order inside one transaction each.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _to_2}


def default_database_url(data_dir: Path) -> str:
    return kit_sql.sqlite_url(Path(data_dir) / SQLITE_FILE)


def make_engine(url: str) -> Engine:
    """The scheduling database: reads BEGIN, writes (connections with execution option WRITE) BEGIN
    IMMEDIATE, so a writer takes the write lock before reading and never fails on a stale snapshot."""
    return kit_sql.make_engine(url, sqlite_begin=SqliteBegin.IMMEDIATE_FOR_WRITES)


def ensure_schema(engine: Engine) -> int:
    """Creates or upgrades the schema; returns the version now in place."""
    # Replicas starting together on a fresh database: one creates, the others wait.
    with kit_sql.migration_lock(engine, "scheduler_gateway") as conn, \
            conn.execution_options(**WRITE).begin():
        if not inspect(conn).has_table(schema_version.name):
            metadata.create_all(conn)
            conn.execute(schema_version.insert().values(version=SCHEMA_VERSION, applied_at=dt.datetime.now(UTC)))
            return SCHEMA_VERSION
        current = conn.execute(select(schema_version.c.version).order_by(schema_version.c.version.desc())).scalar()
        current = int(current or 0)
        if current > SCHEMA_VERSION:
            raise RuntimeError(
                f"scheduling database is at schema version {current}, newer than this code ({SCHEMA_VERSION})"
            )
        while current < SCHEMA_VERSION:
            MIGRATIONS[current](conn)
            current += 1
            conn.execute(schema_version.insert().values(version=current, applied_at=dt.datetime.now(UTC)))
        return current
