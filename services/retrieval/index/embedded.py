"""The embedded (in-process) hybrid index: BM25 over an inverted index + exact vector search.

Scope filtering happens first and inside both retrievers: the passages a ScopeFilter
admits are computed from metadata (see ``_Snapshot.eligible_rows``) and only those rows
are scored, lexically and by vector; a filter is never relaxed.

Metadata lives in *scope groups*: passages whose SCOPE_FIELDS are equal (in practice, the
passages of one version) share a group holding their row numbers as a numpy array.
ScopeFilter.admits — the one definition of eligibility — runs once per group of the
caller's tenant, and the eligible rows are the concatenation of the admitted groups.

Concurrency: writers take a lock, build a new immutable ``_Snapshot`` and publish it with
one assignment; searches read whichever snapshot is current and need no lock. Buffers
(document lengths, vectors) only grow by appending past every published view, so an
older snapshot still sees exactly its own rows.

Corpus statistics (N, document frequencies, average length) cover every live passage
of the index, all tenants and statuses, as in a single-shard Lucene index.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
from collections import Counter
from collections.abc import Iterable

import numpy as np

from .analyzer import EnglishAnalyzer
from .base import FusedSearch, rebuild_in_place
from .types import (
    PASSAGE_STATUSES,
    BackendHealth,
    BM25Settings,
    IndexedPassage,
    IndexReport,
    ScopeFilter,
    SearchQuery,
    UpsertError,
)

_EMPTY_ROWS = np.empty(0, dtype=np.int64)
#: Above this many contiguous runs, eligible vectors are gathered instead of sliced.
_MAX_SLICED_RUNS = 64
#: Dead rows (replaced or removed passages) tolerated before the buffers are compacted.
_MIN_DEAD_ROWS_TO_COMPACT = 1024
_rowwise_dot = getattr(np, "vecdot", None) or (lambda m, q: np.einsum("ij,j->i", m, q))


def _vector_digest(vector) -> bytes:
    if vector is None:
        return b""
    return hashlib.sha256(np.ascontiguousarray(vector, dtype=np.float32).tobytes()).digest()


def _fingerprint(p: IndexedPassage, vector_digest: bytes) -> int:
    """Content identity of a passage (every field, and its vector's digest), as an int."""
    fields = [
        p.passage_id, p.tenant_id, p.document_id, p.version_id, p.source_class, p.text,
        "\x1e".join(p.roles), "\x1e".join(p.location_scope), "\x1e".join(p.intents),
        p.locale, p.status, p.valid_from.isoformat(), p.valid_to.isoformat() if p.valid_to else "",
    ]  # fmt: skip
    digest = hashlib.sha256("\x1f".join(fields).encode("utf-8"))
    digest.update(vector_digest)
    return int.from_bytes(digest.digest()[:16], "big")


class _GrowableRows:
    """A numpy buffer that grows by appending rows; ``view(n)`` is stable for old n."""

    def __init__(self, row_shape: tuple[int, ...], dtype) -> None:
        self._buffer = np.zeros((1024, *row_shape), dtype=dtype)

    def put(self, row: int, value) -> None:
        if row >= len(self._buffer):
            grown = np.zeros(
                (max(2 * len(self._buffer), row + 1), *self._buffer.shape[1:]), self._buffer.dtype
            )
            grown[: len(self._buffer)] = self._buffer
            self._buffer = grown  # old snapshots keep the old buffer: nothing they see changes
        self._buffer[row] = value

    def get(self, row: int):
        return self._buffer[row]

    def view(self, n: int) -> np.ndarray:
        return self._buffer[:n]


@dataclasses.dataclass(frozen=True)
class _Group:
    representative: IndexedPassage  # any member: admission depends only on SCOPE_FIELDS
    rows: np.ndarray


@dataclasses.dataclass(frozen=True)
class _Snapshot:
    """Everything a search reads, immutable once published."""

    n_rows: int
    row_pid: list[str]  # append-only and never rewritten; read only below n_rows
    groups_by_tenant: dict[str, tuple[_Group, ...]]
    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # term -> (rows ascending, term frequencies)
    doc_len: np.ndarray
    n_docs: int
    avg_doc_len: float
    vectors: np.ndarray | None
    has_vector: np.ndarray
    bm25: BM25Settings
    generation: str

    def eligible_rows(self, scope: ScopeFilter) -> np.ndarray:
        admitted = [
            g.rows for g in self.groups_by_tenant.get(scope.tenant_id, ()) if scope.admits(g.representative)
        ]
        if len(admitted) <= 1:
            return admitted[0] if admitted else _EMPTY_ROWS  # a group's rows are sorted already
        return np.sort(np.concatenate(admitted))


def _top_candidates(
    rows: np.ndarray, scores: np.ndarray, limit: int, row_pid: list[str]
) -> list[tuple[str, float]]:
    """Best ``limit`` (passage_id, score), ties by passage_id, without sorting everything."""
    if len(rows) > limit:
        threshold = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        keep = scores >= threshold  # keeps every row tied at the cut, so ties resolve by id
        rows, scores = rows[keep], scores[keep]
    ranked = sorted(
        zip((row_pid[r] for r in rows.tolist()), scores.tolist(), strict=True), key=lambda c: (-c[1], c[0])
    )
    return ranked[:limit]


def _contiguous_runs(rows: np.ndarray) -> list[tuple[int, int]]:
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(rows)]))
    return [(int(rows[s]), int(rows[e - 1]) + 1) for s, e in zip(starts, ends, strict=True)]


