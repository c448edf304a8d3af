"""The store of record (SQLAlchemy 2.0; SQLite by default, PostgreSQL supported).

Every logical write is one transaction: a version and all its passages are stored together or
not at all. Schema changes are alembic migrations (./migrations), applied by migrate() at
service warm-up."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path

from citetrace.kit import sql as kit_sql
from citetrace.vocab import APPROVED, RETIRED
from sqlalchemy import bindparam, func, select, tuple_
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from .models import DocumentRow, ExtractionRow, PassageRow, VersionEventOutboxRow, VersionRow
from .records import (
    MARKDOWN,
    NOT_REQUIRED,
    PENDING,
    RETIRED_EVENT,
    REVIEW_APPROVED,
    SUPERSEDED_EVENT,
    DocumentRecord,
    ExtractionRecord,
    IngestOutcome,
    PassageRecord,
    VersionBundle,
    VersionEvent,
    VersionRecord,
    successor_of,
    supersession_end,
)
from .sealing import (
    ADOPTED,
    INGESTED,
    PASSAGES_APPROVED,
    REEXTRACTED,
    RESIGNED,
    SUPERSEDED,
    IntegrityFailure,
    Seal,
    VersionSealer,
    check_content,
)

MIGRATIONS = Path(__file__).parent / "migrations"
log = logging.getLogger("citetrace.retrieval")


class VersionConflict(Exception):
    """The request contradicts what is stored (e.g. the same text under another document)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def make_engine(url: str, sqlite_synchronous: str = "FULL") -> Engine:
    return kit_sql.make_engine(url, sqlite_synchronous=sqlite_synchronous, pool_size=10, max_overflow=10)


def _version_record(row: VersionRow, source_class: str) -> VersionRecord:
    return VersionRecord(
        tenant_id=row.tenant_id,
        document_id=row.document_id,
        version_id=row.version_id,
        source_class=source_class,
        title=row.title,
        source_uri=row.source_uri,
        status=row.status,
        valid_from=row.valid_from,
        valid_to=row.valid_to,
        roles=tuple(row.roles),
        location_scope=tuple(row.location_scope),
        intents=tuple(row.intents),
        locale=row.locale,
        extraction_version=row.extraction_version,
        ingested_at=row.ingested_at,
        text_length=row.text_length,
        superseded_by_version_id=row.superseded_by_version_id,
        seal=_seal_of(row),
        source_sha256=row.source_sha256 or "",
        media_type=row.media_type or MARKDOWN,
        page_count=row.page_count or 0,
    )


def _seal_of(row) -> Seal | None:
    """The signature columns of a version row (ORM or Core), None when unsigned."""
    if row.signature is None:
        return None
    return Seal(revision=int(row.seal_revision or 0), transition=row.seal_transition or "",
                sealed_at=row.sealed_at, passages_sha256=row.passages_sha256 or "",
                key_id=row.signing_key_id or "", signature=row.signature)


def _apply_seal(row: VersionRow, seal: Seal) -> None:
    row.seal_revision, row.seal_transition, row.sealed_at = seal.revision, seal.transition, seal.sealed_at
    row.passages_sha256, row.signing_key_id, row.signature = seal.passages_sha256, seal.key_id, seal.signature


def _passage_record(row: PassageRow) -> PassageRecord:
    return PassageRecord(
        passage_id=row.passage_id,
        tenant_id=row.tenant_id,
        document_id=row.document_id,
        version_id=row.version_id,
        ordinal=row.ordinal,
        start=row.start_offset,
        end=row.end_offset,
        content_sha256=row.content_sha256,
        source_anchor=row.source_anchor,
        heading_context=row.heading_context,
        extraction_version=row.extraction_version,
        active=row.active,
        page_start=row.page_start or 0,
        page_end=row.page_end or 0,
        page_label_start=row.page_label_start or "",
        page_label_end=row.page_label_end or "",
        review_state=row.review_state or NOT_REQUIRED,
        review_reason=row.review_reason or "",
    )


