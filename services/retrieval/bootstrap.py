"""The one assembly point of the retrieval service: settings -> the store of record, the search
backend and the embedding model -> the core -> the servicer, with the version-event relay to the
trace service. services/retrieval/__main__.py, the tests, the benchmarks and the CLI build the
service here; nothing else constructs a RetrievalCore."""

from __future__ import annotations

import dataclasses
import logging
from typing import NamedTuple

from citetrace.embeddings import Embedder
from citetrace.kit.auth import AuthSettings, auth_from_environment
from citetrace.kit.errors import Unavailable
from citetrace.kit.server import ServiceSpec
from citetrace.kit.trace_client import TraceClient
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc

from services.retrieval.backend_health import BackendHealthMonitor
from services.retrieval.core import RetrievalCore, build_sealer
from services.retrieval.extract import Extractors, default_extractors
from services.retrieval.index import BM25Settings, EmbeddedIndex, SearchBackend
from services.retrieval.servicer import RetrievalServicer
from services.retrieval.settings import Settings
from services.retrieval.store.store import Store
from services.retrieval.trace_notify import TraceVersionEventSender
from services.retrieval.version_events import VersionEventRelay

log = logging.getLogger("citetrace.retrieval")


def make_backend(settings: Settings) -> SearchBackend:
    """The search backend named by settings.backend. The index is derived data: whatever the
    backend, warm-up rebuilds it from the store of record."""
    if settings.backend == "embedded":
        return EmbeddedIndex(bm25=BM25Settings(k1=settings.bm25_k1, b=settings.bm25_b))
    if settings.backend == "opensearch":
        from services.retrieval.index.opensearch import OpenSearchBackend

        return OpenSearchBackend(settings.opensearch_config())
    raise Unavailable("BACKEND_NOT_BUILT",
                      f"search backend {settings.backend!r} is not available in this build; use 'embedded'")


class Judgments(NamedTuple):
    """What make_judgments builds: the relevance gate's model (None when the gate is off), the
    reranker, and the relevance model with its background passage-side preparation (both None unless
    the gate or the embedded rerank reads it)."""

    gate: object
    reranker: object
    preparation: object
    model: object


def make_judgments(settings: Settings, embedder) -> Judgments:
    """The judgments the settings name; models load in warm-up. The relevance model
    encodes with the search's own embedder (train_relevance.py trains on the same kernels), so one
    encoder run per search gives the query vector and the question's token vectors."""
    from services.retrieval.relevance import (
        PassagePreparation,
        PassageSideStore,
        RelevanceModel,
        RelevanceWeights,
    )
    from services.retrieval.rerank import EmbeddedRerank, NoRerank, RemoteRerank

    relevance = preparation = None
    if settings.relevance or settings.rerank_backend == "embedded":
        relevance = RelevanceModel(embedder, RelevanceWeights(settings.relevance_weights_file),
                                   cache_mb=settings.relevance_cache_mb,
                                   store=PassageSideStore(settings.resolved_relevance_store_path()),
                                   question_cache=settings.query_cache_size > 0)
        preparation = PassagePreparation(relevance)
    if settings.rerank_backend == "embedded":
        reranker = EmbeddedRerank(relevance, settings.rerank_weight)
    elif settings.rerank_backend == "remote":
        reranker = RemoteRerank(settings.rerank_url, settings.rerank_model, settings.rerank_api_key,
                                settings.rerank_timeout_seconds)
    else:
        reranker = NoRerank()
    return Judgments(relevance if settings.relevance else None, reranker, preparation, relevance)


def make_store(settings: Settings) -> Store:
    return Store(settings.resolved_database_url(), settings.sqlite_synchronous)


def open_store(settings: Settings, *, sign: bool = True) -> Store:
    """The store of record alone, migrated, with its signing key (sign=True) or only the verify keys
    (`citetrace index verify` on a machine without the private key). Raises KeyFileError."""
    store = make_store(settings)
    store.migrate()
    store.sealer = build_sealer(settings, store, sign=sign)
    return store


def version_event_relay(settings: Settings, store: Store, auth: AuthSettings | None) -> VersionEventRelay | None:
    """Version events go to the trace service in the background, sent by retrieval as itself (its
    mTLS certificate; no token). Without auth settings (a bare in-process test) they stay queued in
    the store of record."""
    if auth is None:
        return None
    client = TraceClient(settings.trace_target, caller="retrieval", timeout=settings.trace_timeout_seconds)
    return VersionEventRelay(store, TraceVersionEventSender(client), poll_seconds=settings.version_event_poll_seconds,
                             backoff_base_seconds=settings.version_event_backoff_seconds,
                             backoff_max_seconds=settings.version_event_max_backoff_seconds)


@dataclasses.dataclass
class Retrieval:
    """The assembled service."""

    settings: Settings
    core: RetrievalCore
    servicer: RetrievalServicer
    relay: VersionEventRelay | None
    health: BackendHealthMonitor

    def warm_up(self) -> None:
        """Migrations, keys, model check, the index rebuilt from the store; then the backend's health
        sampling and the relay."""
        self.core.warm_up()
        self.health.start()
        if self.relay is not None:
            self.relay.start()
        else:
            log.warning("retrieval: no CITETRACE_AUTH_* signing key: version events stay queued for the trace service")

    def close(self) -> None:
        if self.relay is not None:
            self.relay.stop()
        self.health.stop()
        self.core.close()

    def spec(self) -> ServiceSpec:
        return ServiceSpec(
            name="retrieval",
            full_name=pb.DESCRIPTOR.services_by_name["RetrievalService"].full_name,
            servicer=self.servicer,
            register=pb_grpc.add_RetrievalServiceServicer_to_server,
            warm_up=self.warm_up,
            close=self.close,
            serving_reporter=self.health.report_to,  # NOT_SERVING while the search backend is red
            # A whole source file in one IngestDocument; the core refuses more than max_source_bytes
            # with SOURCE_TOO_LARGE naming the file, the transport anything beyond that margin.
            max_receive_message_bytes=self.settings.max_source_bytes + 1024 * 1024,
        )


def build(settings: Settings, *, auth: AuthSettings | None = None, store: Store | None = None,
          backend: SearchBackend | None = None, embedder: Embedder | None = None,
          extractors: Extractors | None = None) -> Retrieval:
    """The service from its settings; `store`, `backend`, `embedder` and `extractors` replace the ones
    the settings name (tests: a shared backend for two replicas; benchmarks: a warmed model)."""
    store = store or make_store(settings)
    embedder = embedder or Embedder(max_tokens=settings.embedding_max_tokens, kernels=settings.embedding_kernels,
                                    intra_op_threads=settings.embedding_threads or None)
    judgments = make_judgments(settings, embedder)
    core = RetrievalCore(settings, store=store, backend=backend or make_backend(settings), embedder=embedder,
                         extractors=extractors or default_extractors(settings.max_source_pages),
                         reranker=judgments.reranker, relevance=judgments.gate,
                         passage_sides=judgments.preparation, questions=judgments.model)
    relay = version_event_relay(settings, store, auth)
    if relay is not None:
        core.on_version_events = relay.wake
    health = BackendHealthMonitor(core.backend, settings.backend_health_poll_seconds,
                                  settings.backend_health_unhealthy_samples)
    return Retrieval(settings, core, RetrievalServicer(core), relay, health)


def build_spec(settings: Settings, auth: AuthSettings | None = None, **adapters) -> ServiceSpec:
    """What services/retrieval/__main__.py serves (auth from CITETRACE_AUTH_* when not given)."""
    return build(settings, auth=auth or auth_from_environment(), **adapters).spec()