def _dot_rows(vectors: np.ndarray, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Dot products of the given rows only. Row-wise reduction (not BLAS gemv), so equal
    vectors get bit-identical scores wherever they sit; slices avoid copying when the
    eligible rows form few contiguous runs."""
    runs = _contiguous_runs(rows)
    if len(runs) <= _MAX_SLICED_RUNS:
        return np.concatenate([_rowwise_dot(vectors[a:b], query) for a, b in runs])
    return _rowwise_dot(np.take(vectors, rows, axis=0), query)


class EmbeddedIndex(FusedSearch):
    """In-process SearchBackend. Thread-safe: writes are serialised, searches lock-free."""

    name = "embedded"
    # The two retrievers are separate work on one snapshot: the core times them one by one.
    one_request_for_both = False
    process_local = True

    def __init__(self, bm25: BM25Settings | None = None, analyzer: EnglishAnalyzer | None = None) -> None:
        self._analyzer = analyzer or EnglishAnalyzer()
        self._write_lock = threading.Lock()
        self._bm25 = bm25 or BM25Settings()
        self._dimension: int | None = None
        self._reset_rows()
        self._snapshot = self._build_snapshot()

    def _reset_rows(self) -> None:
        """Fresh writer-side state (touched only under _write_lock). Always new objects:
        published snapshots keep referring to the old ones."""
        self._row_by_pid: dict[str, int] = {}
        self._passages: list[IndexedPassage | None] = []  # by row; None once replaced or removed
        self._row_pid: list[str] = []
        self._row_terms: list[Counter | None] = []
        self._fingerprints: dict[str, int] = {}
        self._vector_digests: dict[str, bytes] = {}
        self._doc_len = _GrowableRows((), np.float32)
        self._has_vector = _GrowableRows((), np.bool_)
        self._vectors: _GrowableRows | None = None
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._group_members: dict[tuple, dict[int, None]] = {}  # scope key -> ordered set of rows
        self._groups: dict[tuple, _Group] = {}
        self._version_rows: dict[tuple[str, str], set[int]] = {}
        self._n_docs = 0
        self._total_len = 0.0
        self._content_digest = 0  # XOR of live fingerprints: order-free, updatable in O(1)

    # -- reads -----------------------------------------------------------------

    def generation(self) -> str:
        return self._snapshot.generation

    def count(self) -> int:
        return self._snapshot.n_docs

    def health(self) -> BackendHealth:
        return BackendHealth("green", nodes=1, detail="in-process")

    def row_count(self) -> int:
        """Rows held, live and dead (a replaced or removed passage leaves a dead row until the rows
        are compacted, once the dead outnumber the live)."""
        return len(self._row_pid)

    @property
    def bm25(self) -> BM25Settings:
        return self._snapshot.bm25

    def rebuild_scope(self, force: bool = False):
        """No generations: a rebuild writes into this index in place."""
        return rebuild_in_place()

    def candidate_lists(self, query: SearchQuery) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """The lexical and the vector (passage_id, score) lists of ``query.fusion.mode`` from one
        snapshot, the scope's eligible rows computed once and applied inside both retrievers."""
        snap = self._snapshot
        eligible = snap.eligible_rows(query.scope)
        mode, limit = query.fusion.mode, query.fusion.candidate_k
        lexical = self._lexical_candidates(snap, query.text, eligible, limit) if mode != "vector" else []
        vector = self._vector_candidates(snap, query, eligible, limit) if mode != "lexical" else []
        return lexical, vector

    def _lexical_candidates(self, snap: _Snapshot, text: str, eligible: np.ndarray, limit: int):
        query_terms = Counter(self._analyzer(text))
        if not query_terms or not len(eligible):
            return []
        is_eligible = np.zeros(snap.n_rows, dtype=np.bool_)
        is_eligible[eligible] = True
        scores = np.zeros(snap.n_rows, dtype=np.float64)
        matched = np.zeros(snap.n_rows, dtype=np.bool_)
        k1, b = snap.bm25.k1, snap.bm25.b
        for term, query_tf in query_terms.items():
            if term not in snap.postings:
                continue
            rows, tfs = snap.postings[term]
            idf = math.log(1.0 + (snap.n_docs - len(rows) + 0.5) / (len(rows) + 0.5))
            keep = is_eligible[rows]  # only eligible passages are scored
            rows, tfs = rows[keep], tfs[keep]
            length_norm = k1 * (1.0 - b + b * snap.doc_len[rows] / snap.avg_doc_len)
            scores[rows] += query_tf * idf * tfs / (tfs + length_norm)
            matched[rows] = True
        hit_rows = np.flatnonzero(matched)
        return _top_candidates(hit_rows, scores[hit_rows], limit, snap.row_pid)

    def _vector_candidates(self, snap: _Snapshot, query: SearchQuery, eligible: np.ndarray, limit: int):
        if snap.vectors is None or not len(eligible):
            return []
        vector = query.require_dimension(snap.vectors.shape[1])
        rows = eligible[snap.has_vector[eligible]]
        if not len(rows):
            return []
        scores = _dot_rows(snap.vectors, rows, vector / float(np.linalg.norm(vector)))  # cosine: stored vectors are unit length
        return _top_candidates(rows, scores.astype(np.float64), limit, snap.row_pid)

    # -- writes ----------------------------------------------------------------

    def set_bm25(self, settings: BM25Settings) -> None:
        """Change k1/b for subsequent searches (scoring-time parameters; no re-indexing)."""
        with self._write_lock:
            self._bm25 = settings
            self._snapshot = self._build_snapshot()

    def upsert(self, passages: Iterable[IndexedPassage]) -> IndexReport:
        indexed, errors = 0, []
        with self._write_lock:
            added: dict[str, list[tuple[int, int]]] = {}
            removed: dict[str, set[int]] = {}
            touched: set[tuple] = set()
            for p in passages:
                reason = self._rejection_reason(p)
                if reason:
                    errors.append(UpsertError(getattr(p, "passage_id", ""), reason))
                    continue
                vector_digest = _vector_digest(p.vector)
                fingerprint = _fingerprint(p, vector_digest)
                if self._fingerprints.get(p.passage_id) != fingerprint:  # identical: nothing to do
                    if p.passage_id in self._row_by_pid:
                        self._retire_row(self._row_by_pid[p.passage_id], removed, touched)
                    self._append_row(p, fingerprint, vector_digest, added, touched)
                indexed += 1
            self._apply_postings(added, removed)
            self._refresh_groups(touched)
            self._compact_if_sparse()
            self._snapshot = self._build_snapshot()
        return IndexReport(indexed=indexed, errors=errors)

    def set_version_status(self, tenant_id: str, version_id: str, status: str) -> int:
        if status not in PASSAGE_STATUSES:
            raise ValueError(f"status must be one of {sorted(PASSAGE_STATUSES)}, got {status!r}")
        changed = 0
        with self._write_lock:
            touched: set[tuple] = set()
            for row in sorted(self._version_rows.get((tenant_id, version_id), ())):
                old = self._passages[row]
                if old.status != status:
                    self._replace_metadata(row, dataclasses.replace(old, status=status), touched)
                    changed += 1
            if changed:
                self._refresh_groups(touched)
                self._snapshot = self._build_snapshot()
        return changed

    def remove_version(self, tenant_id: str, version_id: str) -> int:
        with self._write_lock:
            rows = sorted(self._version_rows.get((tenant_id, version_id), ()))
            removed: dict[str, set[int]] = {}
            touched: set[tuple] = set()
            for row in rows:
                self._retire_row(row, removed, touched)
            if rows:
                self._apply_postings({}, removed)
                self._refresh_groups(touched)
                self._compact_if_sparse()
                self._snapshot = self._build_snapshot()
        return len(rows)

    def _rejection_reason(self, p) -> str | None:
        if not isinstance(p, IndexedPassage):
            return f"not an IndexedPassage: {type(p).__name__}"
        if not p.text.strip():
            return "empty text"
        if p.vector is None:
            return None
        vector = np.asarray(p.vector)
        if vector.ndim != 1 or vector.shape[0] == 0:
            return f"vector must be one-dimensional and non-empty, got shape {vector.shape}"
        if self._dimension is not None and vector.shape[0] != self._dimension:
            return f"vector has {vector.shape[0]} dimensions, the index {self._dimension}"
        if not np.all(np.isfinite(vector)) or not np.any(vector):
            return "vector must be finite and non-zero"
        return None

    def _append_row(
        self,
        p: IndexedPassage,
        fingerprint: int,
        vector_digest: bytes,
        added,
        touched: set[tuple],
        terms: Counter | None = None,
        unit_vector: np.ndarray | None = None,
    ) -> None:
        """A new row for ``p``. ``terms``/``unit_vector`` carry over an existing row's
        analysis and stored vector (compaction) so nothing is recomputed."""
        row = len(self._row_pid)
        terms = terms if terms is not None else Counter(self._analyzer(p.text))
        for term, tf in terms.items():
            added.setdefault(term, []).append((row, tf))
        self._row_pid.append(p.passage_id)
        self._passages.append(dataclasses.replace(p, vector=None))  # the buffer holds the vector
        self._row_terms.append(terms)
        self._doc_len.put(row, sum(terms.values()))
        if unit_vector is not None:
            self._vectors.put(row, unit_vector)
            self._has_vector.put(row, True)
        else:
            self._put_vector(row, p.vector)
        self._row_by_pid[p.passage_id] = row
        self._fingerprints[p.passage_id] = fingerprint
        self._vector_digests[p.passage_id] = vector_digest
        self._content_digest ^= fingerprint
        self._n_docs += 1
        self._total_len += sum(terms.values())
        self._join_group(row, p, touched)
        self._version_rows.setdefault((p.tenant_id, p.version_id), set()).add(row)

    def _put_vector(self, row: int, vector) -> None:
        if vector is None:
            self._has_vector.put(row, False)
            return
        vector = np.asarray(vector, dtype=np.float32)
        if self._dimension is None:
            self._dimension = vector.shape[0]
        if self._vectors is None:
            self._vectors = _GrowableRows((self._dimension,), np.float32)
        self._vectors.put(row, vector / np.linalg.norm(vector))  # unit length: dot = cosine
        self._has_vector.put(row, True)

    def _compact_if_sparse(self) -> None:
        """Rebuild the rows without the dead ones once they outnumber the live ones
        (replaced or removed passages leave dead rows behind in the append-only buffers)."""
        dead = len(self._row_pid) - self._n_docs
        if dead < _MIN_DEAD_ROWS_TO_COMPACT or dead < self._n_docs:
            return
        live = [r for r, p in enumerate(self._passages) if p is not None]
        carried = [
            (self._passages[r], self._fingerprints[self._row_pid[r]], self._vector_digests[self._row_pid[r]],
             self._row_terms[r],
             self._vectors.get(r).copy() if self._vectors is not None and self._has_vector.get(r) else None)
            for r in live
        ]  # fmt: skip
        self._reset_rows()
        added: dict[str, list[tuple[int, int]]] = {}
        touched: set[tuple] = set()
        for p, fingerprint, vector_digest, terms, unit_vector in carried:
            if unit_vector is not None and self._vectors is None:
                self._vectors = _GrowableRows((self._dimension,), np.float32)
            self._append_row(p, fingerprint, vector_digest, added, touched, terms, unit_vector)
        self._apply_postings(added, {})
        self._refresh_groups(touched)

    def _retire_row(self, row: int, removed, touched: set[tuple]) -> None:
        p = self._passages[row]
        for term in self._row_terms[row]:
            removed.setdefault(term, set()).add(row)
        self._total_len -= float(self._doc_len.get(row))
        self._n_docs -= 1
        self._content_digest ^= self._fingerprints.pop(p.passage_id)
        del self._vector_digests[p.passage_id]
        del self._row_by_pid[p.passage_id]
        self._leave_group(row, p, touched)
        self._version_rows[(p.tenant_id, p.version_id)].discard(row)
        self._passages[row] = None
        self._row_terms[row] = None

    def _replace_metadata(self, row: int, new: IndexedPassage, touched: set[tuple]) -> None:
        old = self._passages[row]
        self._leave_group(row, old, touched)
        self._join_group(row, new, touched)
        fingerprint = _fingerprint(new, self._vector_digests[new.passage_id])
        self._content_digest ^= self._fingerprints[new.passage_id] ^ fingerprint
        self._fingerprints[new.passage_id] = fingerprint
        self._passages[row] = new

    def _join_group(self, row: int, p: IndexedPassage, touched: set[tuple]) -> None:
        key = p.scope_key()
        self._group_members.setdefault(key, {})[row] = None
        touched.add(key)

    def _leave_group(self, row: int, p: IndexedPassage, touched: set[tuple]) -> None:
        key = p.scope_key()
        del self._group_members[key][row]
        touched.add(key)

    def _refresh_groups(self, touched: set[tuple]) -> None:
        for key in touched:
            members = self._group_members.get(key)
            if not members:
                self._group_members.pop(key, None)
                self._groups.pop(key, None)
                continue
            rows = np.fromiter(members, dtype=np.int64, count=len(members))
            rows.sort()
            self._groups[key] = _Group(self._passages[int(rows[0])], rows)

    def _apply_postings(self, added: dict[str, list[tuple[int, int]]], removed: dict[str, set[int]]) -> None:
        if not added and not removed:
            return
        postings = dict(self._postings)  # copy-on-write: published snapshots keep the old dict
        for term in added.keys() | removed.keys():
            rows, tfs = postings.get(term, (_EMPTY_ROWS, np.empty(0, np.float32)))
            if term in removed:
                keep = ~np.isin(rows, np.fromiter(removed[term], dtype=np.int64))
                rows, tfs = rows[keep], tfs[keep]
            # A row appended and replaced within one batch is added and removed: drop it.
            fresh = [(r, tf) for r, tf in added.get(term, ()) if r not in removed.get(term, ())]
            if fresh:  # new rows are larger than every existing row: stays sorted
                new = np.array(fresh, dtype=np.int64)
                rows = np.concatenate((rows, new[:, 0]))
                tfs = np.concatenate((tfs, new[:, 1].astype(np.float32)))
            if len(rows):
                postings[term] = (rows, tfs)
            else:
                postings.pop(term, None)
        self._postings = postings

    def _build_snapshot(self) -> _Snapshot:
        n_rows = len(self._row_pid)
        by_tenant: dict[str, list[_Group]] = {}
        for key in self._groups:
            by_tenant.setdefault(key[0], []).append(self._groups[key])
        return _Snapshot(
            n_rows=n_rows,
            row_pid=self._row_pid,
            groups_by_tenant={t: tuple(gs) for t, gs in by_tenant.items()},
            postings=self._postings,
            doc_len=self._doc_len.view(n_rows),
            n_docs=self._n_docs,
            avg_doc_len=max(self._total_len / self._n_docs, 1e-9) if self._n_docs else 1.0,
            vectors=self._vectors.view(n_rows) if self._vectors is not None else None,
            has_vector=self._has_vector.view(n_rows),
            bm25=self._bm25,
            generation=f"{self.name}:{self._analyzer.version}:{self._content_digest:032x}",
        )
