"""The trace authority's behaviour (no grpc): append-only records on a per-tenant hash chain, reads
with tenant and role checks, reviews, version events, chain verification and retention.

Read rules
----------
* Another tenant's trace does not exist for the caller (NOT_FOUND), whatever the roles.
* Reading traces needs one of READ_ROLES; writing a record needs role `service` and the record's
  tenant must be the token's tenant.
* Query text (raw and normalized) is returned only to `reviewer` and `auditor`; everyone else gets it
  blanked (the `redacted` flag tells whether it was erased by retention).
* Passage text is not stored: the record keeps each retrieved passage's identity (IDs, version,
  span, digest, anchor). A full read (TRACE_VIEW_FULL, the default) asks retrieval's GetPassages
  with the reader's own credentials, so retrieval's audience rule alone decides which text the
  reader sees, and shows a text only when it hashes to the digest the chained record stores (a
  writer of retrieval's database cannot make a trace show forged evidence). Retrieval down: the
  record is returned by identity, and the response says why the text is missing.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import heapq
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from citetrace import vocab as R
from citetrace.identity import sha256_hex
from citetrace.kit.auth import Principal
from citetrace.kit.errors import (
    AlreadyExists,
    DataLoss,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
)
from citetrace.kit.metrics import (
    CHECKPOINT_MISMATCHES,
    REVIEW_BACKLOG,
    record_digest_failure,
    record_signature_failure,
)
from citetrace.kit.telemetry import set_attributes, stage
from citetrace.kit.timestamps import from_timestamp, naive_utc, to_timestamp, utc_now
from citetrace.kit.validation import pattern
from citetrace.signing import SignatureError
from citetrace.trace.v1 import trace_service_pb2 as pb

from services.trace import canonical as C
from services.trace.sealing import ChainSealer, Checkpoint, CheckpointSink, seal_message
from services.trace.store import (
    ListFilter,
    NewLink,
    NewRecord,
    RedactionRow,
    ReviewRow,
    Seal,
    Sealer,
    StoredLink,
    StoredRecord,
    TenantEvents,
    TraceStore,
    VersionEventRow,
)

log = logging.getLogger("citetrace.trace")

READ_ROLES = frozenset({R.STAFF, R.REVIEWER, R.AUDITOR, R.POLICY_ADMIN})
WRITE_ROLES = frozenset({R.SERVICE})
REVIEW_ROLES = frozenset({R.REVIEWER})
VERSION_EVENT_ROLES = frozenset({R.SERVICE, R.POLICY_ADMIN})
ACTION_EVENT_ROLES = frozenset({R.SERVICE})
LINK_ACTION = "action"
RETENTION_ROLES = frozenset({R.AUDITOR, R.POLICY_ADMIN, R.SERVICE})
QUERY_TEXT_ROLES = frozenset(R.READERS_OF_QUERY_TEXT)

TRACE_ID_PATTERN = pattern("trace_id")  # field_rules.yaml; matched whole
DEFAULT_PAGE_SIZE = 50
MAX_RUBRIC_NOTE = 8000


@dataclasses.dataclass(frozen=True)
class RecordResult:
    trace_id: str
    record_hash: str
    created: bool


@dataclasses.dataclass(frozen=True)
class ChainReport:
    ok: bool
    records_checked: int
    first_broken_trace_id: str = ""
    first_broken_sequence: int = 0
    detail: str = ""
    # The latest signed checkpoint the chain was checked against (0: none) and what was found.
    checkpoint_sequence: int = 0
    checkpoint_detail: str = ""


@dataclasses.dataclass(frozen=True)
class Page:
    """One page of a listing: the items and the token of the next page ("" at the end)."""

    items: list
    next_page_token: str = ""


@dataclasses.dataclass
class ReadbackReport:
    """What reading the retrieved passages' text back through retrieval found."""

    filled: int = 0
    not_visible: int = 0
    digest_mismatch: int = 0
    unavailable_reason: str = ""


@dataclasses.dataclass(frozen=True)
class TraceView:
    """A stored answer as the caller may see it, with its reviews, redactions and chain links."""

    record: pb.TraceRecord
    passage_text: ReadbackReport | None  # None for the basic view (no text read back)
    reviews: list[ReviewRow]
    redactions: list[RedactionRow]
    links: list[StoredLink]


@dataclasses.dataclass(frozen=True)
class TraceQuery:
    """ListTraces: filters (zero values mean any) and the page."""

    page_size: int = 0
    page_token: str = ""
    outcome: int = 0
    failure_reason: int = 0
    created_after: dt.datetime | None = None
    created_before: dt.datetime | None = None
    document_id: str = ""
    version_id: str = ""
    needs_review: bool = False


VIEWS = ("basic", "full")


class MonotonicClock:
    """UTC now as a naive datetime, strictly increasing within the process (events recorded back
    to back stay ordered even when the wall clock does not advance between them)."""

    def __init__(self, source: Callable[[], dt.datetime] | None = None) -> None:
        self._source = source or (lambda: naive_utc(utc_now()))
        self._last = dt.datetime.min
        self._lock = threading.Lock()

    def __call__(self) -> dt.datetime:
        with self._lock:
            now = self._source()
            if now <= self._last:
                now = self._last + dt.timedelta(microseconds=1)
            self._last = now
            return now


def _require_role(principal: Principal, allowed: frozenset[str], action: str) -> None:
    if not principal.has_any_role(allowed):
        raise PermissionDenied("ROLE_REQUIRED", f"{action} needs one of the roles {', '.join(sorted(allowed))}",
                               required=",".join(sorted(allowed)))


