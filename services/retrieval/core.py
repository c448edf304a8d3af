"""The retrieval authority's behaviour, free of gRPC: ingestion, lifecycle, scoped hybrid search,
exact passages. The store of record (SQL) is the truth; the search index and the in-memory passage
view are derived from it (rebuilt at warm-up, updated on every write)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

import numpy as np
from citetrace.embeddings import Embedder, EmbeddingCache, QueryVectorCache
from citetrace.identity import passage_id_of, sha256_hex, version_id_of
from citetrace.kit.auth import Principal
from citetrace.kit.context import check_deadline
from citetrace.kit.errors import (
    DataLoss,
    DomainError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from citetrace.kit.metrics import (
    RETRIEVAL_EMPTY,
    record_digest_failure,
    record_signature_failure,
    scope_violation_blocked,
)
from citetrace.kit.telemetry import set_attributes, stage
from citetrace.kit.timestamps import utc_now
from citetrace.kit.validation import is_locale, pattern
from citetrace.signing import open_keys
from citetrace.vocab import (
    APPROVED,
    AUDIENCE_ROLES,
    DOCUMENT_INTENTS,
    DRAFT,
    POLICY_ADMIN,
    PRIVILEGED_READERS,
    SOURCE_CLASSES,
    STATUS_TRANSITIONS,
    VERSION_STATUSES,
)

from services.retrieval.chunker import MarkdownChunker
from services.retrieval.extract import MARKDOWN, Extraction, Extractors, SourceError
from services.retrieval.extract.base import ExtractionIssue, PageInfo
from services.retrieval.index import (
    FusionSettings,
    IndexedPassage,
    ScopeFilter,
    SearchQuery,
    UpsertError,
    fuse,
)
from services.retrieval.index.base import SearchBackend
from services.retrieval.rerank import NoRerank, Reranker, reorder
from services.retrieval.settings import Settings
from services.retrieval.store.records import (
    NOT_REQUIRED,
    PENDING,
    DocumentRecord,
    ExtractionRecord,
    IngestOutcome,
    PassageRecord,
    VersionBundle,
    VersionRecord,
)
from services.retrieval.store.sealing import IntegrityFailure, VersionSealer
from services.retrieval.store.store import Store, VersionConflict, decode_page_token, encode_page_token

log = logging.getLogger("citetrace.retrieval")

SERVICE = "retrieval"
# One definition of the ID pattern (field_rules.yaml), matched whole: no trailing newline slips through.
_ID = pattern("document_id")


@dataclasses.dataclass(frozen=True)
class IngestCommand:
    document: DocumentRecord
    text: str
    status: str | None  # None: approved
    valid_from: datetime | None  # None: now (on first ingest)
    valid_to: datetime | None
    roles: tuple[str, ...]
    location_scope: tuple[str, ...]
    intents: tuple[str, ...]
    locale: str
    # The original file instead of `text` (PDF, HTML, Markdown bytes), its media type and name.
    content: bytes = b""
    media_type: str = ""
    filename: str = ""


@dataclasses.dataclass(frozen=True)
class SearchCommand:
    query: str
    k: int
    location_ids: tuple[str, ...] = ()
    intents: tuple[str, ...] = ()
    locale: str = ""
    source_classes: tuple[str, ...] = ()
    as_of: datetime | None = None
    mode: str = "hybrid"  # hybrid | lexical | vector


@dataclasses.dataclass(frozen=True)
class AppliedFilters:
    tenant_id: str
    roles: tuple[str, ...]
    location_ids: tuple[str, ...]
    intents: tuple[str, ...]
    locale: str
    status: str
    effective_at: datetime
    source_classes: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class SearchHitResult:
    label: str
    passage: PassageRecord
    text: str
    version: VersionRecord
    lexical_score: float
    lexical_rank: int
    vector_score: float
    vector_rank: int
    fused_score: float
    fused_rank: int
    rerank_score: float = 0.0
    rerank_rank: int = 0
    relevance: float = 0.0
    relevant: bool = False


@dataclasses.dataclass(frozen=True)
class RerankInfo:
    backend: str = "none"
    model: str = ""
    depth: int = 0
    ms: float = 0.0
    fallback: bool = False
    relevance_model: str = ""
    relevance_threshold: float = 0.0
    relevance_best_threshold: float = 0.0


@dataclasses.dataclass(frozen=True)
class SearchResult:
    hits: list[SearchHitResult]
    backend: str
    index_generation: str
    k: int
    fusion: FusionSettings
    embedding_model_id: str
    filters: AppliedFilters
    rerank: RerankInfo = RerankInfo()


@dataclasses.dataclass(frozen=True)
class SpanRequest:
    version_id: str
    start: int
    end: int


@dataclasses.dataclass(frozen=True)
class ReadPassage:
    passage: PassageRecord
    text: str
    version: VersionRecord


@dataclasses.dataclass(frozen=True)
class RefusedVersion:
    """A stored version that failed verification (left out of the index, never served)."""

    tenant_id: str
    document_id: str
    version_id: str
    reason: str
    message: str


@dataclasses.dataclass
class IntegrityReport:
    """What a walk over the store found: the index rebuild at warm-up and `citetrace index verify`."""

    versions_checked: int = 0
    passages_checked: int = 0
    refused: list[RefusedVersion] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.refused


def build_sealer(settings: Settings, store: Store, *, sign: bool = True) -> VersionSealer:
    """The signing key (created for development when missing and nothing is signed yet) and the
    keyring of verify keys (citetrace.signing.open_keys, shared with trace). With sign=False
    (verification only, e.g. `citetrace index verify` on a machine that holds only public keys) the
    key's `.pub` file or the verify keys suffice. Raises KeyFileError saying what to do."""
    signer, keyring = open_keys(provider=settings.signing_provider, key_file=settings.resolved_signing_key(),
                                verify_key_files=settings.verify_key_files, create=settings.signing_key_create,
                                sign=sign, signed_key_ids=store.signed_key_ids, label="retrieval",
                                env_prefix="CITETRACE_RETRIEVAL_", items="versions")
    return VersionSealer(signer, keyring)


def verify_store(store: Store) -> IntegrityReport:
    """Every version and passage of the store verified, nothing changed (`citetrace index verify`)."""
    report = IntegrityReport()
    for bundle in store.iter_bundles():
        report.versions_checked += 1
        report.passages_checked += len(bundle.passages)
        try:
            store.sealer.verify_bundle(bundle.version, bundle.text, bundle.passages)
        except IntegrityFailure as failure:
            v = bundle.version
            report.refused.append(RefusedVersion(v.tenant_id, v.document_id, v.version_id, failure.reason,
                                                 failure.message))
    return report


