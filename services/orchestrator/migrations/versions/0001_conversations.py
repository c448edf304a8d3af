"""Conversation envelopes (issue 14): a pending clarification and its entities, per tenant and
principal, short-lived.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "orch_conversations",
        sa.Column("conversation_id", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("principal_ref", sa.String(256), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("turns", sa.Integer, nullable=False),
        sa.Column("last_trace_id", sa.String(64), nullable=False),
        sa.Column("pending", sa.Text, nullable=False),
    )
    op.create_index("orch_conversations_expiry", "orch_conversations", ["expires_at"])


def downgrade() -> None:
    op.drop_table("orch_conversations")