def encode_page_token(value: int) -> str:
    return base64.urlsafe_b64encode(f"v1:{value}".encode()).decode().rstrip("=")


def decode_page_token(token: str) -> int | None:
    if not token:
        return None
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        prefix, _, number = text.partition(":")
        if prefix != "v1":
            raise ValueError(prefix)
        value = int(number)
        if value < 0:
            raise ValueError(number)
        return value
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument("INVALID_PAGE_TOKEN", "page_token is not a token this service issued", field="page_token") from exc


MAX_ID_CHARS = 256


def _check_lengths(record: pb.TraceRecord, facet_set: C.Facets) -> None:
    if len(record.principal_ref) > MAX_ID_CHARS:
        raise InvalidArgument("FIELD_TOO_LONG", f"record.principal_ref must be at most {MAX_ID_CHARS} characters", field="record.principal_ref")
    for kind, value in facet_set.rows():
        if len(value) > MAX_ID_CHARS:
            raise InvalidArgument("FIELD_TOO_LONG",
                                  f"a cited {kind} ID in record.parts[].citations is longer than {MAX_ID_CHARS} "
                                  "characters", field="record.parts.citations")


@dataclasses.dataclass
class PassageReadback:
    """Texts retrieval returned to the reader, and the passages it set aside."""

    texts: dict[str, str] = dataclasses.field(default_factory=dict)
    not_visible: set[str] = dataclasses.field(default_factory=set)
    corrupt: set[str] = dataclasses.field(default_factory=set)


class PassagesUnavailable(Exception):
    """Retrieval could not be asked (down, too slow): no text can be read back."""


class PassageReader(Protocol):
    def read(self, passage_ids: Sequence[str]) -> PassageReadback:
        """The texts of these passages as the current caller may read them (raises PassagesUnavailable)."""
        ...


def without_passage_text(record: pb.TraceRecord) -> None:
    """The stored form: retrieved passages by identity only."""
    for part in record.parts:
        for hit in part.retrieval.retrieved:
            hit.passage.text = ""