@dataclasses.dataclass
class _Prepared:
    """A validated, chunked document version, ready to embed and store."""

    document: DocumentRecord
    version: VersionRecord
    text: str
    passages: list[PassageRecord]
    explicit_valid_from: bool
    extraction: Extraction
    extraction_record: ExtractionRecord
    vectors: np.ndarray | None = None


# Passages per backend upsert when the index is rebuilt from the store.
_REBUILD_BATCH = 1000


def embedding_text(heading_context: str, text: str) -> str:
    """What is embedded and lexically indexed for a passage: its heading context, then its text."""
    return f"{heading_context}\n{text}" if heading_context else text


def judged_passage(version: VersionRecord, passage: PassageRecord, text: str) -> tuple[str, str]:
    """What the relevance model and the embedded rerank read of a passage: its text, and its context
    (the document title and heading path)."""
    return text, f"{version.title} {passage.heading_context}".strip()


def _deadline_check(rpc: str) -> Callable[[], None]:
    """What a store write runs just before its commit: past the caller's deadline it raises and the
    write rolls back (issue 17 §4)."""
    return lambda: check_deadline(rpc)


class RetrievalCore:
    """Built by services/retrieval/bootstrap.py, which chooses the store, backend, model and extractors."""

    def __init__(self, settings: Settings, *, store: Store, backend: SearchBackend, embedder: Embedder,
                 extractors: Extractors, reranker: Reranker | None = None, relevance=None,
                 passage_sides=None, questions=None) -> None:
        self.settings = settings
        self.extractors = extractors
        self.backend = backend
        self.store = store
        self.embedder = embedder
        self.chunker = MarkdownChunker(settings.chunk_target_chars, settings.chunk_hard_limit_chars)
        self.fusion = settings.fusion()
        self.cache: EmbeddingCache | None = None
        self.query_vectors = QueryVectorCache(settings.query_cache_size)
        self.reranker = reranker or NoRerank()
        self.relevance = relevance  # RelevanceModel or None (off)
        # relevance.PassagePreparation when the gate or the embedded rerank reads passages: each indexed
        # passage's side is computed in the background, not in the first search over it.
        self.passage_sides = passage_sides
        # The RelevanceModel the embedded rerank or the gate reads (None when neither does): its encoder
        # run over the question also gives the query vector, so a search encodes its question once.
        if questions is not None and questions.embedder.model_id != embedder.model_id:
            raise ValueError(f"the relevance model encodes with {questions.embedder.model_id}, the search with "
                             f"{embedder.model_id}: the query vector could not be shared")
        self.questions = questions
        # Derived, in-memory view for fast hit resolution: passage_id -> (passage, text) and
        # (tenant, version_id) -> version. Rebuilt from the store; updated on every write.
        self._passages: dict[str, tuple[PassageRecord, str]] = {}
        self._versions: dict[tuple[str, str], VersionRecord] = {}
        self._tenants: set[str] = set()
        self._write_lock = threading.RLock()
        self._process_local_index = backend.process_local
        self._ready = False
        # What the last rebuild refused (reported at warm-up; `citetrace index verify` walks again).
        self.integrity = IntegrityReport()
        # Called after a commit that may have queued version events (the bootstrap wires it to the
        # background relay of services/retrieval/version_events.py).
        self.on_version_events: Callable[[], None] | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Migrations, keys, model check, and the index rebuilt from the store of record."""
        self.open()
        self.rebuild_index()
        self._ready = True

    def open(self) -> None:
        """Everything but the index rebuild: migrations and keys, the model checked and loaded, the
        vector cache opened (`citetrace index rebuild` then rebuilds into a new generation)."""
        self.open_store()
        self.embedder.warm_up()
        self.reranker.warm_up()
        if self.relevance is not None:
            self.relevance.warm_up()
        self.extractors.warm_up()
        self.cache = EmbeddingCache(self.settings.resolved_cache_path())

    @property
    def ready(self) -> bool:
        """Warmed up: the index holds the store of record."""
        return self._ready

    def open_store(self) -> None:
        """Migrations, then the signing key and verify keys (before anything is read or written)."""
        self.store.migrate()
        if self.store.sealer is None:
            self.store.sealer = build_sealer(self.settings, self.store)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        if self.passage_sides is not None:
            self.passage_sides.close()
            self.passage_sides.model.close()
        self.store.close()

    def rebuild_index(self, new_generation: bool = False) -> int:
        """The derived index from the store of record. Every version is verified first (signature,
        text digest, passage rows): one that fails is left out, counted and reported, never indexed."""
        # A backend with index generations (OpenSearch) writes the rebuild into a new generation and
        # makes it live at the end (on start-up only if configured so; always with new_generation).
        report = IntegrityReport()
        with self._write_lock, self.backend.rebuild_scope(force=new_generation):
            count = 0
            batch: list[tuple[VersionRecord, str, list[PassageRecord]]] = []
            for bundle in self.store.iter_bundles():
                if not self._verify_for_index(bundle, report):
                    continue
                active = bundle.active_passages
                batch.append((bundle.version, bundle.text, active))
                count += len(active)
                if sum(len(b[2]) for b in batch) >= _REBUILD_BATCH:
                    self._index_versions(batch)
                    batch = []
            self._index_versions(batch)
            self.integrity = report
            log.info("retrieval: index rebuilt from the store: %d passages of %d verified versions, generation %s",
                     count, report.versions_checked - len(report.refused), self.backend.generation())
            if report.refused:
                log.error("retrieval: %d stored versions failed verification and were left out of the index "
                          "(run `citetrace index verify` for the full list): %s", len(report.refused),
                          "; ".join(f"{r.tenant_id}/{r.version_id[:12]} {r.reason}" for r in report.refused[:10]))
            return count

    def _verify_for_index(self, bundle: VersionBundle, report: IntegrityReport) -> bool:
        report.versions_checked += 1
        report.passages_checked += len(bundle.passages)
        try:
            self.store.sealer.verify_bundle(bundle.version, bundle.text, bundle.passages)
            return True
        except IntegrityFailure as failure:
            self._count(failure)
            v = bundle.version
            report.refused.append(RefusedVersion(v.tenant_id, v.document_id, v.version_id, failure.reason,
                                                 failure.message))
            # The version may be in a kept index generation (OpenSearch): it must not be found there.
            self.backend.remove_version(v.tenant_id, v.version_id)
            self._versions.pop((v.tenant_id, v.version_id), None)
            return False

    @staticmethod
    def _count(failure: IntegrityFailure) -> None:
        if failure.kind == "version_signature":
            record_signature_failure(SERVICE, "version")
        else:
            record_digest_failure(SERVICE, failure.kind)
        log.error("retrieval: %s: %s", failure.reason, failure.message)

    def _refuse(self, failure: IntegrityFailure) -> DataLoss:
        """A read that would serve what the service did not sign: counted, logged, DATA_LOSS."""
        self._count(failure)
        metadata = {"version_id": failure.version_id}
        if failure.passage_id:
            metadata["passage_id"] = failure.passage_id
        return DataLoss(failure.reason, f"{failure.message}; refusing to serve it", **metadata)

    def _verified_bundles(self, tenant_id: str, version_ids, focus=()) -> dict[str, VersionBundle]:
        """The versions read from the store and verified; raises DataLoss on the first failure."""
        bundles = self.store.version_bundles(tenant_id, version_ids)
        focus = tuple(focus)
        for bundle in bundles.values():
            try:
                self.store.sealer.verify_bundle(bundle.version, bundle.text, bundle.passages, focus)
            except IntegrityFailure as failure:
                raise self._refuse(failure) from None
        return bundles

    def _embed(self, texts: list[str]) -> np.ndarray:
        batch = self.settings.embedding_batch_size
        if self.cache is None:
            return self.embedder.embed(texts, batch_size=batch)
        return self.cache.embed_cached(self.embedder, texts, batch_size=batch)

    def _index_version(self, version: VersionRecord, text: str, passages: list[PassageRecord],
                       vectors: np.ndarray | None = None) -> None:
        self._index_versions([(version, text, passages)], vectors)

    def _index_versions(self, items: list[tuple[VersionRecord, str, list[PassageRecord]]],
                        vectors: np.ndarray | None = None) -> dict[str, list[UpsertError]]:
        """Updates the derived views for versions and upserts their passages in ONE backend call
        (`vectors`, when given, are those of every passage of `items` in order). Returns the
        backend's refusals by version id (empty when every passage was written)."""
        indexable, inputs, known, judged = [], [], [], []
        offset = 0
        for version, text, passages in items:
            self._versions[(version.tenant_id, version.version_id)] = version
            self._tenants.add(version.tenant_id)
            for p in passages:
                self._passages[p.passage_id] = (p, text[p.start:p.end])
            rows = range(offset, offset + len(passages))
            offset += len(passages)
            # A passage awaiting review is stored and readable, never searchable (not evidence).
            eligible = [(p, row) for p, row in zip(passages, rows, strict=True) if p.eligible]
            if version.never_effective or not eligible:
                self.backend.remove_version(version.tenant_id, version.version_id)
                continue
            for p, row in eligible:
                indexable.append((version, p))
                inputs.append(embedding_text(p.heading_context, text[p.start:p.end]))
                known.append(row)
                judged.append(judged_passage(version, p, text[p.start:p.end]))
        if not indexable:
            return {}
        if vectors is not None and len(vectors) == offset:
            vectors = vectors[known]
        else:
            vectors = self._embed(inputs)
        report = self.backend.upsert(
            IndexedPassage(
                passage_id=p.passage_id, tenant_id=p.tenant_id, document_id=p.document_id,
                version_id=p.version_id, source_class=version.source_class, text=body,
                roles=version.roles, location_scope=version.location_scope, intents=version.intents,
                locale=version.locale, status=version.status, valid_from=version.valid_from,
                valid_to=version.valid_to, vector=vector)
            for (version, p), body, vector in zip(indexable, inputs, vectors, strict=True))
        if report.errors:
            log.error("retrieval: index refused %d passages: %s", len(report.errors), report.errors[:3])
        if self.passage_sides is not None:
            self.passage_sides.submit(judged)
        version_of = {p.passage_id: version.version_id for version, p in indexable}
        refused: dict[str, list[UpsertError]] = {}
        for error in report.errors:
            refused.setdefault(version_of.get(error.passage_id, ""), []).append(error)
        return refused

    def _refresh_version(self, version: VersionRecord) -> None:
        """A version's metadata changed in the store (status, valid_to): update the derived views."""
        key = (version.tenant_id, version.version_id)
        self._versions[key] = version
        if version.never_effective:
            self.backend.remove_version(version.tenant_id, version.version_id)
            return
        # From the store, not from memory: with a shared backend another replica may have written it.
        # Verified like every read: a version that fails is dropped from the index, not refreshed.
        try:
            bundle = self._verified_bundles(version.tenant_id, [version.version_id]).get(version.version_id)
        except DataLoss:
            self.backend.remove_version(*key)
            self._versions.pop(key, None)
            return
        if bundle is None or not bundle.active_passages:
            return
        self.backend.remove_version(*key)
        self._index_version(bundle.version, bundle.text, bundle.active_passages)

    # --- ingestion ----------------------------------------------------------------------------

    def ingest(self, principal: Principal, cmd: IngestCommand) -> IngestOutcome:
        """IngestDocument: one document version, stored and indexed, or an error and nothing stored."""
        result = self.ingest_many(principal, [cmd])[0]
        if isinstance(result, DomainError):
            raise result
        return result

    def ingest_many(self, principal: Principal, cmds: list[IngestCommand]) -> list[IngestOutcome | DomainError]:
        """The same ingestion for several documents (the bulk path of the benchmark and of loaders):
        each is validated and stored in its own transaction, so one bad document never affects
        another; the vectors of the whole batch are computed in one batched, cached call."""
        self._require_admin(principal)
        prepared: list[_Prepared | DomainError] = []
        for cmd in cmds:
            try:
                prepared.append(self._prepare(principal, cmd))
            except DomainError as err:
                prepared.append(err)
        ready = [p for p in prepared if isinstance(p, _Prepared)]
        with stage(SERVICE, "retrieval.ingest", documents=len(ready), tenant=principal.tenant_id,
                   passages=sum(len(p.passages) for p in ready)):
            # Embed before storing: a model failure stores nothing. Cached by text digest.
            inputs = [embedding_text(q.heading_context, p.text[q.start:q.end]) for p in ready for q in p.passages]
            with stage(SERVICE, "retrieval.embed_passages", passages=len(inputs)):
                vectors = self._embed(inputs) if inputs else np.empty((0, 0), np.float32)
            offset = 0
            for p in ready:
                p.vectors = vectors[offset:offset + len(p.passages)]
                offset += len(p.passages)
            results: list[IngestOutcome | DomainError] = []
            refused: dict[str, list[UpsertError]] = {}
            with self._write_lock:
                to_index: list[tuple[VersionRecord, str, list[PassageRecord]]] = []
                known: list[np.ndarray | None] = []
                for item in prepared:
                    if isinstance(item, DomainError):
                        results.append(item)
                        continue
                    try:
                        outcome = self.store.ingest(item.document, item.version, item.text, item.passages,
                                                    item.version.ingested_at,
                                                    compare_valid_from=item.explicit_valid_from,
                                                    extraction=item.extraction_record,
                                                    before_commit=_deadline_check("IngestDocument"))
                    except VersionConflict as err:
                        results.append(FailedPrecondition(err.reason, err.message))
                        continue
                    except IntegrityFailure as failure:  # the stored version was changed outside the service
                        results.append(self._refuse(failure))
                        continue
                    outcome = dataclasses.replace(outcome, extraction=item.extraction,
                                                  extraction_version=item.version.extraction_version)
                    results.append(outcome)
                    # A replay of a stored version is indexed again on a shared backend: the first
                    # attempt may have committed and then failed before its index write (the backend
                    # unavailable, the replica killed), and its retry must not leave the version
                    # unsearchable on every replica. Identical passages are no-ops there. A process-local
                    # index is written under this process's lock and rebuilt at start, so it needs none.
                    replay = not (outcome.created or outcome.reextracted) and not self._process_local_index
                    if outcome.created or outcome.reextracted or replay:
                        if outcome.reextracted:
                            self.backend.remove_version(item.version.tenant_id, item.version.version_id)
                        to_index.append((outcome.version, item.text, outcome.passages))
                        same = [q.passage_id for q in outcome.passages] == [q.passage_id for q in item.passages]
                        known.append(item.vectors if same else None)
                # One backend call for the whole batch, then the versions this batch superseded.
                if to_index:
                    complete = all(v is not None for v in known)
                    refused = self._index_versions(to_index, np.concatenate(known) if complete else None)
                stored = [outcome for outcome in results if isinstance(outcome, IngestOutcome)]
                for outcome in stored:
                    for old in outcome.superseded:
                        self._refresh_version(old)
            if any(outcome.created for outcome in results if isinstance(outcome, IngestOutcome)):
                self._version_events_queued()
        return [self._unsearchable(outcome, refused) for outcome in results]

    def _unsearchable(self, outcome: IngestOutcome | DomainError,
                      refused: dict[str, list[UpsertError]]) -> IngestOutcome | DomainError:
        """A stored version the shared index refused is not reported as done: the caller gets
        UNAVAILABLE and its retry (a replay of the stored version) writes the index again. A
        process-local index is rebuilt from the store at start, so there the refusal is only logged."""
        if not isinstance(outcome, IngestOutcome) or self._process_local_index:
            return outcome
        errors = refused.get(outcome.version.version_id)
        if not errors:
            return outcome
        return Unavailable(
            "INDEX_WRITE_FAILED",
            f"version {outcome.version.version_id} of document {outcome.version.document_id!r} is stored, but the "
            f"search index refused {len(errors)} of its passages ({errors[0].reason}); it is not searchable "
            "until the same ingestion is retried", version_id=outcome.version.version_id)

    def _version_events_queued(self) -> None:
        if self.on_version_events is not None:
            self.on_version_events()

    def _prepare(self, principal: Principal, cmd: IngestCommand) -> _Prepared:
        doc = cmd.document
        if not doc.tenant_id:
            raise InvalidArgument("MISSING_TENANT_ID", "document.tenant_id is required", field="document.tenant_id")
        if doc.tenant_id != principal.tenant_id:
            raise PermissionDenied("TENANT_MISMATCH",
                                   "document.tenant_id must be the caller's tenant (from the token)")
        if not doc.document_id:
            raise InvalidArgument("MISSING_DOCUMENT_ID", "document.document_id is required", field="document.document_id")
        if not _ID.fullmatch(doc.document_id):
            raise InvalidArgument("INVALID_DOCUMENT_ID",
                                  "document.document_id must match [A-Za-z0-9][A-Za-z0-9._/-]{0,255}", field="document.document_id")
        if doc.source_class not in SOURCE_CLASSES:
            raise InvalidArgument("UNKNOWN_SOURCE_CLASS",
                                  f"document.source_class {doc.source_class!r} is not one of {', '.join(SOURCE_CLASSES)}", field="document.source_class")
        if not doc.title.strip():
            raise InvalidArgument("MISSING_TITLE", "document.title is required", field="document.title")
        if cmd.text and cmd.content:
            raise InvalidArgument("CONTENT_AND_TEXT", "give the document as text or as content (a file), not both", field="content")
        status = cmd.status or APPROVED
        if status not in VERSION_STATUSES:
            raise InvalidArgument("INVALID_STATUS", f"status {status!r} is not one of {', '.join(VERSION_STATUSES)}", field="status")
        if not cmd.roles:
            raise InvalidArgument("MISSING_ROLES", "roles (the audience) must name at least one role", field="roles")
        self._check_vocabulary("roles", cmd.roles, AUDIENCE_ROLES, "UNKNOWN_ROLE")
        self._check_vocabulary("intents", cmd.intents, DOCUMENT_INTENTS, "UNKNOWN_INTENT")
        for location in cmd.location_scope:
            if not _ID.fullmatch(location):
                raise InvalidArgument("INVALID_LOCATION_ID", f"location_scope entry {location!r} is malformed", field="location_scope")
        locale = cmd.locale or "en"
        if not is_locale(locale):
            raise InvalidArgument("INVALID_LOCALE", f"locale {locale!r} is not a language tag like en or nb-NO", field="locale")
        now = utc_now()
        valid_from = cmd.valid_from or now
        if cmd.valid_to is not None and cmd.valid_to <= valid_from:
            raise InvalidArgument("INVALID_VALIDITY_WINDOW", "valid_to must be after valid_from", field="valid_to")

        source, media_type, filename = self._source(cmd)
        given_as = "content" if cmd.content else "text"  # the request field the text came from
        source_sha256 = hashlib.sha256(source).hexdigest()
        extraction_version = self._extraction_version(media_type, filename)
        extraction = self._extract(doc, source, source_sha256, media_type, filename, extraction_version)
        text = extraction.text
        if not text.strip():
            raise InvalidArgument("EMPTY_TEXT", f"{filename}: the extracted text is empty", field=given_as)
        if len(text) > self.settings.max_document_chars:
            raise InvalidArgument("TEXT_TOO_LONG", f"{filename}: the text has {len(text)} characters; the limit is "
                                  f"{self.settings.max_document_chars}", field=given_as)
        if "\x00" in text:
            raise InvalidArgument("INVALID_TEXT", "text must not contain NUL characters", field=given_as)
        version_id = version_id_of(text)
        barriers = tuple(x for span in extraction.review_spans for x in (span.start, span.end))
        passages = []
        for i, c in enumerate(self.chunker.chunk(text, barriers)):
            pages = extraction.page_span(c.start, c.end)
            reason = extraction.review_reason(c.start, c.end)
            passages.append(PassageRecord(
                passage_id=passage_id_of(doc.tenant_id, doc.document_id, version_id, c.start, c.end),
                tenant_id=doc.tenant_id, document_id=doc.document_id, version_id=version_id, ordinal=i,
                start=c.start, end=c.end, content_sha256=sha256_hex(text[c.start:c.end]),
                source_anchor=c.source_anchor, heading_context=c.heading_context,
                extraction_version=extraction_version,
                page_start=pages.first if pages else 0, page_end=pages.last if pages else 0,
                page_label_start=pages.first_label if pages else "", page_label_end=pages.last_label if pages else "",
                review_state=PENDING if reason else NOT_REQUIRED, review_reason=reason))
        version = VersionRecord(
            tenant_id=doc.tenant_id, document_id=doc.document_id, version_id=version_id,
            source_class=doc.source_class, title=doc.title.strip(), source_uri=doc.source_uri, status=status,
            valid_from=valid_from, valid_to=cmd.valid_to, roles=tuple(sorted(set(cmd.roles))),
            location_scope=tuple(sorted(set(cmd.location_scope))), intents=tuple(sorted(set(cmd.intents))),
            locale=locale, extraction_version=extraction_version, ingested_at=now, text_length=len(text),
            source_sha256=source_sha256, media_type=media_type, page_count=len(extraction.pages))
        record = ExtractionRecord(
            tenant_id=doc.tenant_id, version_id=version_id, extraction_version=extraction_version,
            source_sha256=source_sha256, media_type=media_type, page_map=[p.to_dict() for p in extraction.pages],
            issues=[i.to_dict() for i in extraction.issues])
        return _Prepared(document=doc, version=version, text=text, passages=passages,
                         explicit_valid_from=cmd.valid_from is not None, extraction=extraction,
                         extraction_record=record)

    def _source(self, cmd: IngestCommand) -> tuple[bytes, str, str]:
        """(original bytes, media type, file name for messages) of an ingest command."""
        filename = cmd.filename or cmd.document.document_id
        if cmd.content:
            if len(cmd.content) > self.settings.max_source_bytes:
                raise InvalidArgument("SOURCE_TOO_LARGE", f"{filename}: {len(cmd.content)} bytes; the limit of one "
                                      f"source is {self.settings.max_source_bytes} bytes (MAX_SOURCE_BYTES)", field="content")
            if not cmd.media_type:
                raise InvalidArgument("MISSING_MEDIA_TYPE", f"{filename}: content needs its media_type "
                                      f"({', '.join(self.extractors.media_types)})", field="media_type")
            return cmd.content, cmd.media_type, filename
        if not cmd.text.strip():
            raise InvalidArgument("EMPTY_TEXT", "text must contain non-whitespace characters", field="text")
        if cmd.media_type not in ("", MARKDOWN):
            raise InvalidArgument("UNSUPPORTED_MEDIA_TYPE", f"{filename}: text is Markdown; send a "
                                  f"{cmd.media_type} file as content", field="media_type")
        return cmd.text.encode("utf-8"), MARKDOWN, filename

    def _extraction_version(self, media_type: str, filename: str) -> str:
        """The extractor's version, then the chunker's (a Markdown version keeps the chunker's alone)."""
        try:
            extractor_version = self.extractors.get(media_type, filename).version
        except SourceError as err:
            raise InvalidArgument(err.reason, err.message, field="content") from err
        chunker = self.chunker.extraction_version
        return f"{extractor_version};{chunker}" if extractor_version else chunker

    def _extract(self, doc: DocumentRecord, source: bytes, source_sha256: str, media_type: str, filename: str,
                 extraction_version: str) -> Extraction:
        """The extraction of these bytes: the stored one when this extractor already read them for
        this document (nothing is extracted twice), else a new one. Refusals name the file."""
        if media_type != MARKDOWN:
            record = self.store.find_extraction(doc.tenant_id, doc.document_id, source_sha256, extraction_version)
            bundle = self._verified_bundles(doc.tenant_id, [record.version_id]).get(record.version_id) \
                if record is not None else None
            if bundle is not None:
                return self._stored_extraction(record, bundle)
        try:
            with stage(SERVICE, "retrieval.extract", media_type=media_type, bytes=len(source)):
                return self.extractors.get(media_type, filename).extract(source, filename)
        except SourceError as err:
            raise InvalidArgument(err.reason, err.message, file=filename, field="content") from err

    @staticmethod
    def _stored_extraction(record: ExtractionRecord, bundle: VersionBundle) -> Extraction:
        """An extraction read back from the (verified) store, its review spans from its passages."""
        from services.retrieval.extract.base import ReviewSpan

        spans = tuple(ReviewSpan(p.start, p.end, p.review_reason) for p in bundle.active_passages if p.review_reason)
        text = bundle.text
        return Extraction(text=text, media_type=record.media_type,
                          pages=tuple(PageInfo.from_dict(p) for p in record.page_map),
                          issues=tuple(ExtractionIssue.from_dict(i) for i in record.issues), review_spans=spans)

    # --- lifecycle ----------------------------------------------------------------------------

    def set_status(self, principal: Principal, version_id: str, status: str) -> VersionRecord:
        self._require_admin(principal)
        if not version_id:
            raise InvalidArgument("MISSING_VERSION_ID", "version_id is required", field="version_id")
        if not status:
            raise InvalidArgument("MISSING_STATUS", "status must be DRAFT, APPROVED or RETIRED", field="status")
        if status not in VERSION_STATUSES:
            raise InvalidArgument("INVALID_STATUS", f"status {status!r} is not one of {', '.join(VERSION_STATUSES)}", field="status")

        def check(old: str, new: str) -> None:
            if old != new and (old, new) not in STATUS_TRANSITIONS:
                raise FailedPrecondition("ILLEGAL_STATUS_TRANSITION",
                                         f"version {version_id} is {old}; {old} -> {new} is not allowed "
                                         "(only draft -> approved -> retired)")

        with self._write_lock:
            try:
                result = self.store.set_status(principal.tenant_id, version_id, status, utc_now(), check,
                                               before_commit=_deadline_check("SetVersionStatus"))
            except IntegrityFailure as failure:
                raise self._refuse(failure) from None
            if result is None:
                raise NotFound("VERSION_NOT_FOUND", f"no version {version_id} in the caller's tenant")
            before, after, superseded = result
            if before.valid_to != after.valid_to:  # approved behind a later version: its window closed
                self._refresh_version(after)
            elif before.status != after.status:
                self._versions[(after.tenant_id, after.version_id)] = after
                self.backend.set_version_status(after.tenant_id, after.version_id, after.status)
            for old in superseded:
                self._refresh_version(old)
        if before.status != after.status:
            self._version_events_queued()
        return after

    # --- review of passages an extraction could not fully capture ----------------------------

    def approve_passages(self, principal: Principal, passage_ids: list[str]) -> list[ReadPassage]:
        """ApprovePassages: passages awaiting review become eligible evidence (and searchable)."""
        self._require_admin(principal)
        ids = list(dict.fromkeys(passage_ids))
        if not ids:
            raise InvalidArgument("NOTHING_REQUESTED", "give passage_ids", field="passage_ids")
        if len(ids) > self.settings.max_passages_per_request:
            raise InvalidArgument("TOO_MANY_PASSAGES",
                                  f"at most {self.settings.max_passages_per_request} passages per request", field="passage_ids")
        with self._write_lock:
            try:
                found, missing, not_under_review = self.store.approve_passages(
                    principal.tenant_id, ids, principal.subject, utc_now(),
                    before_commit=_deadline_check("ApprovePassages"))
            except IntegrityFailure as failure:  # a version changed outside the service is never re-signed
                raise self._refuse(failure) from failure
            if missing:  # nothing was approved: all or none
                raise NotFound("PASSAGE_NOT_FOUND", f"no passage {missing[0]} in the caller's tenant",
                               passage_id=missing[0])
            if not_under_review:
                raise FailedPrecondition("PASSAGE_NOT_UNDER_REVIEW",
                                         f"passage {not_under_review[0]} was never marked for review",
                                         passage_id=not_under_review[0])
            bundles = self._verified_bundles(principal.tenant_id, sorted({p.version_id for p in found}))
            for bundle in bundles.values():  # the approved passages become searchable
                self._refresh_version(bundle.version)
        reads, _ = self.get_passages(principal, ids, [])
        return reads

    # --- search -------------------------------------------------------------------------------

    def search(self, principal: Principal, cmd: SearchCommand) -> SearchResult:
        s = self.settings
        if not cmd.query.strip():
            raise InvalidArgument("EMPTY_QUERY", "query must contain non-whitespace text", field="query")
        if len(cmd.query) > s.max_query_chars:
            raise InvalidArgument("QUERY_TOO_LONG",
                                  f"query has {len(cmd.query)} characters; the limit is {s.max_query_chars}", field="query")
        if not 1 <= cmd.k <= s.max_k:
            raise InvalidArgument("K_OUT_OF_RANGE", f"k must be in 1..{s.max_k}, got {cmd.k}", field="k")
        if cmd.mode not in ("hybrid", "lexical", "vector"):
            raise InvalidArgument("INVALID_MODE", f"mode {cmd.mode!r} is not hybrid, lexical or vector", field="mode")
        self._check_vocabulary("scope.intents", cmd.intents, DOCUMENT_INTENTS, "UNKNOWN_INTENT")
        for location in cmd.location_ids:
            if not _ID.fullmatch(location):
                raise InvalidArgument("INVALID_LOCATION_ID", f"scope.location_ids entry {location!r} is malformed", field="scope.location_ids")
        if cmd.locale and not is_locale(cmd.locale):
            raise InvalidArgument("INVALID_LOCALE", f"scope.locale {cmd.locale!r} is not a language tag", field="scope.locale")
        # Applied inside both sub-queries by the backend (ScopeFilter clause 9); empty = any.
        self._check_vocabulary("scope.source_classes", cmd.source_classes, SOURCE_CLASSES, "UNKNOWN_SOURCE_CLASS")
        # Every version this process stored or rebuilt is in the in-memory view; with a shared
        # backend (several replicas on one store) another replica may have stored it: ask the store.
        if principal.tenant_id not in self._tenants and not self._shared_tenant(principal.tenant_id):
            raise InvalidArgument("UNKNOWN_TENANT", f"tenant {principal.tenant_id!r} has no documents", field="token.tenant_id")
        locations = self._effective_locations(principal, cmd.location_ids)
        as_of = cmd.as_of or utc_now()
        scope = ScopeFilter(tenant_id=principal.tenant_id, roles=principal.roles, location_ids=locations,
                            intents=tuple(sorted(set(cmd.intents))), locale=cmd.locale or None, as_of=as_of,
                            source_classes=tuple(sorted(set(cmd.source_classes))))
        fusion = dataclasses.replace(self.fusion, mode=cmd.mode)
        filters = AppliedFilters(tenant_id=scope.tenant_id, roles=scope.roles, location_ids=scope.location_ids,
                                 intents=scope.intents, locale=cmd.locale, status=APPROVED, effective_at=as_of,
                                 source_classes=scope.source_classes)
        with stage(SERVICE, "retrieval.search", k=cmd.k, mode=cmd.mode, backend=self.backend.name,
                   tenant=principal.tenant_id) as span:
            generation = self.backend.generation()
            vector = encoded = None
            if cmd.mode != "lexical" or self._judges_question():
                with stage(SERVICE, "retrieval.embed"):
                    vector, encoded = self._encode_query(cmd.query, cmd.mode)
            lexical, dense = self._candidate_lists(cmd.query, vector, scope, fusion)
            depth = max(cmd.k, self.settings.rerank_depth) if self.reranker.name != "none" else cmd.k
            with stage(SERVICE, "retrieval.fuse", method=fusion.method):
                fused = fuse(lexical, dense, fusion, limit=depth)
            hits = self._resolve(principal.tenant_id, fused, scope)
            hits, rerank = self._rerank(cmd.query, hits, cmd.k, encoded)
            set_attributes(span, hits=len(hits), empty=not hits)
        if not hits:
            RETRIEVAL_EMPTY.inc()
        return SearchResult(hits=hits, backend=self.backend.name, index_generation=generation, k=cmd.k,
                            fusion=fusion, embedding_model_id=self.embedder.model_id, filters=filters,
                            rerank=rerank)

    def _judges_question(self) -> bool:
        """Whether the embedded rerank or the gate reads the question's token vectors (the bootstrap
        hands the core a relevance model exactly when one of them does)."""
        return self.questions is not None

    def _encode_query(self, query: str, mode: str) -> tuple[np.ndarray | None, object]:
        """(query vector or None in lexical mode, the question's token vectors or None): one encoder run
        gives both when the judgments read the question."""
        if self._judges_question():
            encoded = self.questions.question(query)
            return (None if mode == "lexical" else encoded.sentence), encoded
        return self.query_vectors.embed(self.embedder, query), None

    def _rerank(self, query: str, hits: list[SearchHitResult], k: int,
                encoded=None) -> tuple[list[SearchHitResult], RerankInfo]:
        """The rerank stage (after fusion, before any context budget) and the relevance of every hit."""
        candidates = [judged_passage(h.version, h.passage, h.text) for h in hits]
        info = RerankInfo(relevance_model=self.relevance.version if self.relevance else "",
                          relevance_threshold=self.relevance.threshold if self.relevance else 0.0,
                          relevance_best_threshold=self.relevance.best_threshold if self.relevance else 0.0)
        if self.reranker.name != "none" and hits:
            started = time.perf_counter()
            with stage(SERVICE, "retrieval.rerank", backend=self.reranker.name, candidates=len(hits)) as span:
                outcome = self.reranker.rerank(query, candidates, [h.fused_score for h in hits], encoded)
                set_attributes(span, fallback=outcome.fallback)
            order = reorder(outcome.scores, [h.fused_rank for h in hits])
            hits = [dataclasses.replace(hits[i], rerank_score=outcome.scores[i], rerank_rank=rank)
                    for rank, i in enumerate(order, start=1)]
            info = dataclasses.replace(info, backend=self.reranker.name, model=self.reranker.model,
                                       depth=len(candidates), ms=round((time.perf_counter() - started) * 1000, 3),
                                       fallback=outcome.fallback)
        hits = hits[:k]
        if self.relevance is not None and hits:
            with stage(SERVICE, "retrieval.relevance", hits=len(hits)):
                judged = self.relevance.judge(query, [judged_passage(h.version, h.passage, h.text) for h in hits],
                                              encoded)
            hits = [dataclasses.replace(h, relevance=s, relevant=relevant)
                    for h, (s, relevant) in zip(hits, judged, strict=True)]
        return [dataclasses.replace(h, label=f"S{i}") for i, h in enumerate(hits, start=1)], info

    def _candidate_lists(self, text: str, vector, scope: ScopeFilter, fusion: FusionSettings):
        """The raw lexical and vector candidate lists of the search (the scope applied inside both by
        the backend), each retrieval stage in its own span: one request for both when the backend
        makes one (both spans cover it, marked combined), else one call per retriever."""
        kinds = [kind for kind in ("lexical", "vector") if fusion.mode in (kind, "hybrid")]
        lists: dict[str, list[tuple[str, float]]] = {"lexical": [], "vector": []}
        if self.backend.one_request_for_both:
            query = SearchQuery(text=text, vector=vector, scope=scope, k=fusion.candidate_k, fusion=fusion)
            with contextlib.ExitStack() as spans:
                subs = [spans.enter_context(stage(SERVICE, f"retrieval.{kind}", combined=True)) for kind in kinds]
                lists["lexical"], lists["vector"] = self.backend.candidate_lists(query)
                for kind, sub in zip(kinds, subs, strict=True):
                    set_attributes(sub, candidates=len(lists[kind]))
            return lists["lexical"], lists["vector"]
        for kind in kinds:
            with stage(SERVICE, f"retrieval.{kind}") as sub:
                query = SearchQuery(text=text, vector=vector if kind == "vector" else None, scope=scope,
                                    k=fusion.candidate_k, fusion=dataclasses.replace(fusion, mode=kind))
                lexical, dense = self.backend.candidate_lists(query)
                lists[kind] = lexical if kind == "lexical" else dense
                set_attributes(sub, candidates=len(lists[kind]))
        return lists["lexical"], lists["vector"]

    def _shared_tenant(self, tenant_id: str) -> bool:
        if self._process_local_index or not self.store.tenant_exists(tenant_id):
            return False
        self._tenants.add(tenant_id)
        return True

    def _resolve(self, tenant_id: str, fused, scope: ScopeFilter) -> list[SearchHitResult]:
        """Hits -> passages with exact text and version metadata. The embedded index lives in this
        process and its view holds only versions verified when they were indexed (same writes, same
        lock); a shared backend can return what another replica wrote or changed, so its hits are
        read from the store of record and verified, and a hit whose version fails verification or
        whose verified metadata the scope does not admit is never returned."""
        if self._process_local_index:
            view = {h.passage_id: (self._passages.get(h.passage_id), None) for h in fused}
        else:
            view = self._verified_hits(tenant_id, [h.passage_id for h in fused], scope)
        out = []
        for hit in fused:
            entry, version = view.get(hit.passage_id, (None, None))
            if entry is not None and version is None:
                version = self._versions.get((tenant_id, entry[0].version_id))
            if entry is None or version is None or entry[0].tenant_id != tenant_id:
                log.error("retrieval: index returned passage %s unknown to the verified store view", hit.passage_id)
                continue
            passage, text = entry
            out.append(SearchHitResult(
                label=f"S{len(out) + 1}", passage=passage, text=text, version=version,
                lexical_score=hit.lexical_score or 0.0, lexical_rank=hit.lexical_rank or 0,
                vector_score=hit.vector_score or 0.0, vector_rank=hit.vector_rank or 0,
                fused_score=hit.fused_score, fused_rank=len(out) + 1))
        return out

    def _verified_hits(self, tenant_id: str, passage_ids: list[str], scope: ScopeFilter) -> dict:
        """passage_id -> ((passage, text), version) for the hits whose version verifies and whose
        verified metadata the scope admits; failures are counted and left out."""
        located = self.store.passage_versions(tenant_id, passage_ids)
        bundles = self.store.version_bundles(tenant_id, set(located.values()))
        good: dict[str, VersionBundle] = {}
        for vid, bundle in bundles.items():
            try:
                self.store.sealer.verify_bundle(bundle.version, bundle.text, bundle.passages)
                good[vid] = bundle
            except IntegrityFailure as failure:
                self._count(failure)
        view = {}
        for pid, vid in located.items():
            bundle = good.get(vid)
            passage = next((p for p in bundle.passages if p.passage_id == pid), None) if bundle else None
            if passage is None or not passage.active or not self._admits(scope, bundle.version, passage):
                continue
            view[pid] = ((passage, bundle.text[passage.start:passage.end]), bundle.version)
        return view

    @staticmethod
    def _admits(scope: ScopeFilter, version: VersionRecord, passage: PassageRecord) -> bool:
        if version.never_effective:
            return False
        return scope.admits(IndexedPassage(
            passage_id=passage.passage_id, tenant_id=version.tenant_id, document_id=version.document_id,
            version_id=version.version_id, source_class=version.source_class, text="", roles=version.roles,
            location_scope=version.location_scope, intents=version.intents, locale=version.locale,
            status=version.status, valid_from=version.valid_from, valid_to=version.valid_to))

    @staticmethod
    def _effective_locations(principal: Principal, requested: tuple[str, ...]) -> tuple[str, ...]:
        """Requested locations intersected with the principal's (empty principal list = all)."""
        requested = tuple(sorted(set(requested)))
        if not principal.location_ids:
            return requested
        if not requested:
            return tuple(sorted(principal.location_ids))
        allowed = tuple(loc for loc in requested if loc in principal.location_ids)
        if not allowed:
            raise PermissionDenied("LOCATION_NOT_PERMITTED",
                                   "none of scope.location_ids is among the caller's permitted locations")
        return allowed

    # --- reading passages ---------------------------------------------------------------------

    def get_passages(self, principal: Principal, passage_ids: list[str], spans: list[SpanRequest]
                     ) -> tuple[list[ReadPassage], list[VersionRecord]]:
        """The exact stored text of passages (by ID) and spans. Every version served from is read
        from the store and verified (signature, text against its version ID, passage rows); a
        failure is DATA_LOSS with the exact reason and nothing is served."""
        if not passage_ids and not spans:
            raise InvalidArgument("NOTHING_REQUESTED", "give passage_ids or spans", field="passage_ids")
        if len(passage_ids) + len(spans) > self.settings.max_passages_per_request:
            raise InvalidArgument("TOO_MANY_PASSAGES",
                                  f"at most {self.settings.max_passages_per_request} passages per request", field="passage_ids")
        for span in spans:
            if not span.version_id:
                raise InvalidArgument("MISSING_VERSION_ID", "every span needs a version_id", field="spans.version_id")
        tenant = principal.tenant_id
        located = self.store.passage_versions(tenant, passage_ids) if passage_ids else {}
        bundles = self._verified_bundles(tenant, [*located.values(), *(s.version_id for s in spans)],
                                         focus=passage_ids)
        out: list[ReadPassage] = []
        for pid in passage_ids:
            bundle = bundles.get(located.get(pid, ""))
            passage = next((p for p in bundle.passages if p.passage_id == pid), None) if bundle else None
            if passage is None or not self._can_read(principal, bundle.version):
                # Outside the caller's scope (another tenant, audience, draft) answers exactly like a
                # passage that does not exist; only the metric tells them apart (miss path only).
                if passage is not None or self.store.passage_exists(pid):
                    scope_violation_blocked(SERVICE)
                raise NotFound("PASSAGE_NOT_FOUND", f"no passage {pid} visible to the caller", passage_id=pid)
            out.append(ReadPassage(passage, bundle.text[passage.start:passage.end], bundle.version))
        for span in spans:
            out.append(self._read_span(principal, span, bundles.get(span.version_id)))
        versions: dict[str, VersionRecord] = {}
        for item in out:
            versions.setdefault(item.version.version_id, item.version)
        return out, list(versions.values())

    def _read_span(self, principal: Principal, span: SpanRequest, bundle: VersionBundle | None) -> ReadPassage:
        if bundle is None or not self._can_read(principal, bundle.version):
            if bundle is not None or self.store.version_exists(span.version_id):
                scope_violation_blocked(SERVICE)
            raise NotFound("VERSION_NOT_FOUND", f"no version {span.version_id!r} visible to the caller",
                           version_id=span.version_id)
        version, text = bundle.version, bundle.text
        if not 0 <= span.start < span.end <= version.text_length:
            raise InvalidArgument("SPAN_OUT_OF_RANGE",
                                  f"span [{span.start}, {span.end}) is not inside the version text "
                                  f"[0, {version.text_length})", field="spans")
        pid = passage_id_of(version.tenant_id, version.document_id, version.version_id, span.start, span.end)
        stored = next((p for p in bundle.passages if p.passage_id == pid), None)
        if stored is not None:
            return ReadPassage(stored, text[stored.start:stored.end], version)
        # A span that is not a stored passage: identity computed the same way; the heading context
        # of the active passage that contains its start.
        anchor, context = "", ""
        for p in bundle.active_passages:
            if p.start <= span.start < p.end:
                anchor, context = p.source_anchor, p.heading_context
                break
        body = text[span.start:span.end]
        passage = PassageRecord(passage_id=pid, tenant_id=version.tenant_id, document_id=version.document_id,
                                version_id=version.version_id, ordinal=-1, start=span.start, end=span.end,
                                content_sha256=sha256_hex(body), source_anchor=anchor, heading_context=context,
                                extraction_version=version.extraction_version, active=False)
        return ReadPassage(passage, body, version)

    @staticmethod
    def _can_read(principal: Principal, version: VersionRecord) -> bool:
        """Same tenant (the store query already enforces it), then audience: a privileged reader
        (policy_admin, reviewer, auditor) sees every audience and status of its tenant; anyone else
        only versions whose audience shares one of their roles, and never drafts."""
        if version.tenant_id != principal.tenant_id:
            return False
        if principal.has_any_role(PRIVILEGED_READERS):
            return True
        if version.status == DRAFT:
            return False
        return not version.roles or principal.has_any_role(version.roles)

    # --- listing ------------------------------------------------------------------------------

    def list_versions(self, principal: Principal, document_id: str, status: str | None, page_size: int,
                      page_token: str) -> tuple[list[VersionRecord], str]:
        if page_size < 0:
            raise InvalidArgument("PAGE_SIZE_OUT_OF_RANGE", "page_size must be >= 0", field="page_size")
        if status is not None and status not in VERSION_STATUSES:
            raise InvalidArgument("INVALID_STATUS", f"status {status!r} is not one of {', '.join(VERSION_STATUSES)}", field="status")
        size = min(page_size or self.settings.default_page_size, self.settings.max_page_size)
        after = None
        if page_token:
            try:
                after = decode_page_token(page_token)
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidArgument("INVALID_PAGE_TOKEN", "page_token was not issued by ListVersions", field="page_token") from exc
        out: list[VersionRecord] = []
        more = False
        while True:
            batch = self.store.list_versions(principal.tenant_id, document_id=document_id or None, status=status,
                                             limit=size * 2, after=after)
            for version in batch:
                if self._can_read(principal, version):
                    self._verify_listed(version)
                    if len(out) == size:
                        more = True
                        break
                    out.append(version)
            if more or len(batch) < size * 2:
                break
            after = (batch[-1].ingested_at, batch[-1].version_id)
        token = encode_page_token(out[-1].ingested_at, out[-1].version_id) if more and out else ""
        return out, token

    def _verify_listed(self, version: VersionRecord) -> None:
        """Listed metadata is signed metadata: a version whose statement fails is DATA_LOSS (its
        text is checked wherever it is served)."""
        try:
            self.store.sealer.verify_statement(version)
        except IntegrityFailure as failure:
            raise self._refuse(failure) from None

    # --- helpers ------------------------------------------------------------------------------

    @staticmethod
    def _require_admin(principal: Principal) -> None:
        if POLICY_ADMIN not in principal.roles:
            raise PermissionDenied("POLICY_ADMIN_REQUIRED", "this call needs the policy_admin role")

    @staticmethod
    def _check_vocabulary(field: str, values, allowed, reason: str) -> None:
        for value in values:
            if value not in allowed:
                raise InvalidArgument(reason, f"{field} entry {value!r} is not one of {', '.join(allowed)}", field=field)

