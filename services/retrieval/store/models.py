"""SQLAlchemy 2.0 mapping of the store of record. The schema itself is created by the alembic
migrations in ./migrations (this mapping must agree with them; a test checks it)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

VERSION_TABLE = "retrieval_alembic_version"


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC datetimes on every dialect (SQLite stores naive UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: timestamps must be timezone-aware")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    pass


class DocumentRow(Base):
    __tablename__ = "ret_documents"

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(256), primary_key=True)
    source_class: Mapped[str] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(Text)
    source_uri: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class VersionRow(Base):
    __tablename__ = "ret_versions"
    __table_args__ = (
        ForeignKeyConstraint(["tenant_id", "document_id"], ["ret_documents.tenant_id", "ret_documents.document_id"]),
        Index("ix_ret_versions_document", "tenant_id", "document_id"),
        Index("ix_ret_versions_ingested", "tenant_id", "ingested_at", "version_id"),
    )

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    # sha256 of the normalized text (64 hex).
    version_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(256))
    title: Mapped[str] = mapped_column(Text)
    source_uri: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    text_length: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    valid_from: Mapped[datetime] = mapped_column(UTCDateTime())
    valid_to: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    roles: Mapped[list] = mapped_column(JSON)
    location_scope: Mapped[list] = mapped_column(JSON)
    intents: Mapped[list] = mapped_column(JSON)
    locale: Mapped[str] = mapped_column(String(35))
    extraction_version: Mapped[str] = mapped_column(String(128))
    ingested_at: Mapped[datetime] = mapped_column(UTCDateTime())
    status_changed_at: Mapped[datetime] = mapped_column(UTCDateTime())
    superseded_by_version_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The signed statement of this state (services/retrieval/store/sealing.py; migration 0003).
    # NULL only on rows stored before signing existed (refused until adopted).
    seal_revision: Mapped[int | None] = mapped_column(Integer, nullable=True)
    seal_transition: Mapped[str | None] = mapped_column(String(128), nullable=True)
    sealed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    passages_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    signing_key_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    signature: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Migration 0004 (NULL on older rows: Markdown, digest not recorded, no pages).
    source_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    media_type: Mapped[str | None] = mapped_column(String(64), nullable=True)
    page_count: Mapped[int | None] = mapped_column(Integer, nullable=True)


class PassageRow(Base):
    __tablename__ = "ret_passages"
    __table_args__ = (
        ForeignKeyConstraint(["tenant_id", "version_id"], ["ret_versions.tenant_id", "ret_versions.version_id"]),
        Index("ix_ret_passages_version", "tenant_id", "version_id", "active"),
    )

    # sha256("tenant:document:version:start:end").
    passage_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(128))
    document_id: Mapped[str] = mapped_column(String(256))
    version_id: Mapped[str] = mapped_column(String(64))
    ordinal: Mapped[int] = mapped_column(Integer)
    start_offset: Mapped[int] = mapped_column(Integer)
    end_offset: Mapped[int] = mapped_column(Integer)
    content_sha256: Mapped[str] = mapped_column(String(64))
    source_anchor: Mapped[str] = mapped_column(Text)
    heading_context: Mapped[str] = mapped_column(Text)
    extraction_version: Mapped[str] = mapped_column(String(128))
    # False once a later extraction of the same version replaced it (kept for old traces).
    active: Mapped[bool] = mapped_column(Boolean)
    # Migration 0004: viewer pages and printed labels (NULL: no pages); review state (NULL: none needed).
    page_start: Mapped[int | None] = mapped_column(Integer, nullable=True)
    page_end: Mapped[int | None] = mapped_column(Integer, nullable=True)
    page_label_start: Mapped[str | None] = mapped_column(String(64), nullable=True)
    page_label_end: Mapped[str | None] = mapped_column(String(64), nullable=True)
    review_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    review_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    reviewed_by: Mapped[str | None] = mapped_column(String(256), nullable=True)
    reviewed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class ExtractionRow(Base):
    """One extraction of a version's source: which bytes (source_sha256), which extractor, and what
    it found (page map, issues). Several extractions can share a version (same text) or a source
    (same bytes, different text); none is ever rewritten (migration 0004)."""

    __tablename__ = "ret_extractions"
    # No foreign key: a record of an ingestion run, never evidence by itself (the version it names is
    # read and verified like any other).
    __table_args__ = (
        Index("ix_ret_extractions_source", "tenant_id", "document_id", "source_sha256", "extraction_version"),
    )

    tenant_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    version_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    extraction_version: Mapped[str] = mapped_column(String(128), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(256))
    source_sha256: Mapped[str] = mapped_column(String(64))
    media_type: Mapped[str] = mapped_column(String(64))
    page_map: Mapped[list] = mapped_column(JSON)
    issues: Mapped[list] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class VersionEventOutboxRow(Base):
    """A version event (superseded / retired) waiting for, or already delivered to, the trace
    service. Written in the transaction that changes the version (migration 0002)."""

    __tablename__ = "ret_version_events_outbox"
    __table_args__ = (
        Index("ix_ret_version_events_outbox_pending", "delivered_at", "next_attempt_at", "id"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True,
                                    autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(String(128))
    version_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))  # superseded | retired
    replaced_by_version_id: Mapped[str] = mapped_column(String(64))  # "" for retired
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    attempts: Mapped[int] = mapped_column(Integer)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime())
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_error: Mapped[str] = mapped_column(Text)