class TraceCore:
    """Built by services/trace/bootstrap.py; opened (migrations) at warm-up."""

    def __init__(self, store: TraceStore, *, sealer: ChainSealer, checkpoints: CheckpointSink | None = None,
                 retention_days: int = 365, clock: Callable[[], dt.datetime] | None = None,
                 max_page_size: int = 500, passages: PassageReader | None = None) -> None:
        self.store = store
        self.sealer = sealer
        self.checkpoints = checkpoints
        self.passages = passages
        self.retention_days = retention_days
        self.now = MonotonicClock(clock) if not isinstance(clock, MonotonicClock) else clock
        self.max_page_size = max_page_size
        self._ready = False
        self._last_checkpoint: float | None = None

    def open(self) -> None:
        """Brings the store's schema up to date; the core serves from then on."""
        self.store.migrate()
        self._ready = True

    @property
    def ready(self) -> bool:
        return self._ready

    def _sealed(self, tenant_id: str, hash_of: Callable[[int, str], str]) -> Sealer:
        """The store's sealer: the item's hash at its place in the chain, signed with the trace key."""
        def seal(sequence: int, previous_hash: str) -> Seal:
            item_hash = hash_of(sequence, previous_hash)
            key_id, signature = self.sealer.sign(seal_message(tenant_id, sequence, item_hash))
            return Seal(item_hash, key_id, signature)

        return seal

    def _link_sealer(self, link: NewLink) -> Sealer:
        return self._sealed(link.tenant_id, lambda sequence, previous: link_hash_of(link, sequence, previous))

    # -- writing --------------------------------------------------------------------------------

    def record_trace(self, principal: Principal, record: pb.TraceRecord) -> RecordResult:
        if not record.trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "record.trace_id is required", field="record.trace_id")
        if not TRACE_ID_PATTERN.fullmatch(record.trace_id):
            raise InvalidArgument("INVALID_TRACE_ID",
                                  "record.trace_id must be 1-128 characters of [0-9A-Za-z._:-]", field="record.trace_id")
        _require_role(principal, WRITE_ROLES, "RecordTrace")
        if record.tenant_id and record.tenant_id != principal.tenant_id:
            raise PermissionDenied("TENANT_MISMATCH", "record.tenant_id must be the token's tenant")
        with stage("trace", "trace.record", tenant=principal.tenant_id, parts=len(record.parts)) as span:
            given_created_at = record.HasField("created_at")
            incoming = pb.TraceRecord()
            incoming.CopyFrom(record)
            incoming.tenant_id = principal.tenant_id
            without_passage_text(incoming)  # a sender's copy of passage text is never kept
            if not given_created_at:
                incoming.created_at.CopyFrom(to_timestamp(self.now()))
            body = C.body_bytes(incoming)
            raw, normalized = record.query.raw, record.query.normalized
            nonce = C.new_nonce()
            digest = C.query_digest(raw, normalized, nonce)
            facet_set = C.facets_of(incoming)
            _check_lengths(record, facet_set)
            new = NewRecord(
                tenant_id=principal.tenant_id, trace_id=record.trace_id,
                created_at=naive_utc(from_timestamp(incoming.created_at)), outcome=facet_set.outcome,
                principal_ref=record.principal_ref, body=body, query_raw=raw, query_normalized=normalized,
                nonce=nonce, query_digest=digest, facets=frozenset(facet_set.rows()))

            def hasher(sequence: int, previous_hash: str) -> str:
                return C.record_hash(tenant_id=new.tenant_id, trace_id=new.trace_id, sequence=sequence,
                                     previous_hash=previous_hash, query_digest=digest, body=body)

            result = self.store.append(new, self._sealed(new.tenant_id, hasher))
            set_attributes(span, created=result.created)
            if not result.created:
                self._check_same(result.record, incoming, given_created_at, raw, normalized)
            return RecordResult(record.trace_id, result.record.record_hash, result.created)

    @staticmethod
    def _check_same(stored: StoredRecord, incoming: pb.TraceRecord, given_created_at: bool,
                    raw: str, normalized: str) -> None:
        if not given_created_at:
            incoming.created_at.CopyFrom(to_timestamp(stored.created_at))
        same = C.body_bytes(incoming) == stored.body
        if same and not stored.redacted:
            same = (raw, normalized) == (stored.query_raw, stored.query_normalized)
        if not same:
            raise AlreadyExists("TRACE_ID_CONFLICT",
                                f"trace {incoming.trace_id} is already stored with a different record",
                                trace_id=incoming.trace_id)

    # -- reading --------------------------------------------------------------------------------

    def _stored(self, principal: Principal, trace_id: str) -> StoredRecord:
        if not trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "trace_id is required", field="trace_id")
        stored = self.store.get(principal.tenant_id, trace_id)
        if stored is None:
            raise NotFound("TRACE_NOT_FOUND", f"no trace {trace_id}", trace_id=trace_id)
        return stored

    def view(self, principal: Principal, stored: StoredRecord) -> pb.TraceRecord:
        """The record as this caller may see it."""
        record = pb.TraceRecord.FromString(stored.body)
        record.previous_hash = stored.previous_hash
        record.record_hash = stored.record_hash
        record.sequence = stored.sequence
        record.needs_review = stored.needs_review
        record.query.redacted = stored.redacted
        if principal.has_any_role(QUERY_TEXT_ROLES) and not stored.redacted:
            record.query.raw = stored.query_raw
            record.query.normalized = stored.query_normalized
        if not principal.has_any_role(QUERY_TEXT_ROLES):
            # Fragments of the question (a date of birth as a date entity) and who asked it are the
            # question's: only its readers see them (issue 17 §5). Kinds and resolved values stay.
            record.principal_ref = ""
            for entity in record.route.entities:
                entity.surface = ""
        return record

    def read_back_passages(self, record: pb.TraceRecord) -> ReadbackReport:
        """Fills the retrieved passages' text that retrieval shows the current caller and that
        still hashes to the digest in the record; says what could not be filled and why."""
        hits = [hit for part in record.parts for hit in part.retrieval.retrieved]
        report = ReadbackReport()
        if not hits:
            return report
        if self.passages is None:
            report.unavailable_reason = "no retrieval target configured: passage text cannot be read back"
            return report
        with stage("trace", "trace.read_passages", passages=len(hits)) as span:
            try:
                found = self.passages.read([hit.passage.identity.passage_id for hit in hits])
            except PassagesUnavailable as err:
                report.unavailable_reason = str(err)
                set_attributes(span, unavailable=True)
                return report
            for hit in hits:
                ident = hit.passage.identity
                text = found.texts.get(ident.passage_id)
                if ident.passage_id in found.corrupt or (text is not None and sha256_hex(text) != ident.content_sha256):
                    report.digest_mismatch += 1
                elif text is None:
                    report.not_visible += 1
                else:
                    hit.passage.text = text
                    report.filled += 1
            if report.digest_mismatch:
                record_digest_failure("trace", "passage_span")
            set_attributes(span, filled=report.filled, not_visible=report.not_visible,
                           digest_mismatch=report.digest_mismatch)
        return report

    def get_trace(self, principal: Principal, trace_id: str, view: str = "full") -> TraceView:
        """`view` "full" reads the retrieved passages' text back through retrieval; "basic" does not."""
        if not trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "trace_id is required", field="trace_id")
        if view not in VIEWS:
            raise InvalidArgument("INVALID_VIEW", f"view {view} is not a TraceView", field="view")
        _require_role(principal, READ_ROLES, "GetTrace")
        stored = self._stored(principal, trace_id)
        reviews = self.store.list_reviews(principal.tenant_id, trace_id, 0, 10_000)
        redactions = self.store.redactions(principal.tenant_id, trace_id)
        links = self.store.links(principal.tenant_id, subject_trace_id=trace_id, limit=10_000)
        self._check_served(stored, reviews, redactions, links)
        record = self.view(principal, stored)
        return TraceView(
            record=record,
            passage_text=self.read_back_passages(record) if view == "full" else None,
            reviews=reviews, redactions=redactions, links=links)

    def _check_served(self, stored: StoredRecord, reviews: list[ReviewRow], redactions: list[RedactionRow],
                      links: list[StoredLink]) -> None:
        """A record is served only as the trace authority sealed it: its content against its hash
        and signature, each review and redaction against its signed chain link, a redacted question
        only with its redaction event. Otherwise DATA_LOSS with the exact reason (never shown)."""
        tenant = stored.tenant_id

        def refuse(reason: str, detail: str) -> None:
            record_digest_failure("trace", "trace_chain")
            raise DataLoss(reason, f"trace {stored.trace_id} (sequence {stored.sequence}): {detail}; it is not "
                           "served (run `citetrace trace verify`)", trace_id=stored.trace_id)

        problem = _record_problem(stored) or _signature_problem(
            self.sealer, tenant, stored.sequence, stored.record_hash, stored.key_id, stored.signature)
        if problem:
            refuse("TRACE_RECORD_TAMPERED", problem)
        by_id = {(link.kind, link.link_id): link for link in links}
        expected = [((C.LINK_REVIEW, r.review_id), _review_body(r), "review " + r.review_id) for r in reviews]
        expected += [((C.LINK_REDACTION, C.redaction_link_id(r.trace_id)), _redaction_body(r), "redaction")
                     for r in redactions]
        for key, body, what in expected:
            link = by_id.get(key)
            if link is None or link.body != body:
                refuse("TRACE_EVENT_TAMPERED", f"the {what} differs from its chain link or has none")
            problem = ("link_hash does not match the stored link content"
                       if link_hash_of(link, link.sequence, link.previous_hash) != link.link_hash else
                       _signature_problem(self.sealer, tenant, link.sequence, link.link_hash, link.key_id,
                                          link.signature))
            if problem:
                refuse("TRACE_EVENT_TAMPERED", f"the chain link of the {what}: {problem}")
        if stored.redacted and (C.LINK_REDACTION, C.redaction_link_id(stored.trace_id)) not in by_id:
            refuse("TRACE_REDACTION_WITHOUT_EVENT", "its question is marked redacted without a redaction event")

    def _page_size(self, requested: int) -> int:
        if requested < 0:
            raise InvalidArgument("PAGE_SIZE_OUT_OF_RANGE", "page_size must be >= 0", field="page_size")
        return min(requested or DEFAULT_PAGE_SIZE, self.max_page_size)

    def list_traces(self, principal: Principal, query: TraceQuery) -> Page:
        """Stored records (StoredRecord) of the caller's tenant, newest first."""
        size = self._page_size(query.page_size)
        _require_role(principal, READ_ROLES, "ListTraces")
        before = decode_page_token(query.page_token)
        after = naive_utc(query.created_after) if query.created_after is not None else None
        until = naive_utc(query.created_before) if query.created_before is not None else None
        if after is not None and until is not None and after >= until:
            raise InvalidArgument("INVALID_TIME_RANGE", "created_after must be before created_before", field="created_after")
        flt = ListFilter(outcome=query.outcome, failure_reason=query.failure_reason,
                         created_after=after, created_before=until, document_id=query.document_id,
                         version_id=query.version_id, needs_review=query.needs_review)
        rows = self.store.list(principal.tenant_id, flt, before, size + 1)
        token = encode_page_token(rows[size - 1].sequence) if len(rows) > size else ""
        return Page(rows[:size], token)

    # -- reviews and version events ---------------------------------------------------------------

    def record_review(self, principal: Principal, trace_id: str, decision: int, rubric_note: str = "",
                      answer_record_hash: str = "") -> ReviewRow:
        """`decision` is a ReviewDecision number (0: missing)."""
        if not trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "trace_id is required", field="trace_id")
        if decision == pb.REVIEW_DECISION_UNSPECIFIED:
            raise InvalidArgument("MISSING_DECISION", "decision is required (accepted, rejected, needs-change)", field="decision")
        if decision not in pb.ReviewDecision.values():
            raise InvalidArgument("INVALID_DECISION", f"decision {decision} is not a ReviewDecision", field="decision")
        if len(rubric_note) > MAX_RUBRIC_NOTE:
            raise InvalidArgument("RUBRIC_NOTE_TOO_LONG", f"rubric_note must be at most {MAX_RUBRIC_NOTE} characters", field="rubric_note")
        _require_role(principal, REVIEW_ROLES, "RecordReview")
        stored = self._stored(principal, trace_id)
        if answer_record_hash and answer_record_hash != stored.record_hash:
            raise FailedPrecondition(
                "ANSWER_VERSION_MISMATCH",
                f"answer_record_hash does not match the stored record of trace {trace_id}",
                record_hash=stored.record_hash)
        record = pb.TraceRecord.FromString(stored.body)
        evidence = sorted({c.version_id for c in C.cited(record) if c.version_id})
        row = ReviewRow(
            review_id=uuid.uuid4().hex, tenant_id=principal.tenant_id, trace_id=stored.trace_id,
            decision=int(decision), reviewer_ref=principal.subject, rubric_note=rubric_note,
            answer_record_hash=stored.record_hash, evidence_version_ids=tuple(evidence),
            source_policy_version=record.source_policy_version, created_at=self.now())
        link = review_link(row)
        self.store.add_review(row, link, self._link_sealer(link))
        return row

    def list_reviews(self, principal: Principal, trace_id: str, page_size: int = 0, page_token: str = "") -> Page:
        """The reviews (ReviewRow) of one stored answer, oldest first."""
        if not trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "trace_id is required", field="trace_id")
        size = self._page_size(page_size)
        _require_role(principal, READ_ROLES, "ListReviews")
        offset = decode_page_token(page_token) or 0
        self._stored(principal, trace_id)
        rows = self.store.list_reviews(principal.tenant_id, trace_id, offset, size + 1)
        return Page(rows[:size], encode_page_token(offset + size) if len(rows) > size else "")

    def record_version_event(self, principal: Principal, version_id: str, kind: int,
                             replaced_by_version_id: str = "") -> int:
        """`kind` is a VersionEventKind number; returns how many stored answers cited the version."""
        if not version_id:
            raise InvalidArgument("MISSING_VERSION_ID", "version_id is required", field="version_id")
        if kind == pb.VERSION_EVENT_KIND_UNSPECIFIED:
            raise InvalidArgument("MISSING_KIND", "kind is required (superseded or retired)", field="kind")
        if kind not in pb.VersionEventKind.values():
            raise InvalidArgument("INVALID_KIND", f"kind {kind} is not a VersionEventKind", field="kind")
        _require_role(principal, VERSION_EVENT_ROLES, "RecordVersionEvent")
        row = VersionEventRow(
            tenant_id=principal.tenant_id, version_id=version_id, kind=int(kind),
            replaced_by_version_id=replaced_by_version_id, actor_ref=principal.subject,
            created_at=self.now())
        link = version_event_link(row)
        return self.store.add_version_event(row, link, self._link_sealer(link))

    # -- chain links: workflow actions ----------------------------------------------------------

    def record_action_event(self, principal: Principal, event: pb.ActionEvent) -> tuple[StoredLink, bool]:
        if not TRACE_ID_PATTERN.fullmatch(event.event_id):
            raise InvalidArgument("INVALID_EVENT_ID", "event.event_id must be 1-128 characters of [0-9A-Za-z._:-]", field="event.event_id")
        if event.kind == pb.ACTION_EVENT_KIND_UNSPECIFIED:
            raise InvalidArgument("MISSING_KIND", "event.kind is required", field="event.kind")
        if event.ask_trace_id and not TRACE_ID_PATTERN.fullmatch(event.ask_trace_id):
            raise InvalidArgument("INVALID_TRACE_ID", "event.ask_trace_id must be 1-128 characters of [0-9A-Za-z._:-]", field="event.ask_trace_id")
        if len(event.proposal_id) > 128:
            raise InvalidArgument("FIELD_TOO_LONG", "event.proposal_id must be at most 128 characters",
                                  field="event.proposal_id")
        if len(event.actor_ref) > MAX_ID_CHARS:
            raise InvalidArgument("FIELD_TOO_LONG", f"event.actor_ref must be at most {MAX_ID_CHARS} characters",
                                  field="event.actor_ref")
        _require_role(principal, ACTION_EVENT_ROLES, "RecordActionEvent")
        with stage("trace", "trace.record_action", tenant=principal.tenant_id) as span:
            body = event.SerializeToString(deterministic=True)
            new = NewLink(tenant_id=principal.tenant_id, link_id=event.event_id, kind=LINK_ACTION,
                          subject_trace_id=event.ask_trace_id, subject_ref=event.proposal_id,
                          created_at=self.now(), body=body)

            created, stored = self.store.append_link(new, self._link_sealer(new))
            set_attributes(span, created=created)
        if not created and (stored.kind, stored.body) != (LINK_ACTION, body):
            raise AlreadyExists("EVENT_ID_CONFLICT", f"action event {event.event_id} is already stored with other "
                                "content", event_id=event.event_id)
        return stored, created

    def list_chain_links(self, principal: Principal, *, subject_trace_id: str = "", proposal_id: str = "",
                         page_size: int = 0, page_token: str = "") -> Page:
        """Chain links (StoredLink) of the caller's tenant in chain order, optionally of one Ask or proposal."""
        size = self._page_size(page_size)
        _require_role(principal, READ_ROLES, "ListChainLinks")
        after = decode_page_token(page_token) or 0
        rows = self.store.links(principal.tenant_id, subject_trace_id=subject_trace_id or None,
                                subject_ref=proposal_id or None, after_sequence=after, limit=size + 1)
        return Page(rows[:size], encode_page_token(rows[size - 1].sequence) if len(rows) > size else "")

    # -- chain verification and retention ---------------------------------------------------------

    def verify_chain(self, principal: Principal, tenant_id: str = "") -> ChainReport:
        _require_role(principal, READ_ROLES | {R.SERVICE}, "VerifyChain")
        if tenant_id and tenant_id != principal.tenant_id:
            raise NotFound("TENANT_NOT_FOUND", f"no chain for tenant {tenant_id}")
        return self.verify_tenant(principal.tenant_id)

    def verify_tenant(self, tenant_id: str) -> ChainReport:
        """The tenant's chain against its signatures and its latest signed checkpoint."""
        with stage("trace", "trace.verify", tenant=tenant_id) as span:
            report = verify_chain(self.store, tenant_id, self.sealer, self.checkpoints)
            set_attributes(span, ok=report.ok, records_checked=report.records_checked)
        if not report.ok:
            record_digest_failure("trace", "trace_chain")
        return report

    # -- checkpoints ----------------------------------------------------------------------------

    def checkpoint(self, principal: Principal) -> tuple[Checkpoint, str]:
        """On demand: the caller's tenant's head as a signed checkpoint in the sink."""
        _require_role(principal, RETENTION_ROLES, "CheckpointChain")
        return self.checkpoint_tenant(principal.tenant_id)

    def checkpoint_tenant(self, tenant_id: str) -> tuple[Checkpoint, str]:
        """Verifies the chain since the latest checkpoint, then writes the head as a new signed
        checkpoint (a chain that no longer verifies is not checkpointed: FAILED_PRECONDITION with
        the reason, so a rewrite cannot be sealed over)."""
        if self.checkpoints is None:
            raise FailedPrecondition("NO_CHECKPOINT_SINK", "no checkpoint sink is configured")
        with stage("trace", "trace.checkpoint", tenant=tenant_id) as span:
            report = self.verify_tenant(tenant_id)
            if not report.ok:
                set_attributes(span, ok=False)
                raise FailedPrecondition(
                    "CHAIN_BROKEN", f"the chain does not verify at sequence {report.first_broken_sequence}: "
                    f"{report.detail}", sequence=str(report.first_broken_sequence))
            head = self.store.head(tenant_id)
            sequence, head_hash = (head.sequence, head.record_hash) if head else (0, C.GENESIS_HASH)
            checkpoint = self.sealer.checkpoint(tenant_id, sequence, head_hash, self.now())
            where = self.checkpoints.write(checkpoint)
            set_attributes(span, ok=True, sequence=sequence)
        self._last_checkpoint = time.monotonic()
        return checkpoint, where

    def checkpoint_all(self) -> dict[str, int]:
        """The scheduled pass: every tenant's chain verified (signature failures and checkpoint
        mismatches are counted and alerted), and a checkpoint written for each whose head moved."""
        done: dict[str, int] = {}
        if self.checkpoints is None:
            return done
        for tenant in self.store.tenants():
            report = self.verify_tenant(tenant)
            if not report.ok:
                log.error("trace: tenant %s not checkpointed: its chain does not verify at sequence %d: %s",
                          tenant, report.first_broken_sequence, report.detail)
                continue
            head = self.store.head(tenant)
            latest, _ = self.checkpoints.latest(tenant)
            if head is None or (latest is not None and latest.sequence == head.sequence
                                and latest.head_hash == head.record_hash):
                continue
            checkpoint = self.sealer.checkpoint(tenant, head.sequence, head.record_hash, self.now())
            self.checkpoints.write(checkpoint)
            self._last_checkpoint = time.monotonic()
            done[tenant] = checkpoint.sequence
        return done

    def review_backlog(self, older_than: dt.timedelta) -> int:
        """Answers (all tenants) that have needed re-review for longer than `older_than`."""
        count = self.store.review_backlog(self.now() - older_than)
        REVIEW_BACKLOG.labels(service="trace").set(count)
        return count

    def checkpoint_age(self) -> float | None:
        """Seconds since this process wrote its last checkpoint (None: none yet)."""
        return None if self._last_checkpoint is None else time.monotonic() - self._last_checkpoint

    def apply_retention(self, principal: Principal, retention_days: int) -> int:
        if retention_days < 0:
            raise InvalidArgument("RETENTION_OUT_OF_RANGE", "retention_days must be >= 0", field="retention_days")
        _require_role(principal, RETENTION_ROLES, "ApplyRetention")
        days = retention_days or self.retention_days
        if days <= 0:
            raise FailedPrecondition("RETENTION_DISABLED", "no retention period configured or requested")
        return self._redact(principal.tenant_id, days, principal.subject)

    def _redact(self, tenant_id: str, days: int, actor_ref: str) -> int:
        now = self.now()
        with stage("trace", "trace.retention", tenant=tenant_id) as span:
            redacted = self.store.redact_older_than(
                tenant_id, now - dt.timedelta(days=days),
                reason=f"retention: query text older than {days} days", actor_ref=actor_ref, now=now,
                link_of=redaction_link, seal_link=self._link_sealer)
            set_attributes(span, redacted=redacted)
        return redacted

    def apply_retention_all(self) -> dict[str, int]:
        """The scheduled retention pass over every tenant with records (configured period)."""
        if self.retention_days <= 0:
            return {}
        return {tenant: self._redact(tenant, self.retention_days, "system:retention")
                for tenant in self.store.tenants()}


