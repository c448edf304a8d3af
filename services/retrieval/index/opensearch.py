"""The OpenSearch search backend (opensearch-py): same contract as the embedded index.

Layout on the cluster (``prefix`` = ``OpenSearchConfig.index_prefix``):

- ``<prefix>passages-<generation>``: one index per *generation*. A generation is written from the
  store of record by a rebuild; its name is a UTC timestamp plus a counter
  (``20261130t133512-000``), so names sort by age.
- ``<prefix>passages``: the alias searches and live writes go through. ``switch`` moves it with one
  atomic ``_aliases`` request; ``rollback`` moves it back to the previous generation. The index is
  derived data: any generation can be rebuilt from the store of record.

Mapping (created by the service with each index): ``text`` with the ``english`` analyzer; keyword
fields for every scope filter (tenant_id, roles, location_scope, intents, locale, status) and the
identities; ``valid_from``/``valid_to`` as ``date_nanos`` (microsecond-exact, as ScopeFilter compares
them); ``vector`` a 384-d ``knn_vector`` (hnsw, lucene engine, cosinesimil) with ``index.knn: true``;
BM25 k1/b from BM25Settings as the index's default similarity; replicas 0 by default.

Search: the BM25 ``match`` query and the ``knn`` query each carry the SAME scope filter
(:func:`scope_filter`, a translation of ScopeFilter.admits) inside the query; for ``knn`` it is the
``filter`` inside the k-NN clause (lucene's filtered HNSW search, not a post-filter). Both go in one
``_msearch``; the two candidate lists are fused client-side with services/retrieval/index/fusion.py
(same methods, same tie-break by passage_id). Each list is sorted by score then passage_id on the
server too, so the cut at ``candidate_k`` is deterministic.

Writes: bulk ``update`` with ``doc_as_upsert`` and ``detect_noop``, so re-sending an identical
passage changes nothing (not even the sequence number, which is what ``generation()`` reports).
Every refused document is reported in ``IndexReport.errors`` with OpenSearch's reason.

Failures: connection errors, timeouts, 429 and 502-504 are retried with exponential backoff, and so
is a search answered from fewer shards than the index has (``_shards.failed`` > 0 or ``timed_out``:
a node died while holding a shard copy the search used — OpenSearch reports it as a 200 with partial
hits, which must never become an answer); each retry goes to the client's next live host (every node
of the cluster belongs in ``hosts``: a refused host is marked dead and skipped). When retries are
exhausted the call raises ``kit.errors.Unavailable`` with reason ``SEARCH_BACKEND_UNAVAILABLE`` (the
retrieval RPC then fails with UNAVAILABLE). Every failed attempt counts in
citetrace_search_backend_errors_total (outcome retried / exhausted).

Health: ``health()`` asks one node for the health of the live index (``local=true``, so a cluster
busy electing a new manager still answers) and never raises; the retrieval service polls it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
import re
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

import numpy as np
from citetrace.kit.errors import FailedPrecondition, NotFound, Unavailable
from citetrace.kit.metrics import init_search_backend_metrics, record_search_backend_error
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import NotFoundError, TransportError

from .base import FusedSearch
from .types import (
    ELIGIBLE_STATUS,
    PASSAGE_STATUSES,
    BackendHealth,
    BM25Settings,
    IndexedPassage,
    IndexReport,
    ScopeFilter,
    SearchQuery,
    UpsertError,
)

log = logging.getLogger("citetrace.retrieval.opensearch")

UNAVAILABLE_REASON = "SEARCH_BACKEND_UNAVAILABLE"
TRANSIENT_STATUS = frozenset({429, 502, 503, 504})
SCHEMA_VERSION = 1
_GENERATION = re.compile(r"^\d{8}t\d{6}-\d{3}$")
# The first generation's fixed name (see _create_first_generation); it sorts before every later one,
# which are named by the time they were made.
FIRST_GENERATION = "00000000t000000-000"
_BULK_CHUNK = 500


@dataclasses.dataclass(frozen=True)
class OpenSearchConfig:
    """How to reach the cluster and shape the index (built from the retrieval Settings)."""

    hosts: tuple[str, ...] = ("http://127.0.0.1:9200",)
    username: str = ""
    password: str = ""
    use_ssl: bool = False
    verify_certs: bool = True
    ca_certs: str = ""
    index_prefix: str = "citetrace-"
    timeout_seconds: float = 10.0
    max_retries: int = 3
    retry_backoff_seconds: float = 0.2
    shards: int = 1
    replicas: int = 0
    dimension: int = 384
    keep_generations: int = 3
    # Service start-up: True writes a fresh generation from the store of record and switches the
    # alias to it; False keeps the live generation (creating one if there is none) and upserts into
    # it (identical passages are no-ops).
    rebuild_on_start: bool = True
    # How long generation() may be reused before the alias and sequence numbers are read again
    # (another process may have switched the alias or written).
    generation_ttl_seconds: float = 2.0
    bm25: BM25Settings = dataclasses.field(default_factory=BM25Settings)

    def __post_init__(self) -> None:
        if not self.hosts:
            raise ValueError("opensearch hosts must not be empty")
        for host in self.hosts:
            if not re.match(r"^https?://[^/\s:]+(:\d{1,5})?/?$", host):
                raise ValueError(f"opensearch host {host!r} must look like http(s)://HOST[:PORT]")
        if bool(self.username) != bool(self.password):
            raise ValueError("opensearch username and password go together")
        if not re.match(r"^[a-z0-9][a-z0-9_.-]{0,100}$", self.index_prefix):
            raise ValueError(f"index prefix {self.index_prefix!r} must be lowercase [a-z0-9_.-], not empty")
        if self.timeout_seconds <= 0 or self.retry_backoff_seconds < 0 or self.max_retries < 0:
            raise ValueError("timeout must be > 0, backoff >= 0, max_retries >= 0")
        if self.shards < 1 or self.replicas < 0 or self.keep_generations < 1 or self.dimension < 1:
            raise ValueError("need shards >= 1, replicas >= 0, keep_generations >= 1, dimension >= 1")

    @property
    def alias(self) -> str:
        return f"{self.index_prefix}passages"

    def index_name(self, generation: str) -> str:
        return f"{self.alias}-{generation}"

    def uses_tls(self) -> bool:
        return self.use_ssl or any(h.startswith("https://") for h in self.hosts)


@dataclasses.dataclass(frozen=True)
class Generation:
    name: str
    index: str
    docs: int
    created_at: str
    live: bool


# -- the eligibility rule as an OpenSearch filter ------------------------------------------------


def _ts(value: datetime) -> str:
    """UTC, microseconds, 'Z': parsed exactly by a date_nanos field."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _missing(field: str) -> dict:
    return {"bool": {"must_not": [{"exists": {"field": field}}]}}


