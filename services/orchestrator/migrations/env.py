"""Alembic environment of the orchestrator conversation store. Run through services.orchestrator.conversations.ConversationStore, which passes
an open connection in config.attributes["connection"]."""

from __future__ import annotations

from alembic import context

VERSION_TABLE = "orch_alembic_version"

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only via `alembic` command line with a URL
    from sqlalchemy import create_engine

    engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
    with engine.begin() as conn:
        context.configure(connection=conn, version_table=VERSION_TABLE)
        context.run_migrations()
else:
    context.configure(connection=connection, version_table=VERSION_TABLE, transactional_ddl=True)
    with context.begin_transaction():
        context.run_migrations()
