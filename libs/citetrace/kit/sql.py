"""The one way a service opens its SQL store: SQLAlchemy engines for SQLite (the default under the data
dir) and PostgreSQL (production), and schema migrations under a lock, so replicas starting together
on one database never migrate at the same time.

SQLite is set up for concurrent use by threads and processes: WAL, foreign keys, a busy timeout,
and a chosen way of beginning transactions (`SqliteBegin`); PostgreSQL gets a pre-pinged pool."""

from __future__ import annotations

import contextlib
import enum
import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

# Execution option that marks a connection as about to write (SqliteBegin.IMMEDIATE_FOR_WRITES).
WRITE = {"citetrace_write": True}


class SqliteBegin(enum.Enum):
    """How a SQLite transaction begins (the pysqlite transaction recipe when not DRIVER)."""

    # pysqlite's own: a deferred BEGIN before the first write, reads outside a transaction.
    DRIVER = "driver"
    # Every transaction takes the write lock first: one writer at a time, so a writer never reads a
    # snapshot that another writer changes under it (the trace chain cannot fork).
    IMMEDIATE = "immediate"
    # BEGIN for reads; BEGIN IMMEDIATE on connections with the WRITE execution option.
    IMMEDIATE_FOR_WRITES = "immediate_for_writes"


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def make_engine(url: str, *, sqlite_begin: SqliteBegin = SqliteBegin.DRIVER, sqlite_synchronous: str = "FULL",
                pool_size: int = 5, max_overflow: int = 10) -> Engine:
    """An engine for `url`. SQLite: the file's folder is created; `sqlite_synchronous` FULL makes a
    commit survive power loss, NORMAL (in WAL) only a process crash."""
    if sqlite_synchronous not in ("FULL", "NORMAL"):
        raise ValueError("sqlite_synchronous must be FULL or NORMAL")
    if not url.startswith("sqlite"):
        return sa.create_engine(url, pool_pre_ping=True, pool_size=pool_size, max_overflow=max_overflow)
    database = sa.engine.make_url(url).database
    in_memory = database in (None, "", ":memory:")
    if not in_memory:
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        if sqlite_begin is not SqliteBegin.DRIVER:
            dbapi_connection.isolation_level = None  # transactions are begun by the "begin" event below
        cursor = dbapi_connection.cursor()
        if not in_memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={sqlite_synchronous}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    if sqlite_begin is not SqliteBegin.DRIVER:
        @event.listens_for(engine, "begin")
        def _on_begin(connection):
            immediate = sqlite_begin is SqliteBegin.IMMEDIATE or \
                connection.get_execution_options().get("citetrace_write", False)
            connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


# Alembic's migration context is process-global: one migration at a time per process.
_PROCESS_LOCK = threading.RLock()


def due_in_tenant_order(table: sa.Table, now) -> sa.Select:
    """The due rows of a table outbox (kit.relay.TableOutbox: columns id, tenant_id, next_attempt_at,
    delivered_at), oldest first: a pending row is due when neither it nor an earlier pending row of
    its tenant still waits out a backoff, so a tenant's events are delivered in the order written."""
    earlier = table.alias("earlier")
    waiting = sa.exists().where(earlier.c.tenant_id == table.c.tenant_id, earlier.c.delivered_at.is_(None),
                                earlier.c.id <= table.c.id, earlier.c.next_attempt_at > now)
    return sa.select(table).where(table.c.delivered_at.is_(None), ~waiting).order_by(table.c.id)


def lock_id(name: str) -> int:
    """A stable PostgreSQL advisory-lock key for a store's name (signed 64-bit)."""
    return int.from_bytes(hashlib.sha256(f"citetrace-migrate:{name}".encode()).digest()[:8], "big", signed=True)


@contextlib.contextmanager
def migration_lock(engine: Engine, name: str) -> Iterator[Connection]:
    """A connection holding the store's migration lock until the block ends (after its commits):
    on PostgreSQL a session advisory lock, so one replica migrates and the others wait and then find
    nothing to do; on SQLite the write transaction of the migration itself serializes them."""
    with _PROCESS_LOCK, engine.connect() as conn:
        postgres = engine.dialect.name == "postgresql"
        if postgres:
            conn.exec_driver_sql(f"SELECT pg_advisory_lock({lock_id(name)})")
            conn.commit()
        try:
            yield conn
        finally:
            if postgres:
                conn.rollback()
                conn.exec_driver_sql(f"SELECT pg_advisory_unlock({lock_id(name)})")
                conn.commit()


def alembic_upgrade(engine: Engine, name: str, script_location: Path) -> None:
    """Brings the store's schema to the newest Alembic migration (idempotent), under the migration lock.
    The env.py of `script_location` reads the open connection from config.attributes["connection"]
    (and names its own version table)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(script_location))
    with migration_lock(engine, name) as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
        conn.commit()


def run_alembic_env(context, version_table: str) -> None:
    """The body of a store's Alembic env.py: migrate on the connection alembic_upgrade() passes in
    config.attributes["connection"] (transactional DDL, the store's own version table), or, from the
    `alembic` command line, on an engine for the configured sqlalchemy.url."""
    connection = context.config.attributes.get("connection")
    if connection is None:  # pragma: no cover - only via `alembic` command line with a URL
        engine = sa.create_engine(context.config.get_main_option("sqlalchemy.url"))
        with engine.begin() as conn:
            context.configure(connection=conn, version_table=version_table)
            context.run_migrations()
    else:
        context.configure(connection=connection, version_table=version_table, transactional_ddl=True)
        with context.begin_transaction():
            context.run_migrations()