def link_hash_of(link: NewLink | StoredLink, sequence: int, previous_hash: str) -> str:
    return C.link_hash(tenant_id=link.tenant_id, link_id=link.link_id, kind=link.kind, sequence=sequence,
                       previous_hash=previous_hash, subject_trace_id=link.subject_trace_id,
                       subject_ref=link.subject_ref, created_at=link.created_at.isoformat(), body=link.body)


def review_link(row: ReviewRow) -> NewLink:
    return NewLink(tenant_id=row.tenant_id, link_id=row.review_id, kind=C.LINK_REVIEW, subject_trace_id=row.trace_id,
                   subject_ref="", created_at=row.created_at, body=_review_body(row))


def _review_body(row: ReviewRow) -> bytes:
    return C.review_body(review_id=row.review_id, trace_id=row.trace_id, decision=row.decision,
                         reviewer_ref=row.reviewer_ref, rubric_note=row.rubric_note,
                         answer_record_hash=row.answer_record_hash, evidence_version_ids=row.evidence_version_ids,
                         source_policy_version=row.source_policy_version, created_at=row.created_at.isoformat())


def version_event_link(row: VersionEventRow) -> NewLink:
    return NewLink(tenant_id=row.tenant_id,
                   link_id=C.version_event_link_id(row.version_id, row.kind, row.replaced_by_version_id),
                   kind=C.LINK_VERSION_EVENT, subject_trace_id="", subject_ref=row.version_id[:128],
                   created_at=row.created_at, body=_version_event_body(row))