def _either(*clauses: dict) -> dict:
    return {"bool": {"should": list(clauses), "minimum_should_match": 1}}


def scope_filter(scope: ScopeFilter) -> list[dict]:
    """ScopeFilter.admits as ``bool.filter`` clauses, rule by rule (numbers as in admits).

    "Empty means all" (passage roles, passage location_scope) is an empty array, which OpenSearch
    does not index: such a passage has no value for the field, matched by ``must_not exists``.
    """
    clauses: list[dict] = [
        {"term": {"tenant_id": scope.tenant_id}},  # 1
        {"term": {"status": ELIGIBLE_STATUS}},  # 2
        {"range": {"valid_from": {"lte": _ts(scope.as_of)}}},  # 3
        _either(_missing("valid_to"), {"range": {"valid_to": {"gt": _ts(scope.as_of)}}}),  # 4
    ]
    if scope.roles:  # 5 (a caller with no role sees only passages for every role)
        clauses.append(_either(_missing("roles"), {"terms": {"roles": list(scope.roles)}}))
    else:
        clauses.append(_missing("roles"))
    if scope.location_ids:  # 6 (a caller naming no location is not restricted)
        clauses.append(
            _either(_missing("location_scope"), {"terms": {"location_scope": list(scope.location_ids)}})
        )
    if scope.intents:  # 7
        clauses.append({"terms": {"intents": list(scope.intents)}})
    if scope.locale is not None:  # 8
        clauses.append({"term": {"locale": scope.locale}})
    if scope.source_classes:  # 9
        clauses.append({"terms": {"source_class": list(scope.source_classes)}})
    return clauses


