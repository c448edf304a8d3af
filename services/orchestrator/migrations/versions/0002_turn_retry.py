"""A turn's retry continues from the turn before it (issue 21 §3): the idempotency key of the turn that
last moved a conversation, and the conversation as it was before that turn.

An Ask that moved the conversation on and then failed to secure its evidence record (withheld:
TRACE_NOT_RECORDED) or died (a killed replica) is retried by its client under the same key; the
retry must bind to the question that was pending before the failed attempt, not to the state that
attempt left.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("orch_conversations") as batch:
        batch.add_column(sa.Column("turn_key", sa.String(256), nullable=False, server_default=""))
        batch.add_column(sa.Column("prior_turns", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("prior_trace_id", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("prior_pending", sa.Text, nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("orch_conversations") as batch:
        for name in ("prior_pending", "prior_trace_id", "prior_turns", "turn_key"):
            batch.drop_column(name)
