"""Signed version statements (issue 16): the signature columns of ret_versions.

Rows stored before this migration have no signature and are refused by every read until a
policy_admin adopts them (re-ingesting the same file, or `citetrace index resign --adopt-unsigned`),
because a database writer could have inserted them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = (
    ("seal_revision", sa.Integer()),
    ("seal_transition", sa.String(128)),
    ("sealed_at", sa.DateTime(timezone=True)),
    ("passages_sha256", sa.String(64)),
    ("signing_key_id", sa.String(64)),
    ("signature", sa.Text()),
)


def upgrade() -> None:
    for name, type_ in COLUMNS:  # ADD COLUMN on both dialects (no table rebuild on SQLite)
        op.add_column("ret_versions", sa.Column(name, type_, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ret_versions") as batch:
        for name, _ in COLUMNS:
            batch.drop_column(name)
