"""Chain links: events that are links of the per-tenant hash chain without being an Ask's record
(first kind: workflow actions from the scheduler-gateway). They share the chain's sequence with
the records; append-only like them.

Revision ID: 0002_chain_links
Revises: 0001_initial
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_chain_links"
down_revision = "0001_initial"
branch_labels = None
depends_on = None

TABLE = "trace_chain_links"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("link_id", sa.String(128), primary_key=True),
        sa.Column("sequence", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("subject_trace_id", sa.String(128), nullable=False),
        sa.Column("subject_ref", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("body", sa.LargeBinary, nullable=False),
        sa.Column("previous_hash", sa.String(64), nullable=False),
        sa.Column("link_hash", sa.String(64), nullable=False),
    )
    op.create_index("ux_trace_chain_links_sequence", TABLE, ["tenant_id", "sequence"], unique=True)
    op.create_index("ix_trace_chain_links_subject", TABLE, ["tenant_id", "subject_trace_id", "sequence"])
    op.create_index("ix_trace_chain_links_ref", TABLE, ["tenant_id", "subject_ref", "sequence"])
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(f"CREATE TRIGGER {TABLE}_append_only BEFORE UPDATE OR DELETE ON {TABLE} "
                   "FOR EACH ROW EXECUTE FUNCTION trace_reject_change()")
        op.execute(f"CREATE TRIGGER {TABLE}_no_truncate BEFORE TRUNCATE ON {TABLE} "
                   "FOR EACH STATEMENT EXECUTE FUNCTION trace_reject_change()")
    elif dialect == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(f"CREATE TRIGGER {TABLE}_no_{action.lower()} BEFORE {action} ON {TABLE} "
                       f"BEGIN SELECT RAISE(ABORT, 'citetrace trace store is append-only: {action} on "
                       f"{TABLE} is not allowed'); END")


def downgrade() -> None:  # the evidence record is never dropped by a migration
    raise RuntimeError("the trace store does not support downgrades")
