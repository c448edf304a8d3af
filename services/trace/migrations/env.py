"""Alembic environment of the trace store. Run through services.trace.store.migrate(), which passes
an open connection in config.attributes["connection"]."""

from __future__ import annotations

from alembic import context
from citetrace.kit.sql import run_alembic_env

VERSION_TABLE = "trace_alembic_version"

run_alembic_env(context, VERSION_TABLE)
