"""Outbox of version events (superseded, retired) for the trace service.

Written in the same transaction as the status or validity change that causes the event and
delivered in the background (services/retrieval/version_events.py); a delivered row keeps its
delivered_at (the outbox doubles as the log of what was told to trace).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ret_version_events_outbox",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("version_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("replaced_by_version_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=False),
    )
    op.create_index("ix_ret_version_events_outbox_pending", "ret_version_events_outbox",
                    ["delivered_at", "next_attempt_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_ret_version_events_outbox_pending", table_name="ret_version_events_outbox")
    op.drop_table("ret_version_events_outbox")
