"""Plain records the core works with (no SQLAlchemy session attached), and the pure rules of
identity, lifecycle and supersession (DESIGN.md §2)."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from citetrace.vocab import APPROVED

from .sealing import Seal

# Review states of a passage (an extraction that could not capture its context marks it PENDING).
NOT_REQUIRED, PENDING, REVIEW_APPROVED = "not_required", "pending", "approved"
MARKDOWN = "text/markdown"


@dataclasses.dataclass(frozen=True)
class DocumentRecord:
    tenant_id: str
    document_id: str
    source_class: str
    title: str
    source_uri: str


@dataclasses.dataclass(frozen=True)
class VersionRecord:
    tenant_id: str
    document_id: str
    version_id: str
    source_class: str
    title: str
    source_uri: str
    status: str
    valid_from: datetime
    valid_to: datetime | None
    roles: tuple[str, ...]
    location_scope: tuple[str, ...]
    intents: tuple[str, ...]
    locale: str
    extraction_version: str
    ingested_at: datetime
    text_length: int
    superseded_by_version_id: str | None = None
    # The signed statement of this state (store/sealing.py); None on rows stored before signing.
    seal: Seal | None = None
    source_sha256: str = ""  # "" on versions stored before digests were recorded
    media_type: str = MARKDOWN
    page_count: int = 0

    @property
    def never_effective(self) -> bool:
        """An empty validity window (closed at its own start by a supersession)."""
        return self.valid_to is not None and self.valid_to <= self.valid_from


@dataclasses.dataclass(frozen=True)
class PassageRecord:
    passage_id: str
    tenant_id: str
    document_id: str
    version_id: str
    ordinal: int
    start: int
    end: int
    content_sha256: str
    source_anchor: str
    heading_context: str
    extraction_version: str
    active: bool = True
    page_start: int = 0  # viewer pages (0: the source has no pages)
    page_end: int = 0
    page_label_start: str = ""
    page_label_end: str = ""
    review_state: str = NOT_REQUIRED
    review_reason: str = ""

    @property
    def eligible(self) -> bool:
        """May be answer evidence: nothing to review, or approved by a policy admin."""
        return self.review_state != PENDING


@dataclasses.dataclass(frozen=True)
class ExtractionRecord:
    """One stored extraction: the page map and issues, as dicts of extract.base PageInfo / ExtractionIssue."""

    tenant_id: str
    version_id: str
    extraction_version: str
    source_sha256: str
    media_type: str
    page_map: list
    issues: list


@dataclasses.dataclass(frozen=True)
class StoredPassage:
    """A passage with its exact text (a slice of the version text) and its version."""

    passage: PassageRecord
    text: str
    version: VersionRecord


@dataclasses.dataclass(frozen=True)
class VersionBundle:
    """A version as stored: its record, its full text and ALL its passage rows (active or not):
    everything verify_bundle needs."""

    version: VersionRecord
    text: str
    passages: list[PassageRecord]

    @property
    def active_passages(self) -> list[PassageRecord]:
        return sorted((p for p in self.passages if p.active), key=lambda p: p.ordinal)


@dataclasses.dataclass(frozen=True)
class IngestOutcome:
    version: VersionRecord
    passages: list[PassageRecord]
    created: bool
    # Versions whose validity this one closed (see supersession_end).
    superseded: list[VersionRecord]
    # True when the version existed but was re-extracted with another chunker setting.
    reextracted: bool = False
    # The extraction this ingest made or found (set by the core; None for records read back).
    extraction: object | None = None
    extraction_version: str = ""


def supersession_end(new: VersionRecord, other: VersionRecord) -> datetime | None:
    """The supersession rule, applied when `new` becomes (or is ingested as) approved.

    Another APPROVED version of the same document that started no later than `new` and is still
    effective at new.valid_from (open-ended, or ending after it) is superseded: its valid_to
    becomes new.valid_from and it records superseded_by = new. Its text, status and start are
    never rewritten, so it stays readable and is still the effective version for an `as_of`
    before new.valid_from. If both start at the same instant, the old window becomes empty
    ([t, t)): the old version was never effective and is never eligible again.
    A version that starts after `new` (a scheduled or already newer version) is left alone; instead
    `new` itself ends where the first of those starts (see successor_of), so the outcome does not
    depend on the order in which versions are ingested.
    Returns the new valid_to for `other`, or None when the rule does not apply.
    """
    if other.version_id == new.version_id or other.document_id != new.document_id:
        return None
    if other.status != APPROVED or new.status != APPROVED:
        return None
    if other.valid_from > new.valid_from:
        return None
    if other.valid_to is not None and other.valid_to <= new.valid_from:
        return None
    return new.valid_from


def successor_of(new: VersionRecord, others: list[VersionRecord]) -> VersionRecord | None:
    """The approved version of the same document that starts first after `new` (approved) starts,
    if `new` is still open at that instant: `new` then ends there and is superseded by it."""
    if new.status != APPROVED:
        return None
    later = [o for o in others if o.status == APPROVED and o.document_id == new.document_id
             and o.version_id != new.version_id and o.valid_from > new.valid_from]
    if not later:
        return None
    first = min(later, key=lambda o: (o.valid_from, o.version_id))
    if new.valid_to is not None and new.valid_to <= first.valid_from:
        return None
    return first


SUPERSEDED_EVENT, RETIRED_EVENT = "superseded", "retired"


@dataclasses.dataclass(frozen=True)
class VersionEvent:
    """A row of the version-event outbox: something the trace service must hear about."""

    id: int
    tenant_id: str
    version_id: str
    kind: str  # superseded | retired
    replaced_by_version_id: str
    created_at: datetime
    attempts: int
    delivered_at: datetime | None = None
    last_error: str = ""