def _version_event_body(row: VersionEventRow) -> bytes:
    return C.version_event_body(version_id=row.version_id, kind=row.kind,
                                replaced_by_version_id=row.replaced_by_version_id, actor_ref=row.actor_ref,
                                created_at=row.created_at.isoformat())


def redaction_link(row: RedactionRow) -> NewLink:
    return NewLink(tenant_id=row.tenant_id, link_id=C.redaction_link_id(row.trace_id), kind=C.LINK_REDACTION,
                   subject_trace_id=row.trace_id, subject_ref="", created_at=row.redacted_at,
                   body=_redaction_body(row))


def _redaction_body(row: RedactionRow) -> bytes:
    return C.redaction_body(trace_id=row.trace_id, redacted_at=row.redacted_at.isoformat(), reason=row.reason,
                            actor_ref=row.actor_ref)


class _EventRows:
    """The tenant's review, version event and redaction rows by the ID of the link each must have."""

    def __init__(self, events: TenantEvents) -> None:
        self.rows: dict[tuple[str, str], bytes] = {}
        self.about: dict[tuple[str, str], str] = {}  # -> the trace the row is about
        for review in events.reviews:
            self._add(C.LINK_REVIEW, review.review_id, _review_body(review), review.trace_id)
        for event in events.version_events:
            self._add(C.LINK_VERSION_EVENT, version_event_link(event).link_id, _version_event_body(event), "")
        for redaction in events.redactions:
            self._add(C.LINK_REDACTION, C.redaction_link_id(redaction.trace_id), _redaction_body(redaction),
                      redaction.trace_id)
        self.linked: set[tuple[str, str]] = set()

    def _add(self, kind: str, link_id: str, body: bytes, trace_id: str) -> None:
        key = (kind, link_id)
        # Two rows for one link (a second redaction of a record, a duplicated review): the extra one is
        # unlinked and reported; keep the first body for the comparison.
        if key in self.rows:
            key = (kind, link_id + "#duplicate")
        self.rows.setdefault(key, body)
        self.about[key] = trace_id

    def check(self, link: StoredLink) -> str:
        key = (link.kind, link.link_id)
        self.linked.add(key)
        table = {C.LINK_REVIEW: "trace_reviews", C.LINK_VERSION_EVENT: "trace_version_events",
                 C.LINK_REDACTION: "trace_redactions"}[link.kind]
        row = self.rows.get(key)
        if row is None:
            return f"its row in {table} is missing (deleted behind the service)"
        if row != link.body:
            return f"its row in {table} differs from the chained event (edited behind the service)"
        return ""

    def unlinked(self) -> list[tuple[str, str, str]]:
        """(kind, link ID, trace ID) of rows no chain link holds (written behind the service)."""
        return [(kind, link_id, self.about[(kind, link_id)]) for kind, link_id in self.rows
                if (kind, link_id) not in self.linked]


