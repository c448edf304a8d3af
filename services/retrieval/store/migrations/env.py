"""Alembic environment of the retrieval store. Run programmatically by Store.migrate() with an open
connection in config.attributes["connection"]; no alembic.ini is needed."""

from __future__ import annotations

from alembic import context

from services.retrieval.store.models import VERSION_TABLE

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None, version_table=VERSION_TABLE)
with context.begin_transaction():
    context.run_migrations()