def _passage_row(p: PassageRecord) -> PassageRow:
    return PassageRow(
        passage_id=p.passage_id, tenant_id=p.tenant_id, document_id=p.document_id, version_id=p.version_id,
        ordinal=p.ordinal, start_offset=p.start, end_offset=p.end, content_sha256=p.content_sha256,
        source_anchor=p.source_anchor, heading_context=p.heading_context, extraction_version=p.extraction_version,
        active=True, page_start=p.page_start or None, page_end=p.page_end or None,
        page_label_start=p.page_label_start or None if p.page_start else None,
        page_label_end=p.page_label_end or None if p.page_start else None,
        review_state=None if p.review_state == NOT_REQUIRED else p.review_state,
        review_reason=p.review_reason or None)


def encode_page_token(ingested_at: datetime, version_id: str) -> str:
    raw = json.dumps({"t": ingested_at.isoformat(), "v": version_id}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str) -> tuple[datetime, str]:
    """Raises ValueError on a token this store did not issue."""
    padded = token + "=" * (-len(token) % 4)
    data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    return datetime.fromisoformat(data["t"]), str(data["v"])


_PASSAGE_VERSIONS = select(PassageRow.passage_id, PassageRow.version_id).where(
    PassageRow.tenant_id == bindparam("tenant_id"), PassageRow.passage_id.in_(bindparam("ids", expanding=True)))
# One tenant's versions with their documents' source class and all their passage rows: the read
# behind every GetPassages. Core statements built once (expanding IN, so SQLAlchemy's compiled
# cache serves them), rows read without the ORM's identity map: the same columns _bundles reads.
_TENANT_VERSIONS = select(VersionRow.__table__, DocumentRow.source_class).join(
    DocumentRow, (DocumentRow.tenant_id == VersionRow.tenant_id) & (DocumentRow.document_id == VersionRow.document_id),
    isouter=True).where(VersionRow.tenant_id == bindparam("tenant_id"),
                        VersionRow.version_id.in_(bindparam("ids", expanding=True)))
_TENANT_PASSAGES = select(PassageRow.__table__).where(
    PassageRow.tenant_id == bindparam("tenant_id"), PassageRow.version_id.in_(bindparam("ids", expanding=True))
).order_by(PassageRow.ordinal)