_EVENT_KINDS = (C.LINK_REVIEW, C.LINK_VERSION_EVENT, C.LINK_REDACTION)


def _broken_link(link: StoredLink, events: _EventRows) -> str:
    """Why a stored link does not verify ('' when it does), apart from its place in the chain."""
    if link_hash_of(link, link.sequence, link.previous_hash) != link.link_hash:
        return "link_hash does not match the stored link content"
    if link.kind in _EVENT_KINDS:
        return events.check(link)
    if link.kind != LINK_ACTION:
        return f"unknown link kind {link.kind!r}"
    try:
        event = pb.ActionEvent.FromString(link.body)
    except Exception:  # noqa: BLE001 - a corrupt body is a broken link, not a crash
        return "stored body is not an ActionEvent"
    if (event.event_id, event.ask_trace_id, event.proposal_id) != (link.link_id, link.subject_trace_id,
                                                                    link.subject_ref):
        return "indexed columns disagree with the stored link"
    return ""


def _chain_items(store: TraceStore, tenant_id: str):
    """Records and links of the tenant's chain, merged in sequence order."""
    def links():
        after = 0
        while True:
            batch = store.links(tenant_id, after_sequence=after, limit=500)
            if not batch:
                return
            yield from batch
            after = batch[-1].sequence

    return heapq.merge(store.chain(tenant_id), links(), key=lambda item: item.sequence)


