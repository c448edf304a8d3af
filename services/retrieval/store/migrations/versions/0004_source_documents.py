"""Sources as clinics have them (issue 19): the original file's digest and media type on each
version, one row per extraction (page map and issues), page locators and review state on passages.
ret_extractions has no foreign key on purpose: it records ingestion runs, is never evidence, and
the version it names is read and verified like any other.

Rows stored before this migration are Markdown versions without pages: their new columns stay NULL
and read as "text/markdown, no source digest recorded, no pages, no review needed".

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

VERSION_COLUMNS = (
    ("source_sha256", sa.String(64)),
    ("media_type", sa.String(64)),
    ("page_count", sa.Integer()),
)
PASSAGE_COLUMNS = (
    ("page_start", sa.Integer()),
    ("page_end", sa.Integer()),
    ("page_label_start", sa.String(64)),
    ("page_label_end", sa.String(64)),
    ("review_state", sa.String(16)),
    ("review_reason", sa.Text()),
    ("reviewed_by", sa.String(256)),
    ("reviewed_at", sa.DateTime(timezone=True)),
)


def upgrade() -> None:
    for name, type_ in VERSION_COLUMNS:  # ADD COLUMN on both dialects (no table rebuild on SQLite)
        op.add_column("ret_versions", sa.Column(name, type_, nullable=True))
    for name, type_ in PASSAGE_COLUMNS:
        op.add_column("ret_passages", sa.Column(name, type_, nullable=True))
    op.create_table(
        "ret_extractions",
        sa.Column("tenant_id", sa.String(128), primary_key=True),
        sa.Column("version_id", sa.String(64), primary_key=True),
        sa.Column("extraction_version", sa.String(128), primary_key=True),
        sa.Column("document_id", sa.String(256), nullable=False),
        sa.Column("source_sha256", sa.String(64), nullable=False),
        sa.Column("media_type", sa.String(64), nullable=False),
        sa.Column("page_map", sa.JSON(), nullable=False),
        sa.Column("issues", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_ret_extractions_source", "ret_extractions",
                    ["tenant_id", "document_id", "source_sha256", "extraction_version"])


def downgrade() -> None:
    op.drop_index("ix_ret_extractions_source", table_name="ret_extractions")
    op.drop_table("ret_extractions")
    with op.batch_alter_table("ret_passages") as batch:
        for name, _ in PASSAGE_COLUMNS:
            batch.drop_column(name)
    with op.batch_alter_table("ret_versions") as batch:
        for name, _ in VERSION_COLUMNS:
            batch.drop_column(name)