class Store:
    def __init__(self, url: str, sqlite_synchronous: str = "FULL", sealer: VersionSealer | None = None) -> None:
        if sqlite_synchronous not in ("FULL", "NORMAL"):
            raise ValueError("sqlite_synchronous must be FULL or NORMAL")
        self.url = url
        self.engine = make_engine(url, sqlite_synchronous)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        # Signs every state a write produces and verifies a row before a write re-signs it.
        self.sealer = sealer

    def migrate(self) -> None:
        """Brings the schema to the newest migration (idempotent; one replica at a time)."""
        kit_sql.alembic_upgrade(self.engine, "retrieval", MIGRATIONS)

    def close(self) -> None:
        self.engine.dispose()

    def _session(self) -> Session:
        return self._sessions()

    # --- reads --------------------------------------------------------------------------------

    def tenant_exists(self, tenant_id: str) -> bool:
        with self._session() as s:
            return s.scalar(select(DocumentRow.document_id).where(DocumentRow.tenant_id == tenant_id).limit(1)) \
                is not None

    def _source_classes(self, s: Session, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
        keys = list(set(keys))
        out: dict[tuple[str, str], str] = {}
        for i in range(0, len(keys), 400):
            chunk = keys[i:i + 400]
            rows = s.execute(select(DocumentRow.tenant_id, DocumentRow.document_id, DocumentRow.source_class)
                             .where(tuple_(DocumentRow.tenant_id, DocumentRow.document_id).in_(chunk)))
            out.update({(t, d): c for t, d, c in rows})
        return out

    def passage_exists(self, passage_id: str) -> bool:
        """Whether a passage with this ID exists in ANY tenant (primary-key lookup). Only for
        counting blocked scope violations; never tells a caller anything."""
        with self.engine.connect() as conn:
            return conn.execute(select(PassageRow.passage_id).where(PassageRow.passage_id == passage_id)
                                .limit(1)).first() is not None

    def version_exists(self, version_id: str) -> bool:
        """Whether a version with this ID exists in ANY tenant (same purpose as passage_exists)."""
        with self.engine.connect() as conn:
            return conn.execute(select(VersionRow.version_id).where(VersionRow.version_id == version_id)
                                .limit(1)).first() is not None

    def passage_versions(self, tenant_id: str, passage_ids: list[str]) -> dict[str, str]:
        """passage_id -> version_id for the tenant's passages among `passage_ids` (primary key)."""
        out: dict[str, str] = {}
        unique = list(dict.fromkeys(passage_ids))
        with self.engine.connect() as conn:
            for i in range(0, len(unique), 400):
                out.update(conn.execute(_PASSAGE_VERSIONS, {"tenant_id": tenant_id, "ids": unique[i:i + 400]}).all())
        return out

    def signed_key_ids(self) -> set[str]:
        """The key IDs that signed stored versions (a missing signing key must not be recreated)."""
        with self.engine.connect() as conn:
            return {r[0] for r in conn.execute(select(VersionRow.signing_key_id).where(
                VersionRow.signing_key_id.is_not(None)).distinct())}

    def list_versions(self, tenant_id: str, *, document_id: str | None, status: str | None, limit: int,
                      after: tuple[datetime, str] | None) -> list[VersionRecord]:
        """Newest first (ingested_at desc, version_id desc), keyset-paged."""
        with self._session() as s:
            query = select(VersionRow).where(VersionRow.tenant_id == tenant_id)
            if document_id:
                query = query.where(VersionRow.document_id == document_id)
            if status:
                query = query.where(VersionRow.status == status)
            if after is not None:
                query = query.where(tuple_(VersionRow.ingested_at, VersionRow.version_id) < tuple_(*after))
            query = query.order_by(VersionRow.ingested_at.desc(), VersionRow.version_id.desc()).limit(limit)
            rows = list(s.scalars(query))
            classes = self._source_classes(s, [(r.tenant_id, r.document_id) for r in rows])
            return [_version_record(r, classes[(r.tenant_id, r.document_id)]) for r in rows]

    def iter_bundles(self, batch: int = 2000) -> Iterator[VersionBundle]:
        """Every version (all tenants) with its text and ALL its passage rows, for rebuilding the
        derived search index at warm-up and for `citetrace index verify`."""
        with self._session() as s:
            keys = list(s.execute(select(VersionRow.tenant_id, VersionRow.version_id)
                                  .order_by(VersionRow.tenant_id, VersionRow.version_id)))
        for i in range(0, len(keys), batch):
            chunk = [tuple(k) for k in keys[i:i + batch]]
            with self._session() as s:
                yield from self._bundles(s, chunk)

    def version_bundles(self, tenant_id: str, version_ids: Iterable[str]) -> dict[str, VersionBundle]:
        """The tenant's versions among `version_ids` with text and all passage rows (two queries)."""
        unique = list(dict.fromkeys(version_ids))
        out: dict[str, VersionBundle] = {}
        with self.engine.connect() as conn:
            for i in range(0, len(unique), 400):
                params = {"tenant_id": tenant_id, "ids": unique[i:i + 400]}
                passages: dict[str, list[PassageRecord]] = {}
                for p in conn.execute(_TENANT_PASSAGES, params):
                    passages.setdefault(p.version_id, []).append(_passage_record(p))
                for v in conn.execute(_TENANT_VERSIONS, params):
                    out[v.version_id] = VersionBundle(_version_record(v, v.source_class or ""), v.text,
                                                      passages.get(v.version_id, []))
        return out

    def _bundles(self, s: Session, keys: list[tuple[str, str]]) -> list[VersionBundle]:
        vrows = list(s.scalars(select(VersionRow).where(tuple_(VersionRow.tenant_id, VersionRow.version_id).in_(keys))))
        classes = self._source_classes(s, [(v.tenant_id, v.document_id) for v in vrows])
        prows = s.scalars(select(PassageRow).where(tuple_(PassageRow.tenant_id, PassageRow.version_id).in_(keys))
                          .order_by(PassageRow.ordinal))
        by_version: dict[tuple[str, str], list[PassageRecord]] = {}
        for p in prows:
            by_version.setdefault((p.tenant_id, p.version_id), []).append(_passage_record(p))
        return [VersionBundle(_version_record(v, classes.get((v.tenant_id, v.document_id), "")), v.text,
                              by_version.get((v.tenant_id, v.version_id), [])) for v in vrows]

    # --- writes -------------------------------------------------------------------------------

    def ingest(self, document: DocumentRecord, version: VersionRecord, text: str,
               passages: list[PassageRecord], now: datetime, *, compare_valid_from: bool = True,
               extraction: ExtractionRecord | None = None,
               before_commit: Callable[[], None] = lambda: None) -> IngestOutcome:
        """Stores a version with its passages (and the extraction that made them) in one transaction;
        idempotent for the same text. A concurrent identical ingest that wins the race makes this one
        report created=False. `before_commit` runs inside the transaction just before it commits; an
        exception it raises rolls everything back (the caller's deadline check)."""
        for attempt in range(2):
            try:
                return self._ingest_once(document, version, text, passages, now, compare_valid_from, extraction,
                                         before_commit)
            except IntegrityError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _ingest_once(self, document, version, text, passages, now, compare_valid_from, extraction,
                     before_commit) -> IngestOutcome:
        with self._session() as s, s.begin():
            doc = s.get(DocumentRow, (document.tenant_id, document.document_id))
            if doc is not None and doc.source_class != document.source_class:
                raise VersionConflict(
                    "SOURCE_CLASS_CONFLICT",
                    f"document {document.document_id!r} is stored with source_class {doc.source_class!r}, "
                    f"not {document.source_class!r}; a document's source class never changes")
            existing = s.get(VersionRow, (version.tenant_id, version.version_id))
            if existing is not None:
                if existing.document_id != version.document_id:
                    raise VersionConflict(
                        "VERSION_TEXT_CONFLICT",
                        f"this exact text is already stored as version {existing.version_id} of document "
                        f"{existing.document_id!r}; version ids are content digests, so identical text "
                        "cannot be a version of two documents")
                self._check_same_metadata(existing, version, compare_valid_from)
                outcome = self._existing(s, existing, doc, version, passages)
                self._add_extraction(s, extraction, now)
                before_commit()
                return outcome
            if doc is None:
                doc = DocumentRow(tenant_id=document.tenant_id, document_id=document.document_id,
                                  source_class=document.source_class, title=document.title,
                                  source_uri=document.source_uri, created_at=now, updated_at=now)
                s.add(doc)
            else:
                doc.title, doc.source_uri, doc.updated_at = document.title, document.source_uri, now
            new_row = VersionRow(
                tenant_id=version.tenant_id, version_id=version.version_id, document_id=version.document_id,
                title=version.title, source_uri=version.source_uri, text=text, text_length=len(text),
                status=version.status, valid_from=version.valid_from, valid_to=version.valid_to,
                roles=list(version.roles), location_scope=list(version.location_scope), intents=list(version.intents),
                locale=version.locale, extraction_version=version.extraction_version, ingested_at=now,
                status_changed_at=now, superseded_by_version_id=None, source_sha256=version.source_sha256 or None,
                media_type=version.media_type, page_count=version.page_count or None)
            s.add(new_row)
            s.flush()
            s.add_all(_passage_row(p) for p in passages)
            self._add_extraction(s, extraction, now)
            superseded = self._supersede(s, new_row, doc.source_class)
            self._seal_row(s, new_row, doc.source_class, INGESTED, now)
            stored = _version_record(new_row, doc.source_class)
            s.flush()
            before_commit()
        return IngestOutcome(version=stored, passages=passages, created=True, superseded=superseded)

    @staticmethod
    def _check_same_metadata(existing: VersionRow, version: VersionRecord, compare_valid_from: bool) -> None:
        """Same text again: the version is immutable, so scope metadata must agree. Status and
        valid_to are lifecycle fields (changed by SetVersionStatus and supersession): not compared,
        except an explicitly different valid_to."""
        diffs = []
        if compare_valid_from and existing.valid_from != version.valid_from:
            diffs.append("valid_from")
        if version.valid_to is not None and existing.valid_to != version.valid_to:
            diffs.append("valid_to")
        for name in ("roles", "location_scope", "intents"):
            if sorted(getattr(existing, name)) != sorted(getattr(version, name)):
                diffs.append(name)
        if existing.locale != version.locale:
            diffs.append("locale")
        if diffs:
            raise VersionConflict(
                "VERSION_METADATA_CONFLICT",
                f"version {existing.version_id} of document {existing.document_id!r} is already stored with "
                f"different {', '.join(diffs)}; versions are immutable: change the text to make a new version")

    def _existing(self, s: Session, existing: VersionRow, doc: DocumentRow, version: VersionRecord,
                  passages: list[PassageRecord]) -> IngestOutcome:
        self._verify_or_adopt(s, existing, doc.source_class, version.ingested_at)
        reextracted = False
        if existing.extraction_version != version.extraction_version:
            # Re-chunking: a new extraction of the same text. Old passages stay (old traces point to
            # them) but become inactive; passages with the same span keep their id.
            reextracted = True
            old = {r.passage_id: r for r in s.scalars(select(PassageRow).where(
                PassageRow.tenant_id == existing.tenant_id, PassageRow.version_id == existing.version_id))}
            new_ids = {p.passage_id for p in passages}
            for pid, row in old.items():
                row.active = pid in new_ids
            for p in passages:
                if p.passage_id in old:
                    # The same span (same text): the new extraction's view of it. Its locator may
                    # change (a citation with the old pages then fails LOCATOR_MISMATCH); an approval
                    # stands while the reason for review is the same.
                    row = old[p.passage_id]
                    row.ordinal = p.ordinal
                    row.heading_context = p.heading_context
                    row.source_anchor = p.source_anchor
                    fresh = _passage_row(p)
                    row.page_start, row.page_end = fresh.page_start, fresh.page_end
                    row.page_label_start, row.page_label_end = fresh.page_label_start, fresh.page_label_end
                    keep = row.review_state == REVIEW_APPROVED and (row.review_reason or None) == fresh.review_reason
                    if not keep:
                        row.review_state, row.review_reason = fresh.review_state, fresh.review_reason
                        row.reviewed_by = row.reviewed_at = None
                else:
                    s.add(_passage_row(p))
            existing.extraction_version = version.extraction_version
            self._seal_row(s, existing, doc.source_class, REEXTRACTED, version.ingested_at)
        rows = s.scalars(select(PassageRow).where(
            PassageRow.tenant_id == existing.tenant_id, PassageRow.version_id == existing.version_id,
            PassageRow.active.is_(True)).order_by(PassageRow.ordinal))
        return IngestOutcome(version=_version_record(existing, doc.source_class),
                             passages=[_passage_record(r) for r in rows], created=False, superseded=[],
                             reextracted=reextracted)

    def _supersede(self, s: Session, new_row: VersionRow, source_class: str) -> list[VersionRecord]:
        """The supersession rule (records.supersession_end / successor_of) for a version that is now
        approved: closes earlier open versions, and closes this one if a later version exists."""
        new = _version_record(new_row, source_class)
        if new.status != APPROVED:
            return []
        candidates = list(s.scalars(select(VersionRow).where(
            VersionRow.tenant_id == new.tenant_id, VersionRow.document_id == new.document_id,
            VersionRow.status == APPROVED, VersionRow.version_id != new.version_id)))
        # A row that fails verification (changed outside the service) neither closes this version
        # nor is re-signed with a new window: it stays as it is, refused by every read.
        rows = [row for row in candidates if self._verified(s, row, source_class)]
        changed = []
        now = new_row.status_changed_at
        for row in rows:
            end = supersession_end(new, _version_record(row, source_class))
            if end is not None:
                row.valid_to = end
                row.superseded_by_version_id = new.version_id
                self._seal_row(s, row, source_class, SUPERSEDED, now)
                changed.append(_version_record(row, source_class))
                self._add_event(s, row.tenant_id, row.version_id, SUPERSEDED_EVENT, new.version_id, now)
        successor = successor_of(new, [_version_record(row, source_class) for row in rows])
        if successor is not None:
            new_row.valid_to = successor.valid_from
            new_row.superseded_by_version_id = successor.version_id
            self._add_event(s, new_row.tenant_id, new_row.version_id, SUPERSEDED_EVENT, successor.version_id, now)
        s.flush()
        return sorted(changed, key=lambda v: v.version_id)

    def set_status(self, tenant_id: str, version_id: str, status: str, now: datetime,
                   check: Callable[[str, str], None], before_commit: Callable[[], None] = lambda: None,
                   ) -> tuple[VersionRecord, VersionRecord, list[VersionRecord]] | None:
        """Changes a version's status in one transaction. `check(old_status, new_status)` raises on an
        illegal move; `before_commit` runs just before the commit (raising rolls the change back).
        Returns (before, after, superseded) or None when the version does not exist."""
        with self._session() as s, s.begin():
            row = s.get(VersionRow, (tenant_id, version_id), with_for_update=True)
            if row is None:
                return None
            doc = s.get(DocumentRow, (tenant_id, row.document_id))
            self._verify_row(s, row, doc.source_class)  # never re-sign a state this service did not sign
            before = _version_record(row, doc.source_class)
            check(row.status, status)
            superseded: list[VersionRecord] = []
            if row.status != status:
                old_status = row.status
                row.status = status
                row.status_changed_at = now
                s.flush()
                superseded = self._supersede(s, row, doc.source_class)
                self._seal_row(s, row, doc.source_class, f"{old_status}->{status}", now)
                if status == RETIRED:
                    self._add_event(s, tenant_id, version_id, RETIRED_EVENT, "", now)
                s.flush()
                before_commit()
            after = _version_record(row, doc.source_class)
        return before, after, superseded

    # --- signatures ----------------------------------------------------------------------------

    def _passage_rows(self, s: Session, row: VersionRow) -> list[PassageRecord]:
        s.flush()
        return [_passage_record(p) for p in s.scalars(select(PassageRow).where(
            PassageRow.tenant_id == row.tenant_id, PassageRow.version_id == row.version_id))]

    def _seal_row(self, s: Session, row: VersionRow, source_class: str, transition: str, now: datetime) -> None:
        """Signs the row's new state (next revision) inside the caller's transaction."""
        if self.sealer is None:
            raise RuntimeError("the store has no VersionSealer: it cannot write signed versions")
        seal = self.sealer.seal(_version_record(row, source_class), self._passage_rows(s, row),
                                transition=transition, revision=(row.seal_revision or 0) + 1, now=now)
        _apply_seal(row, seal)

    def _verify_row(self, s: Session, row: VersionRow, source_class: str) -> None:
        """Raises IntegrityFailure when the row (and its passages) is not what the service signed."""
        if self.sealer is None:
            raise RuntimeError("the store has no VersionSealer: it cannot verify versions")
        self.sealer.verify_bundle(_version_record(row, source_class), row.text, self._passage_rows(s, row))

    def _verified(self, s: Session, row: VersionRow, source_class: str) -> bool:
        try:
            self._verify_row(s, row, source_class)
            return True
        except IntegrityFailure as failure:
            log.error("retrieval: version %s left untouched by a write: %s: %s", row.version_id,
                      failure.reason, failure.message)
            return False

    def _verify_or_adopt(self, s: Session, row: VersionRow, source_class: str, now: datetime) -> None:
        """An existing row met again by an ingest of the same text: it must verify, except a row
        stored before signing existed, which the ingesting policy_admin adopts (signs) when its
        text and passages still match their digests. Raises IntegrityFailure otherwise."""
        try:
            self._verify_row(s, row, source_class)
        except IntegrityFailure as failure:
            if failure.reason != "VERSION_SIGNATURE_MISSING":
                raise
            check_content(_version_record(row, source_class), row.text, self._passage_rows(s, row))
            self._seal_row(s, row, source_class, ADOPTED, now)

    def reseal(self, *, adopt_unsigned: bool, now: datetime, batch: int = 200) -> dict[str, list[str]]:
        """`citetrace index resign`: every version that verifies (with any verify key) is signed
        again with the current signing key (after a rotation, so the old key can be retired);
        with adopt_unsigned, rows stored before signing are signed when their digests hold.
        Rows that fail are left alone and reported. Returns {"resigned", "adopted", "refused"}."""
        report: dict[str, list[str]] = {"resigned": [], "adopted": [], "refused": []}
        with self._session() as s:
            keys = [tuple(k) for k in s.execute(select(VersionRow.tenant_id, VersionRow.version_id)
                                                .order_by(VersionRow.tenant_id, VersionRow.version_id))]
        for i in range(0, len(keys), batch):
            with self._session() as s, s.begin():
                rows = list(s.scalars(select(VersionRow).where(
                    tuple_(VersionRow.tenant_id, VersionRow.version_id).in_(keys[i:i + batch]))))
                classes = self._source_classes(s, [(r.tenant_id, r.document_id) for r in rows])
                for row in rows:
                    source_class = classes.get((row.tenant_id, row.document_id), "")
                    label = f"{row.tenant_id}/{row.version_id}"
                    try:
                        self._verify_row(s, row, source_class)
                        if row.signing_key_id != self.sealer.signer.key_id:
                            self._seal_row(s, row, source_class, RESIGNED, now)
                            report["resigned"].append(label)
                    except IntegrityFailure as failure:
                        if failure.reason == "VERSION_SIGNATURE_MISSING" and adopt_unsigned:
                            try:
                                check_content(_version_record(row, source_class), row.text,
                                                    self._passage_rows(s, row))
                            except IntegrityFailure as digest:
                                report["refused"].append(f"{label}: {digest.reason}")
                                continue
                            self._seal_row(s, row, source_class, ADOPTED, now)
                            report["adopted"].append(label)
                        else:
                            report["refused"].append(f"{label}: {failure.reason}")
        return report
    # --- extractions and review ------------------------------------------------------------------

    @staticmethod
    def _add_extraction(s: Session, extraction: ExtractionRecord | None, now: datetime) -> None:
        if extraction is None:
            return
        version = s.get(VersionRow, (extraction.tenant_id, extraction.version_id))
        key = (version.tenant_id, extraction.version_id, extraction.extraction_version)
        if s.get(ExtractionRow, key) is None:
            s.add(ExtractionRow(tenant_id=key[0], version_id=key[1], extraction_version=key[2],
                                document_id=version.document_id, source_sha256=extraction.source_sha256,
                                media_type=extraction.media_type, page_map=extraction.page_map,
                                issues=extraction.issues, created_at=now))

    def find_extraction(self, tenant_id: str, document_id: str, source_sha256: str,
                        extraction_version: str) -> ExtractionRecord | None:
        """An extraction of these bytes by this extractor already stored for the document:
        re-ingesting them creates nothing and needs no new extraction."""
        with self._session() as s:
            row = s.scalars(select(ExtractionRow).where(
                ExtractionRow.tenant_id == tenant_id, ExtractionRow.document_id == document_id,
                ExtractionRow.source_sha256 == source_sha256,
                ExtractionRow.extraction_version == extraction_version).limit(1)).first()
            return None if row is None else _extraction_record(row)

    def extractions(self, tenant_id: str, version_id: str) -> list[ExtractionRecord]:
        """Every extraction stored for a version, oldest first."""
        with self._session() as s:
            rows = s.scalars(select(ExtractionRow).where(ExtractionRow.tenant_id == tenant_id,
                                                         ExtractionRow.version_id == version_id)
                             .order_by(ExtractionRow.created_at))
            return [_extraction_record(r) for r in rows]

    def approve_passages(self, tenant_id: str, passage_ids: list[str], reviewer: str, now: datetime,
                         before_commit: Callable[[], None] = lambda: None,
                         ) -> tuple[list[PassageRecord], list[str], list[str]]:
        """Approves passages awaiting review, all or none (one transaction). Returns (the approved
        passages, IDs not in the tenant, IDs never marked for review); unless both lists are empty
        nothing is changed. `before_commit` runs just before the commit (raising rolls it back)."""
        with self._session() as s, s.begin():
            rows = list(s.scalars(select(PassageRow).where(PassageRow.tenant_id == tenant_id,
                                                           PassageRow.passage_id.in_(passage_ids))
                                  .with_for_update()))
            missing = sorted(set(passage_ids) - {r.passage_id for r in rows})
            not_under_review = sorted(r.passage_id for r in rows if r.review_state not in (PENDING, REVIEW_APPROVED))
            if missing or not_under_review:
                return [], missing, not_under_review
            pending = [row for row in rows if row.review_state == PENDING]
            versions = {}
            for row in pending:  # the versions are verified before their passages change and are re-signed
                if row.version_id not in versions:
                    version = s.get(VersionRow, (tenant_id, row.version_id), with_for_update=True)
                    doc = s.get(DocumentRow, (tenant_id, version.document_id))
                    self._verify_row(s, version, doc.source_class)
                    versions[row.version_id] = (version, doc.source_class)
            for row in pending:
                row.review_state, row.reviewed_by, row.reviewed_at = REVIEW_APPROVED, reviewer, now
            for version, source_class in versions.values():
                self._seal_row(s, version, source_class, PASSAGES_APPROVED, now)
            s.flush()
            before_commit()
            return [_passage_record(r) for r in rows], [], []

    # --- version-event outbox ---------------------------------------------------------------------

    @staticmethod
    def _add_event(s: Session, tenant_id: str, version_id: str, kind: str, replaced_by: str,
                   now: datetime) -> None:
        """Queued in the caller's transaction: the event exists exactly when the change does."""
        s.add(VersionEventOutboxRow(tenant_id=tenant_id, version_id=version_id, kind=kind,
                                    replaced_by_version_id=replaced_by, created_at=now, attempts=0,
                                    next_attempt_at=now, delivered_at=None, last_error=""))

    def due_version_events(self, now: datetime, limit: int = 100) -> list[VersionEvent]:
        """Undelivered events whose next attempt is due, oldest first, each tenant's only up to its
        first event still waiting out a backoff (a tenant's events are delivered in order)."""
        table = VersionEventOutboxRow.__table__
        with self._session() as s:
            rows = s.execute(kit_sql.due_in_tenant_order(table, now).limit(limit)).all()
            return [_event_record(r) for r in rows]

    def version_events(self, tenant_id: str | None = None) -> list[VersionEvent]:
        """Every event (delivered or not), oldest first: the outbox is also the log."""
        with self._session() as s:
            query = select(VersionEventOutboxRow).order_by(VersionEventOutboxRow.id)
            if tenant_id is not None:
                query = query.where(VersionEventOutboxRow.tenant_id == tenant_id)
            return [_event_record(r) for r in s.scalars(query)]

    def pending_version_event_count(self) -> int:
        with self._session() as s:
            return int(s.scalar(select(func.count()).select_from(VersionEventOutboxRow)
                                .where(VersionEventOutboxRow.delivered_at.is_(None))) or 0)

    def mark_event_delivered(self, event_id: int, now: datetime) -> None:
        with self._session() as s, s.begin():
            row = s.get(VersionEventOutboxRow, event_id)
            if row is not None and row.delivered_at is None:
                row.delivered_at = now
                row.attempts += 1
                row.last_error = ""

    def mark_event_failed(self, event_id: int, error: str, next_attempt_at: datetime) -> None:
        with self._session() as s, s.begin():
            row = s.get(VersionEventOutboxRow, event_id)
            if row is not None and row.delivered_at is None:
                row.attempts += 1
                row.last_error = error[:2000]
                row.next_attempt_at = next_attempt_at


def _extraction_record(row: ExtractionRow) -> ExtractionRecord:
    return ExtractionRecord(tenant_id=row.tenant_id, version_id=row.version_id,
                            extraction_version=row.extraction_version, source_sha256=row.source_sha256,
                            media_type=row.media_type, page_map=list(row.page_map), issues=list(row.issues))


def _event_record(row: VersionEventOutboxRow) -> VersionEvent:
    return VersionEvent(id=row.id, tenant_id=row.tenant_id, version_id=row.version_id, kind=row.kind,
                        replaced_by_version_id=row.replaced_by_version_id, created_at=row.created_at,
                        attempts=row.attempts, delivered_at=row.delivered_at, last_error=row.last_error)