def _signature_problem(sealer: ChainSealer, tenant_id: str, sequence: int, item_hash: str, key_id: str,
                       signature: str) -> str:
    try:
        sealer.verify(key_id, seal_message(tenant_id, sequence, item_hash), signature)
    except SignatureError as err:
        record_signature_failure("trace", "trace_link")
        return f"signature {err.reason}: {err.message} (rewritten behind the service: the hash was recomputed " \
               "without the trace signing key)"
    return ""


def _record_problem(stored: StoredRecord) -> str:
    """Why a stored record's content does not verify ('' when it does)."""
    recomputed = C.record_hash(tenant_id=stored.tenant_id, trace_id=stored.trace_id, sequence=stored.sequence,
                               previous_hash=stored.previous_hash, query_digest=stored.query_digest,
                               body=stored.body)
    if recomputed != stored.record_hash:
        return "record_hash does not match the stored record content"
    if stored.redacted:
        if stored.query_raw or stored.query_normalized:
            return "query text present on a redacted record"
    elif stored.nonce is None or C.query_digest(
            stored.query_raw, stored.query_normalized, stored.nonce) != stored.query_digest:
        return "query text does not match its committed digest"
    try:
        body = pb.TraceRecord.FromString(stored.body)
    except Exception:  # noqa: BLE001 - a corrupt body is a broken link, not a crash
        return "stored body is not a TraceRecord"
    facet_set = C.facets_of(body)
    if (body.tenant_id != stored.tenant_id or body.trace_id != stored.trace_id
            or facet_set.outcome != stored.outcome or naive_utc(from_timestamp(body.created_at)) != stored.created_at):
        return "indexed columns disagree with the stored record"
    if frozenset(facet_set.rows()) != stored.facets:
        return "filter index (facets) disagrees with the stored record"
    return ""


