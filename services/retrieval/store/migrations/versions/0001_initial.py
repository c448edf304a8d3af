"""Documents, immutable versions and passages.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "ret_documents",
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("document_id", sa.String(256), primary_key=True),
        sa.Column("source_class", sa.String(64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("source_uri", sa.Text(), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
    )
    op.create_table(
        "ret_versions",
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("version_id", sa.String(64), primary_key=True),
        sa.Column("document_id", sa.String(256), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("source_uri", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("text_length", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        _ts("valid_from"),
        _ts("valid_to", nullable=True),
        sa.Column("roles", sa.JSON(), nullable=False),
        sa.Column("location_scope", sa.JSON(), nullable=False),
        sa.Column("intents", sa.JSON(), nullable=False),
        sa.Column("locale", sa.String(35), nullable=False),
        sa.Column("extraction_version", sa.String(128), nullable=False),
        _ts("ingested_at"),
        _ts("status_changed_at"),
        sa.Column("superseded_by_version_id", sa.String(64), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id", "document_id"], ["ret_documents.tenant_id", "ret_documents.document_id"]),
    )
    op.create_index("ix_ret_versions_document", "ret_versions", ["tenant_id", "document_id"])
    op.create_index("ix_ret_versions_ingested", "ret_versions", ["tenant_id", "ingested_at", "version_id"])
    op.create_table(
        "ret_passages",
        sa.Column("passage_id", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(128), nullable=False),
        sa.Column("document_id", sa.String(256), nullable=False),
        sa.Column("version_id", sa.String(64), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("start_offset", sa.Integer(), nullable=False),
        sa.Column("end_offset", sa.Integer(), nullable=False),
        sa.Column("content_sha256", sa.String(64), nullable=False),
        sa.Column("source_anchor", sa.Text(), nullable=False),
        sa.Column("heading_context", sa.Text(), nullable=False),
        sa.Column("extraction_version", sa.String(128), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id", "version_id"], ["ret_versions.tenant_id", "ret_versions.version_id"]),
    )
    op.create_index("ix_ret_passages_version", "ret_passages", ["tenant_id", "version_id", "active"])


def downgrade() -> None:
    op.drop_index("ix_ret_passages_version", table_name="ret_passages")
    op.drop_table("ret_passages")
    op.drop_index("ix_ret_versions_ingested", table_name="ret_versions")
    op.drop_index("ix_ret_versions_document", table_name="ret_versions")
    op.drop_table("ret_versions")
    op.drop_table("ret_documents")
