"""Sealed chain (issue 16): every record and chain link carries an Ed25519 signature of its hash by
the trace authority's key (a file or KMS key outside the database: a writer who recomputes a hash
cannot re-sign it); a question can be redacted only when its redaction event is stored (the
trigger refuses any other change to a question).

Revision ID: 0003_sealed_chain
Revises: 0002_chain_links
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_sealed_chain"
down_revision = "0002_chain_links"
branch_labels = None
depends_on = None

PG_QUERY_REDACTION_ONLY = """
CREATE OR REPLACE FUNCTION trace_queries_redaction_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NOT OLD.redacted AND NEW.redacted AND NEW.raw = '' AND NEW.normalized = ''
     AND NEW.nonce IS NULL AND NEW.tenant_id = OLD.tenant_id AND NEW.trace_id = OLD.trace_id
     AND EXISTS (SELECT 1 FROM trace_redactions r WHERE r.tenant_id = NEW.tenant_id
                 AND r.trace_id = NEW.trace_id) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'citetrace trace store: % on trace_queries is only allowed as a redaction with its redaction event',
    TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
"""

SQLITE_QUERY_REDACTION_ONLY = """
CREATE TRIGGER trace_queries_redaction_only BEFORE UPDATE ON trace_queries
WHEN NOT (OLD.redacted = 0 AND NEW.redacted = 1 AND NEW.raw = '' AND NEW.normalized = ''
          AND NEW.nonce IS NULL AND NEW.tenant_id = OLD.tenant_id AND NEW.trace_id = OLD.trace_id
          AND EXISTS (SELECT 1 FROM trace_redactions r WHERE r.tenant_id = NEW.tenant_id
                      AND r.trace_id = NEW.trace_id))
BEGIN SELECT RAISE(ABORT, 'citetrace trace store: UPDATE on trace_queries is only allowed as a redaction with its redaction event'); END
"""


def upgrade() -> None:
    for table in ("trace_records", "trace_chain_links"):
        op.add_column(table, sa.Column("key_id", sa.String(64), nullable=False, server_default=""))
        op.add_column(table, sa.Column("signature", sa.String(128), nullable=False, server_default=""))
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(PG_QUERY_REDACTION_ONLY)  # the trigger calls the function by name: replaced in place
    elif dialect == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS trace_queries_redaction_only")
        op.execute(SQLITE_QUERY_REDACTION_ONLY)


def downgrade() -> None:  # the evidence record is never dropped by a migration
    raise RuntimeError("the trace store does not support downgrades")