def verify_chain(store: TraceStore, tenant_id: str, sealer: ChainSealer,
                 checkpoints: CheckpointSink | None = None) -> ChainReport:
    """Walks the tenant's chain in sequence order and reports the first broken item: a gap in the
    sequence, a previous_hash that does not name the item before, a hash that does not match the
    stored content, a signature the trace key did not make (a rehashed rewrite), query text that
    does not match its committed digest, indexed columns or facets that disagree with the body, a
    review / version event / redaction row that differs from its chain link or has none, a redacted
    question without its redaction event, a chain head that disagrees with the last item, and a
    chain that ends before (or differs at) the latest signed checkpoint outside the database."""
    expected_prev = C.GENESIS_HASH
    expected_seq = 1
    checked = 0
    checkpoint, where = checkpoints.latest(tenant_id) if checkpoints is not None else (None, "no checkpoint sink")
    cp_sequence = checkpoint.sequence if checkpoint else 0
    cp_note = where if checkpoint is None else f"checkpoint {where} (sequence {cp_sequence}, {checkpoint.created_at})"
    hash_at_checkpoint = ""
    events = _EventRows(store.tenant_events(tenant_id))
    sequence_of: dict[str, int] = {}
    redacted: list[tuple[int, str]] = []

    def report(ok: bool, trace_id: str = "", sequence: int = 0, detail: str = "") -> ChainReport:
        return ChainReport(ok, checked, trace_id, sequence, detail, cp_sequence, cp_note)

    if checkpoint is not None:
        try:
            sealer.verify_checkpoint(checkpoint)
        except SignatureError as err:
            record_signature_failure("trace", "checkpoint")
            CHECKPOINT_MISMATCHES.labels(service="trace").inc()
            return report(False, "", checkpoint.sequence, f"{cp_note}: signature {err.reason}: {err.message}")
        if checkpoint.tenant_id != tenant_id:
            CHECKPOINT_MISMATCHES.labels(service="trace").inc()
            return report(False, "", checkpoint.sequence, f"{cp_note} names tenant {checkpoint.tenant_id}")

    for item in _chain_items(store, tenant_id):
        checked += 1
        is_link = isinstance(item, StoredLink)
        trace_id = item.subject_trace_id if is_link else item.trace_id
        what = f"chain link {item.link_id} ({item.kind})" if is_link else f"record {item.trace_id}"
        item_hash = item.link_hash if is_link else item.record_hash
        if item.sequence != expected_seq:
            return report(False, trace_id, expected_seq,
                          f"sequence gap: expected {'link' if is_link else 'record'} {expected_seq}, "
                          f"found {item.sequence} (sequence {expected_seq} is missing)")
        if item.previous_hash != expected_prev:
            return report(False, trace_id, item.sequence,
                          f"{what}: previous_hash does not match the hash of the item before")
        detail = _broken_link(item, events) if is_link else _record_problem(item)
        if not detail:
            detail = _signature_problem(sealer, tenant_id, item.sequence, item_hash, item.key_id, item.signature)
        if detail:
            return report(False, trace_id, item.sequence, detail if not is_link else f"{what}: {detail}")
        if not is_link:
            sequence_of[item.trace_id] = item.sequence
            if item.redacted:
                redacted.append((item.sequence, item.trace_id))
        if item.sequence == cp_sequence:
            hash_at_checkpoint = item_hash
        expected_prev = item_hash
        expected_seq += 1

    problems: list[tuple[int, str, str]] = []  # (sequence, trace ID, detail): the lowest sequence is reported
    if checkpoint is not None:
        if checked < cp_sequence:
            problems.append((checked + 1, "", f"records missing at the end: the chain ends at sequence {checked} but "
                             f"the signed {cp_note} names head {checkpoint.head_hash[:16]}...; first missing "
                             f"sequence {checked + 1}"))
        elif hash_at_checkpoint != checkpoint.head_hash:
            problems.append((cp_sequence, "", f"the item at sequence {cp_sequence} differs from the signed {cp_note} "
                             "(the chain was rewritten)"))
    head = store.head(tenant_id)
    if head is not None and (head.sequence != checked or head.record_hash != expected_prev):
        problems.append((checked + 1, "", f"chain head names record {head.sequence} but {checked} records were "
                         "found (records missing at the end)"))
    redaction_links = {link_id for kind, link_id in events.linked if kind == C.LINK_REDACTION}
    for sequence, trace_id in redacted:
        if C.redaction_link_id(trace_id) not in redaction_links:
            problems.append((sequence, trace_id, f"record {trace_id}: question redacted without a redaction event in "
                             "the chain"))
    for kind, link_id, trace_id in events.unlinked():
        problems.append((sequence_of.get(trace_id, checked + 1), trace_id,
                         f"{kind.replace('_', ' ')} {link_id.split('#')[0]} is not a link of the chain (written "
                         "behind the service)"))
    if problems:
        if any("checkpoint" in p[2] for p in problems):
            CHECKPOINT_MISMATCHES.labels(service="trace").inc()
        sequence, trace_id, detail = min(problems, key=lambda p: p[0])
        return report(False, trace_id, sequence, detail)
    return report(True)
