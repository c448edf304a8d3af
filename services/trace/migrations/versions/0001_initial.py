"""Initial trace store: records (append-only), facets, query text, chain heads, reviews,
version events, redactions; triggers that reject UPDATE/DELETE on the append-only tables.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None

APPEND_ONLY = ("trace_records", "trace_facets", "trace_reviews", "trace_version_events", "trace_redactions")

PG_REJECT = """
CREATE OR REPLACE FUNCTION trace_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'citetrace trace store is append-only: % on % is not allowed', TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'insufficient_privilege';
END $$;
"""

PG_QUERY_REDACTION_ONLY = """
CREATE OR REPLACE FUNCTION trace_queries_redaction_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NOT OLD.redacted AND NEW.redacted AND NEW.raw = '' AND NEW.normalized = ''
     AND NEW.nonce IS NULL AND NEW.tenant_id = OLD.tenant_id AND NEW.trace_id = OLD.trace_id THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'citetrace trace store: % on trace_queries is only allowed as a redaction', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END $$;
"""

SQLITE_QUERY_REDACTION_ONLY = """
CREATE TRIGGER trace_queries_redaction_only BEFORE UPDATE ON trace_queries
WHEN NOT (OLD.redacted = 0 AND NEW.redacted = 1 AND NEW.raw = '' AND NEW.normalized = ''
          AND NEW.nonce IS NULL AND NEW.tenant_id = OLD.tenant_id AND NEW.trace_id = OLD.trace_id)
BEGIN SELECT RAISE(ABORT, 'citetrace trace store: UPDATE on trace_queries is only allowed as a redaction'); END
"""


def upgrade() -> None:
    op.create_table(
        "trace_records",
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("trace_id", sa.String(128), primary_key=True),
        sa.Column("sequence", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("stored_at", sa.DateTime, nullable=False),
        sa.Column("outcome", sa.Integer, nullable=False),
        sa.Column("principal_ref", sa.String(256), nullable=False),
        sa.Column("query_digest", sa.String(64), nullable=False),
        sa.Column("body", sa.LargeBinary, nullable=False),
        sa.Column("previous_hash", sa.String(64), nullable=False),
        sa.Column("record_hash", sa.String(64), nullable=False),
        sa.UniqueConstraint("tenant_id", "sequence", name="uq_trace_records_tenant_sequence"),
    )
    op.create_index("ix_trace_records_tenant_created", "trace_records", ["tenant_id", "created_at"])
    op.create_index("ix_trace_records_tenant_outcome", "trace_records", ["tenant_id", "outcome"])
    op.create_table(
        "trace_facets",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("trace_id", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("value", sa.String(256), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id", "trace_id"], ["trace_records.tenant_id", "trace_records.trace_id"]),
        sa.UniqueConstraint("tenant_id", "trace_id", "kind", "value", name="uq_trace_facets"),
    )
    op.create_index("ix_trace_facets_lookup", "trace_facets", ["tenant_id", "kind", "value"])
    op.create_table(
        "trace_queries",
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("trace_id", sa.String(128), primary_key=True),
        sa.Column("raw", sa.Text, nullable=False),
        sa.Column("normalized", sa.Text, nullable=False),
        sa.Column("nonce", sa.LargeBinary, nullable=True),
        sa.Column("redacted", sa.Boolean, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id", "trace_id"], ["trace_records.tenant_id", "trace_records.trace_id"]),
    )
    op.create_table(
        "trace_chain_heads",
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("sequence", sa.BigInteger, nullable=False),
        sa.Column("record_hash", sa.String(64), nullable=False),
    )
    op.create_table(
        "trace_reviews",
        sa.Column("review_id", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("trace_id", sa.String(128), nullable=False),
        sa.Column("decision", sa.Integer, nullable=False),
        sa.Column("reviewer_ref", sa.String(256), nullable=False),
        sa.Column("rubric_note", sa.Text, nullable=False),
        sa.Column("answer_record_hash", sa.String(64), nullable=False),
        sa.Column("evidence_version_ids", sa.Text, nullable=False),
        sa.Column("source_policy_version", sa.String(256), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id", "trace_id"], ["trace_records.tenant_id", "trace_records.trace_id"]),
    )
    op.create_index("ix_trace_reviews_trace", "trace_reviews", ["tenant_id", "trace_id", "created_at"])
    op.create_table(
        "trace_version_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("version_id", sa.String(128), nullable=False),
        sa.Column("kind", sa.Integer, nullable=False),
        sa.Column("replaced_by_version_id", sa.String(128), nullable=False),
        sa.Column("actor_ref", sa.String(256), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_trace_version_events_version", "trace_version_events", ["tenant_id", "version_id"])
    op.create_table(
        "trace_redactions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("trace_id", sa.String(128), nullable=False),
        sa.Column("redacted_at", sa.DateTime, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("actor_ref", sa.String(256), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id", "trace_id"], ["trace_records.tenant_id", "trace_records.trace_id"]),
    )
    op.create_index("ix_trace_redactions_trace", "trace_redactions", ["tenant_id", "trace_id"])

    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(PG_REJECT)
        op.execute(PG_QUERY_REDACTION_ONLY)
        for table in APPEND_ONLY:
            op.execute(f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                       "FOR EACH ROW EXECUTE FUNCTION trace_reject_change()")
            op.execute(f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                       "FOR EACH STATEMENT EXECUTE FUNCTION trace_reject_change()")
        op.execute("CREATE TRIGGER trace_queries_redaction_only BEFORE UPDATE OR DELETE ON trace_queries "
                   "FOR EACH ROW EXECUTE FUNCTION trace_queries_redaction_only()")
    elif dialect == "sqlite":
        for table in APPEND_ONLY:
            for action in ("UPDATE", "DELETE"):
                op.execute(f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                           f"BEGIN SELECT RAISE(ABORT, 'citetrace trace store is append-only: {action} on "
                           f"{table} is not allowed'); END")
        op.execute("CREATE TRIGGER trace_queries_no_delete BEFORE DELETE ON trace_queries BEGIN SELECT "
                   "RAISE(ABORT, 'citetrace trace store: DELETE on trace_queries is not allowed'); END")
        op.execute(SQLITE_QUERY_REDACTION_ONLY)


def downgrade() -> None:  # the evidence record is never dropped by a migration
    raise RuntimeError("the trace store does not support downgrades")
