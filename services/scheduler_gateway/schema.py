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

from sqlalchemy import (
    JSON,
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
    create_engine,
    event,
    inspect,
    select,
)
from sqlalchemy.types import TypeDecorator

from services.scheduler_gateway.domain import SLOT_STATUSES, UTC

SCHEMA_VERSION = 1
SQLITE_FILE = "scheduler.sqlite3"

# Steps from version N to N+1, applied in order inside one transaction each.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {}


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

# An appointment books a slot; the unique slot key is a second guard against double booking.
appointments = Table(
    "appointments",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("appointment_id", ID, primary_key=True),
    Column("slot_id", ID, nullable=False),
    Column("patient_ref", String(256), nullable=False),
    Column("status", String(32), nullable=False),  # FHIR Appointment.status: booked
    Column("created_at", UTCDateTime, nullable=False),
    ForeignKeyConstraint(["tenant_id", "slot_id"], ["slots.tenant_id", "slots.slot_id"]),
    Index("ux_appointments_slot", "tenant_id", "slot_id", unique=True),
)

# Child tables first: the order in which a tenant's rows are deleted.
TENANT_TABLES = (
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


def default_database_url(data_dir: Path) -> str:
    return f"sqlite:///{(Path(data_dir) / SQLITE_FILE).resolve()}"


WRITE = {"scheduler_write": True}


def make_engine(url: str) -> Engine:
    """An engine with SQLite set up for concurrent use: WAL, foreign keys, a busy timeout, and
    explicit BEGIN (read) / BEGIN IMMEDIATE (write, via execution option `scheduler_write`) so a
    writer takes the write lock before reading and never fails on a stale snapshot."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection, _record):
            dbapi_connection.isolation_level = None  # transactions are begun below
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            if ":memory:" not in url:
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(connection):
            write = connection.get_execution_options().get("scheduler_write", False)
            connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine
    return create_engine(url, pool_pre_ping=True)


def ensure_schema(engine: Engine) -> int:
    """Creates or upgrades the schema; returns the version now in place."""
    if engine.url.get_backend_name() == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        Path(engine.url.database).parent.mkdir(parents=True, exist_ok=True)
    with engine.connect().execution_options(**WRITE) as conn, conn.begin():
        if conn.dialect.name == "postgresql":
            # Replicas starting together on a fresh database: one creates, the others wait.
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(5053005053)")
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