def index_body(config: OpenSearchConfig, generation: str) -> dict:
    keyword = {"type": "keyword"}
    return {
        "settings": {
            "index": {
                "knn": True,
                "number_of_shards": config.shards,
                "number_of_replicas": config.replicas,
                "similarity": {"default": {"type": "BM25", "k1": config.bm25.k1, "b": config.bm25.b}},
            }
        },
        "mappings": {
            "dynamic": "strict",
            "_meta": {
                "citetrace": {
                    "schema": SCHEMA_VERSION,
                    "generation": generation,
                    "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                }
            },
            "properties": {
                "passage_id": keyword,
                "tenant_id": keyword,
                "document_id": keyword,
                "version_id": keyword,
                "source_class": keyword,
                "roles": keyword,
                "location_scope": keyword,
                "intents": keyword,
                "locale": keyword,
                "status": keyword,
                "text": {"type": "text", "analyzer": "english"},
                "valid_from": {"type": "date_nanos"},
                "valid_to": {"type": "date_nanos"},
                "vector": {
                    "type": "knn_vector",
                    "dimension": config.dimension,
                    # The engine must be named: the default (faiss) has no native library here.
                    "method": {
                        "name": "hnsw",
                        "engine": "lucene",
                        "space_type": "cosinesimil",
                        "parameters": {"m": 16, "ef_construction": 100},
                    },
                },
            },  # fmt: skip
        },
    }


def _source(p: IndexedPassage) -> dict:
    """Every field, always (a partial update then replaces each one, nulls included)."""
    return {
        "passage_id": p.passage_id, "tenant_id": p.tenant_id, "document_id": p.document_id,
        "version_id": p.version_id, "source_class": p.source_class, "text": p.text,
        "roles": list(p.roles), "location_scope": list(p.location_scope), "intents": list(p.intents),
        "locale": p.locale, "status": p.status, "valid_from": _ts(p.valid_from),
        "valid_to": _ts(p.valid_to) if p.valid_to is not None else None,
        "vector": [float(x) for x in np.asarray(p.vector, dtype=np.float32).reshape(-1)]
        if p.vector is not None else None,
    }  # fmt: skip


def _client_side_rejection(p) -> str | None:
    """What cannot even be sent (JSON has no NaN); the rest is OpenSearch's to refuse."""
    if not isinstance(p, IndexedPassage):
        return f"not an IndexedPassage: {type(p).__name__}"
    if not p.text.strip():
        return "empty text"
    if p.vector is not None:
        vector = np.asarray(p.vector)
        if vector.ndim != 1 or vector.shape[0] == 0:
            return f"vector must be one-dimensional and non-empty, got shape {vector.shape}"
        if not np.all(np.isfinite(vector)):
            return "vector must be finite"
    return None


def _error_text(error) -> str:
    if isinstance(error, dict):
        reason = error.get("reason", "")
        cause = error.get("caused_by", {})
        extra = f" (caused by {cause.get('type')}: {cause.get('reason')})" if cause else ""
        return f"{error.get('type', 'error')}: {reason}{extra}"
    return str(error)


class _Transient(Exception):
    """A retryable failure found inside a 200 response (a bulk item or msearch item with 429...)."""


class OpenSearchBackend(FusedSearch):
    """SearchBackend on an OpenSearch cluster. Thread-safe (the client is; state changes lock)."""

    # Both retrievers' lists come from one _msearch: the service asks for them together.
    one_request_for_both = True
    # Shared by every replica on the cluster.
    process_local = False

    name = "opensearch"

    def __init__(self, config: OpenSearchConfig | None = None, client: OpenSearch | None = None) -> None:
        self.config = config or OpenSearchConfig()
        self.client = client or make_client(self.config)
        self._lock = threading.RLock()
        self._ready = False
        self._write_target: str | None = None  # an explicit index during a rebuild, else the alias
        self._generation_cache: tuple[float, str] | None = None
        init_search_backend_metrics(self.name)

    # -- calls with retries --------------------------------------------------------------------

    def _call(self, what: str, fn, *args, **kwargs):
        attempts = self.config.max_retries + 1
        last: Exception | None = None
        for attempt in range(attempts):
            try:
                return fn(*args, **kwargs)
            except OSConnectionError as exc:  # refused, reset, timeout (ConnectionTimeout)
                last = exc
            except TransportError as exc:
                if exc.status_code not in TRANSIENT_STATUS:
                    raise
                last = exc
            except _Transient as exc:
                last = exc
            record_search_backend_error(self.name, "retried" if attempt + 1 < attempts else "exhausted")
            if attempt + 1 < attempts:
                delay = self.config.retry_backoff_seconds * (2**attempt) * (0.5 + random.random())
                log.warning(
                    "opensearch %s failed (%s); retry %d/%d in %.2fs",
                    what,
                    _short(last),
                    attempt + 1,
                    attempts - 1,
                    delay,
                )
                time.sleep(delay)
        raise Unavailable(
            UNAVAILABLE_REASON,
            f"OpenSearch at {', '.join(self.config.hosts)} failed on {what} after {attempts} "
            f"attempts: {_short(last)}",
        )

    # -- generations ---------------------------------------------------------------------------

    def _ensure_ready(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            if not self._live_indices():
                self._create_first_generation()
            self._ready = True

    def _create_first_generation(self) -> None:
        """No live index yet: create the first generation with the alias on it, in one request.
        Replicas starting together (pods of a first deployment) all ask for the same index name;
        the cluster creates it once and the others find it already there and use it. Before, each
        named its own by the second it started in: two replicas could each make theirs live, the
        alias then pointed at two indices, and every write through it was refused."""
        index = self.config.index_name(FIRST_GENERATION)
        body = {**index_body(self.config, FIRST_GENERATION), "aliases": {self.config.alias: {}}}

        def create():
            try:
                self.client.indices.create(index=index, body=body)
            except TransportError as exc:
                # Another replica's, or this process's own first try that timed out after it happened.
                if exc.status_code != 400 or exc.error != "resource_already_exists_exception":
                    raise

        self._call("create first generation", create)
        self._wait_for_live_alias(index)
        self._call("wait for index", self.client.cluster.health, index=index, wait_for_status="yellow")
        self._generation_cache = None

    def _wait_for_live_alias(self, index: str) -> None:
        deadline = time.monotonic() + self.config.timeout_seconds
        while not self._live_indices():
            if time.monotonic() > deadline:
                raise Unavailable(UNAVAILABLE_REASON, f"{self.config.alias} points at no index although its first "
                                  f"generation {index} exists: make a generation live (citetrace index switch)")
            time.sleep(0.1)

    def _live_indices(self) -> list[str]:
        try:
            found = self._call("get alias", self.client.indices.get_alias, name=self.config.alias)
        except NotFoundError:
            return []
        return sorted(found)

    def _create_generation(self) -> str:
        existing = [g.name for g in self.list_generations()]
        stamp = datetime.now(UTC).strftime("%Y%m%dt%H%M%S")
        # Names must sort in creation order even after pruning freed a lower counter of this second:
        # never reuse a name, continue after the newest existing one.
        newest = max(existing, default="")
        generation = f"{stamp}-000"
        if newest >= generation:
            newest_stamp, _, newest_counter = newest.rpartition("-")
            generation = f"{max(stamp, newest_stamp)}-{int(newest_counter) + 1:03d}"
        index = self.config.index_name(generation)
        sent = []

        def create():
            # Not idempotent: a create that timed out may still have happened (a busy cluster manager),
            # so the retry's "already exists" for this never-reused name is that create's success.
            try:
                sent.append(index)
                self.client.indices.create(index=index, body=index_body(self.config, generation))
            except TransportError as exc:
                if len(sent) > 1 and exc.error == "resource_already_exists_exception":
                    return
                raise

        self._call("create index", create)
        self._call(
            "wait for index",
            self.client.cluster.health,
            index=self.config.index_name(generation),
            wait_for_status="yellow",
        )
        return generation

    def _switch_alias(self, index: str) -> None:
        actions = [
            {"remove": {"index": old, "alias": self.config.alias}}
            for old in self._live_indices()
            if old != index
        ]
        actions.append({"add": {"index": index, "alias": self.config.alias}})
        self._call("switch alias", self.client.indices.update_aliases, body={"actions": actions})
        self._generation_cache = None

    def list_generations(self) -> list[Generation]:
        """Every generation index of this prefix, oldest first, with the live one marked."""
        pattern = f"{self.config.alias}-*"
        rows = self._call(
            "list indices",
            self.client.cat.indices,
            index=pattern,
            format="json",
            h="index,docs.count,creation.date.string",
            params={"expand_wildcards": "all"},
        )
        live = set(self._live_indices())
        out = []
        for row in rows or []:
            name = row["index"][len(self.config.alias) + 1 :]
            if not _GENERATION.match(name):
                continue
            out.append(
                Generation(
                    name=name,
                    index=row["index"],
                    docs=int(row.get("docs.count") or 0),
                    created_at=row.get("creation.date.string", ""),
                    live=row["index"] in live,
                )
            )
        return sorted(out, key=lambda g: g.name)

    def live_generation(self) -> str | None:
        live = self._live_indices()
        return live[0][len(self.config.alias) + 1 :] if live else None

    def switch(self, generation: str) -> str:
        """Point the alias at an existing generation (atomic). Returns the previous live one."""
        with self._lock:
            known = {g.name: g for g in self.list_generations()}
            if generation not in known:
                raise NotFound(
                    "GENERATION_NOT_FOUND",
                    f"no generation {generation!r} under {self.config.alias}-*; "
                    f"known: {', '.join(sorted(known)) or 'none'}",
                )
            previous = self.live_generation()
            self._switch_alias(known[generation].index)
            self._ready = True
            return previous or ""

    def rollback(self) -> tuple[str, str]:
        """Switch to the newest generation older than the live one. Returns (from, to)."""
        with self._lock:
            live = self.live_generation()
            older = [g.name for g in self.list_generations() if live is None or g.name < live]
            if not older:
                raise FailedPrecondition(
                    "NO_OLDER_GENERATION", f"no generation older than {live!r} to roll back to"
                )
            self.switch(older[-1])
            return live or "", older[-1]

    def prune(self, keep: int | None = None) -> list[str]:
        """Delete the oldest non-live generations beyond ``keep``; returns the deleted names."""
        keep = self.config.keep_generations if keep is None else keep
        generations = self.list_generations()
        deleted = []
        for g in generations[: max(0, len(generations) - keep)]:
            if not g.live and g.index != self._write_target:
                self._call("delete index", self.client.indices.delete, index=g.index)
                deleted.append(g.name)
        return deleted

    @contextlib.contextmanager
    def rebuild_scope(self, force: bool = False) -> Iterator[str | None]:
        """Writes inside go to a NEW generation, made live by an alias switch when the block
        ends normally (then old generations beyond keep_generations are pruned); on an exception
        the new index is deleted and the live one stays. Without ``force`` and with
        ``rebuild_on_start`` false, the live generation is kept and written in place (yields None);
        when there is none yet, the first one is made live first (replicas starting together share it).
        """
        with self._lock:
            if not force and not self.config.rebuild_on_start:
                if not self._live_indices():
                    self._create_first_generation()
                self._ready = True
                yield None
                return
            generation = self._create_generation()
            index = self.config.index_name(generation)
            was_ready, self._ready = self._ready, True  # writes go to the new index, not via the alias
            self._write_target = index
            try:
                yield generation
                self._call("refresh", self.client.indices.refresh, index=index)
                self._switch_alias(index)
                self._ready = True
            except BaseException:
                self._ready = was_ready
                with contextlib.suppress(Exception):
                    self.client.indices.delete(index=index)
                raise
            finally:
                self._write_target = None
            deleted = self.prune()
            log.info(
                "opensearch: generation %s is live%s",
                generation,
                f"; pruned {', '.join(deleted)}" if deleted else "",
            )

    def drop_all(self) -> None:
        """Delete every generation of this prefix (tests and benchmarks clean up with it)."""
        with self._lock:
            self._call(
                "delete indices",
                self.client.indices.delete,
                index=f"{self.config.alias}-*",
                params={"expand_wildcards": "all"},
            )
            self._ready = False
            self._generation_cache = None

    # -- SearchBackend -------------------------------------------------------------------------

    def _target(self) -> str:
        return self._write_target or self.config.alias

    def generation(self) -> str:
        """``<generation>@<operations>``: the live index's generation and the number of write
        operations it has applied (sum over primaries of max_seq_no + 1; no-op updates do not
        count), so it changes exactly when what a search can see changes."""
        cached = self._generation_cache
        if cached is not None and time.monotonic() - cached[0] < self.config.generation_ttl_seconds:
            return cached[1]
        self._ensure_ready()
        try:
            stats = self._call("stats", self.client.indices.stats, index=self.config.alias, level="shards")
        except NotFoundError:  # the first generation is still being built: nothing is live yet
            return "none"
        parts = []
        for index, data in stats["indices"].items():
            ops = sum(
                copy["seq_no"]["max_seq_no"] + 1
                for copies in data["shards"].values()
                for copy in copies
                if copy["routing"]["primary"]
            )
            parts.append(f"{index[len(self.config.alias) + 1 :]}@{ops}")
        value = ",".join(sorted(parts))
        self._generation_cache = (time.monotonic(), value)
        return value

    def count(self) -> int:
        self._ensure_ready()
        return int(self._call("count", self.client.count, index=self._target())["count"])

    def upsert(self, passages: Iterable[IndexedPassage]) -> IndexReport:
        self._ensure_ready()
        errors: list[UpsertError] = []
        latest: dict[str, IndexedPassage] = {}  # the later copy of a passage in one batch wins
        for p in passages:
            reason = _client_side_rejection(p)
            if reason:
                errors.append(UpsertError(getattr(p, "passage_id", ""), reason))
                continue
            latest.pop(p.passage_id, None)
            latest[p.passage_id] = p
        indexed = 0
        batch = list(latest.values())
        for start in range(0, len(batch), _BULK_CHUNK):
            chunk_errors = self._bulk_upsert(batch[start : start + _BULK_CHUNK])
            indexed += len(batch[start : start + _BULK_CHUNK]) - len(chunk_errors)
            errors.extend(chunk_errors)
        self._generation_cache = None
        return IndexReport(indexed=indexed, errors=errors)

    def _bulk_upsert(self, passages: list[IndexedPassage]) -> list[UpsertError]:
        """One bulk request; items refused with a transient status are resent (backoff), the
        others reported one by one with OpenSearch's reason."""
        pending = {p.passage_id: p for p in passages}
        refused: list[UpsertError] = []
        target = self._target()
        refresh = "false" if self._write_target else "true"  # a generation being built is not live yet

        def attempt():
            body = []
            for pid, p in pending.items():
                body.append({"update": {"_index": target, "_id": pid}})
                body.append({"doc": _source(p), "doc_as_upsert": True, "detect_noop": True})
            response = self.client.bulk(body=body, refresh=refresh)
            retry = {}
            for item in response["items"]:
                result = item["update"]
                pid = result["_id"]
                if "error" not in result:
                    continue
                if result.get("status") in TRANSIENT_STATUS:
                    retry[pid] = pending[pid]
                else:
                    refused.append(UpsertError(pid, _error_text(result["error"])))
            pending.clear()
            pending.update(retry)
            if retry:
                raise _Transient(f"{len(retry)} documents refused with a transient status")

        if pending:
            self._call("bulk index", attempt)
        for pid, reason in ((e.passage_id, e.reason) for e in refused):
            log.warning("opensearch refused passage %s: %s", pid, reason)
        return refused

    def _version_passage_ids(
        self, tenant_id: str, version_id: str, not_status: str | None = None
    ) -> list[str]:
        """The passage ids of a version in the write target (paged by passage_id). Search + bulk
        instead of _update_by_query/_delete_by_query: those come from the reindex module, which a
        minimal cluster (the local dev node) does not load."""
        target = self._target()
        if self._write_target:  # a generation being built is not refreshed per write
            self._call("refresh", self.client.indices.refresh, index=target)
        query = {
            "bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"term": {"version_id": version_id}}]}
        }
        if not_status is not None:
            query["bool"]["must_not"] = [{"term": {"status": not_status}}]
        ids: list[str] = []
        after = None
        while True:
            body = {"size": 1000, "_source": False, "query": query, "sort": [{"passage_id": "asc"}]}
            if after is not None:
                body["search_after"] = after
            hits = self._call("search version", self.client.search, index=target, body=body)["hits"]["hits"]
            ids.extend(h["_id"] for h in hits)
            if len(hits) < 1000:
                return ids
            after = hits[-1]["sort"]

    def _bulk_by_id(self, what: str, actions: list[tuple[dict, dict | None]]) -> int:
        """Bulk ``actions`` (header, body) with retries; returns how many changed a document."""
        if not actions:
            return 0
        changed = 0
        refresh = "false" if self._write_target else "true"
        for start in range(0, len(actions), _BULK_CHUNK):
            body = []
            for header, doc in actions[start : start + _BULK_CHUNK]:
                body.append(header)
                if doc is not None:
                    body.append(doc)
            response = self._call(what, self.client.bulk, body=body, refresh=refresh)
            for item in response["items"]:
                result = next(iter(item.values()))
                if "error" in result:
                    if result.get("status") == 404:  # already gone: nothing changed
                        continue
                    raise RuntimeError(
                        f"OpenSearch refused {what} of {result['_id']}: {_error_text(result['error'])}"
                    )
                if result.get("result") in ("updated", "deleted"):
                    changed += 1
        self._generation_cache = None
        return changed

    def set_version_status(self, tenant_id: str, version_id: str, status: str) -> int:
        if status not in PASSAGE_STATUSES:
            raise ValueError(f"status must be one of {sorted(PASSAGE_STATUSES)}, got {status!r}")
        self._ensure_ready()
        target = self._target()
        ids = self._version_passage_ids(tenant_id, version_id, not_status=status)
        return self._bulk_by_id(
            "status update",
            [
                ({"update": {"_index": target, "_id": pid}}, {"doc": {"status": status}, "detect_noop": True})
                for pid in ids
            ],
        )

    def remove_version(self, tenant_id: str, version_id: str) -> int:
        self._ensure_ready()
        target = self._target()
        ids = self._version_passage_ids(tenant_id, version_id)
        return self._bulk_by_id("delete", [({"delete": {"_index": target, "_id": pid}}, None) for pid in ids])

    def health(self) -> BackendHealth:
        """The live index's health (cluster-level before the first generation exists) as a node
        that is part of the cluster sees it; "unreachable" when no node answers. A sample: at most one
        request per host (at most 5 s each), no backoff.

        ``local=true`` lets a node answer while the cluster elects a new manager; but a node that
        has not joined (just restarted) has the index metadata without its shard table and calls it
        red, so a reply without ``discovered_cluster_manager`` is not taken: the next host is asked
        (the client rotates through them). When every node that answers is without a manager the
        status is yellow: searches are still answered (only writes are blocked)."""
        # A sample is short (BackendHealthMonitor wants several bad ones in a row before NOT_SERVING):
        # a node that does not answer health within 5 s counts as not answering.
        timeout = min(self.config.timeout_seconds, 5.0)
        failure: Exception | None = None
        managerless = None
        for _ in self.config.hosts:
            try:
                reply = self._health_reply(timeout)
            except OSConnectionError as exc:  # the failed node is marked dead: the next call goes elsewhere
                failure = exc
                continue
            except Exception as exc:  # any other failure: no node answered usefully
                return BackendHealth("unreachable", detail=_short(exc))
            if not reply.get("discovered_cluster_manager", reply.get("discovered_master", True)):
                managerless = reply
                continue
            status = reply.get("status")
            if status not in ("green", "yellow", "red"):
                return BackendHealth("unreachable", detail=f"unexpected cluster health {status!r}")
            return BackendHealth(status, nodes=int(reply.get("number_of_nodes", 0)),
                                 detail=f"{reply.get('unassigned_shards', 0)} unassigned shards")
        if managerless is not None:
            return BackendHealth("yellow", nodes=int(managerless.get("number_of_nodes", 0)),
                                 detail="no elected cluster manager: searches answer, writes wait")
        return BackendHealth("unreachable", detail=_short(failure))

    def _health_reply(self, timeout: float) -> dict:
        # A missing index is answered 408 "timed_out" (without timeout=0s, after waiting 30 s for it).
        reply = self.client.cluster.health(index=self.config.alias, local=True, timeout="0s",
                                           request_timeout=timeout, ignore=(404, 408))
        if reply.get("timed_out") or "status" not in reply:
            reply = self.client.cluster.health(local=True, request_timeout=timeout)
        return reply

    def candidate_lists(self, query: SearchQuery) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """The lexical and the vector (passage_id, score) lists of ``query.fusion.mode``, both
        scoped inside the query, from one ``_msearch``. Vector scores are cosines."""
        self._ensure_ready()
        mode, limit = query.fusion.mode, query.fusion.candidate_k
        filters = scope_filter(query.scope)
        order = [{"_score": {"order": "desc"}}, {"passage_id": {"order": "asc"}}]
        searches: list[tuple[str, dict]] = []
        if mode != "vector":
            searches.append(("lexical", {
                "size": limit, "_source": False, "track_scores": True, "sort": order,
                "query": {"bool": {"must": [{"match": {"text": {"query": query.text}}}], "filter": filters}},
            }))  # fmt: skip
        if mode != "lexical":
            vector = query.require_dimension(self.config.dimension)
            searches.append(("vector", {
                "size": limit, "_source": False, "track_scores": True, "sort": order,
                "query": {"knn": {"vector": {"vector": [float(x) for x in vector], "k": limit,
                                             "filter": {"bool": {"filter": filters}}}}},
            }))  # fmt: skip
        body = []
        for _, search in searches:
            body.append({"index": self.config.alias})
            body.append(search)

        def attempt():
            responses = self.client.msearch(body=body)["responses"]
            for response in responses:
                if "error" in response:
                    # 5xx: the cluster's failure (e.g. "all shards failed" while a node dies), not the
                    # query's: retried like a transport-level 503. 4xx: the query itself was refused.
                    if response.get("status") in TRANSIENT_STATUS or response.get("status", 500) >= 500:
                        raise _Transient(_error_text(response["error"]))
                    raise RuntimeError(f"OpenSearch refused a search: {_error_text(response['error'])}")
                incomplete = _incomplete(response)
                if incomplete:
                    raise _Transient(incomplete)
            return responses

        responses = self._call("msearch", attempt)
        lists: dict[str, list[tuple[str, float]]] = {"lexical": [], "vector": []}
        for (kind, _), response in zip(searches, responses, strict=True):
            hits = response["hits"]["hits"]
            if kind == "vector":  # lucene cosinesimil scores (1 + cos) / 2: back to the cosine
                lists[kind] = [(h["_id"], 2.0 * float(h["_score"]) - 1.0) for h in hits]
            else:
                lists[kind] = [(h["_id"], float(h["_score"])) for h in hits]
        return lists["lexical"], lists["vector"]


def _incomplete(response: dict) -> str | None:
    """Why a 200 search response is not the whole answer (None when it is): a shard failed (its node
    died mid-search) or the search timed out, so hits from some shards are missing."""
    shards = response.get("_shards", {})
    if shards.get("failed", 0):
        reasons = "; ".join(_error_text(f.get("reason", {})) for f in shards.get("failures", [])[:2])
        return f"{shards['failed']} of {shards.get('total', '?')} shards failed ({reasons})"
    if response.get("timed_out"):
        return "the search timed out on some shards"
    return None


def _short(exc: Exception | None) -> str:
    text = f"{type(exc).__name__}: {exc}" if exc is not None else "unknown error"
    return text if len(text) <= 300 else text[:297] + "..."


def make_client(config: OpenSearchConfig) -> OpenSearch:
    """An opensearch-py client with the configured TLS and auth; retries are ours (with backoff)."""
    kwargs: dict = {
        "hosts": list(config.hosts),
        "timeout": config.timeout_seconds,
        "max_retries": 0,
        "retry_on_timeout": False,
        "http_compress": False,
    }
    if config.username:
        kwargs["http_auth"] = (config.username, config.password)
    if config.uses_tls():
        kwargs.update(use_ssl=True, verify_certs=config.verify_certs, ssl_show_warn=config.verify_certs)
        if config.ca_certs:
            kwargs["ca_certs"] = config.ca_certs
    return OpenSearch(**kwargs)
