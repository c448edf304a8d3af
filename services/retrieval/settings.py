"""Settings of the retrieval service, read from CITETRACE_RETRIEVAL_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from citetrace.embeddings import KERNELS
from citetrace.kit.settings import ServerSettings, require
from citetrace.kit.sql import sqlite_url

PREFIX = "CITETRACE_RETRIEVAL_"

BACKENDS = ("embedded", "opensearch")
FUSION_METHODS = ("rrf", "minmax", "zscore")


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50052
    metrics_port: int = 9152
    data_dir: Path = Path(".citetrace")
    # SQLAlchemy URL of the store of record; defaults to SQLite under data_dir.
    database_url: str | None = None
    # SQLite only: PRAGMA synchronous for the store of record (WAL). FULL: an acknowledged ingest
    # survives a power failure; NORMAL: faster, may lose the last commits on an OS crash.
    sqlite_synchronous: str = "FULL"
    # Search backend: "embedded" (in-process) or "opensearch" (the opensearch_* settings below).
    backend: str = "embedded"
    # OpenSearch (services/retrieval/index/opensearch.py). Hosts: comma-separated http(s)://HOST:PORT.
    opensearch_hosts: tuple[str, ...] = ("http://127.0.0.1:9200",)
    opensearch_username: str = ""  # basic auth (with opensearch_password)
    opensearch_password: str = ""
    opensearch_use_ssl: bool = False  # also implied by an https:// host
    opensearch_verify_certs: bool = True
    opensearch_ca_certs: str = ""  # PEM bundle for verifying the cluster's certificate
    # Index names: <prefix>passages (the alias) and <prefix>passages-<generation>.
    opensearch_index_prefix: str = "citetrace-"
    opensearch_timeout_seconds: float = 10.0  # per request
    opensearch_max_retries: int = 3  # on connection errors, timeouts, 429, 502-504 (exponential backoff)
    opensearch_retry_backoff_seconds: float = 0.2
    opensearch_shards: int = 1
    opensearch_replicas: int = 0
    opensearch_keep_generations: int = 3  # older generations are deleted after a rebuild
    # True: every start writes a new generation from the store of record and switches the alias to it.
    # False: keep the live generation (create one if none) and upsert into it.
    opensearch_rebuild_on_start: bool = True
    # How often the search backend's health is sampled (citetrace_search_backend_health, and the gRPC
    # health: NOT_SERVING while the backend is red or unreachable; services/retrieval/backend_health.py).
    backend_health_poll_seconds: float = 5.0
    # Red/unreachable samples in a row before NOT_SERVING (one slow reply is not an outage).
    backend_health_unhealthy_samples: int = 3
    # Vector cache (SQLite) keyed by model id + text digest; defaults to data_dir/embeddings.sqlite.
    embedding_cache_path: Path | None = None
    # Truncation of passages and queries for the embedding model (the model allows 512).
    embedding_max_tokens: int = 256
    # Texts per ONNX Runtime call when embedding passages. 1 measured fastest for 256-token passages
    # on 2 cores (bench/results/retrieval.json, raw_embedding by batch size); queries are single texts.
    embedding_batch_size: int = 1
    # The embedding model's kernels (citetrace.embeddings): "float" runs the shipped graph (int8
    # weights cast to float32), "integer" the same int8 weights on DynamicQuantizeMatMul (about half
    # the CPU per query; SciFact test nDCG@10 within 0.005 of float: bench/results/
    # scifact_core-integer.json). Part of the model id: switching re-embeds every passage once (the
    # vector cache is keyed by it); an OpenSearch index built under the other kernels is rebuilt
    # by the next start (opensearch_rebuild_on_start, the default) or `citetrace index rebuild`.
    embedding_kernels: str = "integer"
    # ONNX Runtime intra-op threads per embedding call; 0 = the embedder's default (1 on integer
    # kernels, min(2, cores) on float ones).
    embedding_threads: int = 0
    # Query vectors kept in memory (LRU, keyed by model id + whitespace-normalised query); a repeated
    # question skips the ~8 ms embedding. 0 disables the cache.
    query_cache_size: int = 1024
    # Chunking: passages are packed up to the target; one unit (a rule with its exceptions, a
    # table with its header) is kept whole up to the hard limit, then split (sentences / rows).
    chunk_target_chars: int = 700
    chunk_hard_limit_chars: int = 2000
    # Fusion of the lexical and the vector lists (see services/retrieval/index/fusion.py). The
    # defaults won on the SciFact TRAIN qrels (bench/results/scifact_core.json: z-score convex
    # fusion 0.55/0.45 beat RRF 0.7195 and min-max 0.7344 with 0.7348); RRF (k=60) is a setting.
    fusion_method: str = "zscore"
    rrf_k: int = 60
    lexical_weight: float = 0.55
    vector_weight: float = 0.45
    candidate_k: int = 100
    # The rerank stage after fusion (services/retrieval/rerank.py): none | embedded | remote, over the top
    # RERANK_DEPTH fused candidates. `embedded` is the default: SciFact nDCG@10 0.7334 -> 0.7405 on the
    # 300 test queries (make bench-rerank), the labelled questions' first hit answers them more often
    # (held-out 0.66 -> 0.72, make bench-relevance-search), make eval keeps 138/142; it costs a median
    # 9 ms CPU per search over 20 SciFact abstracts, and each passage's side computed in the background
    # after indexing (bench/results/rerank.json).
    rerank_backend: str = "embedded"
    rerank_depth: int = 20
    rerank_weight: float = 0.5  # embedded: weight of the relevance probability against the fused score
    rerank_url: str = ""  # remote: TEI/Cohere-shaped /rerank endpoint
    rerank_model: str = ""
    rerank_api_key: str = ""
    rerank_timeout_seconds: float = 2.0
    # The relevance decision on every hit (services/retrieval/relevance.py; weights and threshold in
    # model/relevance.json); on: every hit carries relevance and relevant, and the orchestrator's
    # policy part abstains when none is relevant. Off by default: with it on, make eval's outcome
    # accuracy falls (138/142 -> 131/142; as judged, precision / recall 0.87 / 0.77 on the test half and
    # 0.75 / 0.75 on held-out questions over documents it never saw, README "Rerank and relevance").
    relevance: bool = False
    relevance_weights_file: Path | None = None
    # The passage side of the relevance features (token and sentence vectors) kept between searches,
    # least recently used first out, within this many MiB.
    relevance_cache_mb: int = 256
    # ... and stored (derived data, like the embedding cache): computed in the background when a passage
    # is indexed, so no search pays for it. Default <data_dir>/relevance-passages.sqlite.
    relevance_store_path: Path | None = None
    # BM25 parameters of the embedded index (tuned on SciFact TRAIN: k1 1.2, b 0.75).
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    # Version events (superseded / retired) for the trace service, which lists the answers citing
    # them as needing re-review: queued in the store of record with the change, then delivered in
    # the background with exponential backoff (services/retrieval/version_events.py).
    trace_target: str = "127.0.0.1:50056"
    trace_timeout_seconds: float = 5.0
    version_event_poll_seconds: float = 2.0
    version_event_backoff_seconds: float = 0.5
    version_event_max_backoff_seconds: float = 30.0
    # Signed versions (issue 16, services/retrieval/store/sealing.py). Every version state is signed
    # with an Ed25519 key that lives outside the database: a key file (provider "file", PEM PKCS#8;
    # default data_dir/keys/retrieval-signing.pem) or a KMS provider registered in citetrace.signing.
    signing_provider: str = "file"
    signing_key_file: Path | None = None
    # Create the key file when it is missing and the store holds no signed version yet
    # (development; deployments set false and mount the key).
    signing_key_create: bool = True
    # Further PEM public keys that verify (key rotation: the old keys' public halves); the signing
    # key's own public key always verifies.
    verify_key_files: tuple[str, ...] = ()
    # Request limits.
    max_k: int = 50
    max_query_chars: int = 2000
    max_document_chars: int = 1_000_000
    # Sources sent as files (IngestDocument.content): the largest accepted (the gRPC message limit of
    # the service is raised to fit it) and the most pages of a PDF.
    max_source_bytes: int = 32 * 1024 * 1024
    max_source_pages: int = 2000
    max_passages_per_request: int = 200
    default_page_size: int = 50
    max_page_size: int = 500

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.backend in BACKENDS, f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        require(self.fusion_method in FUSION_METHODS,
                f"fusion_method must be one of {', '.join(FUSION_METHODS)}, got {self.fusion_method!r}")
        require(1 <= self.embedding_max_tokens <= 512, "embedding_max_tokens must be in 1..512")
        require(self.query_cache_size >= 0, "query_cache_size must be >= 0")
        require(1 <= self.embedding_batch_size <= 256, "embedding_batch_size must be in 1..256")
        require(self.embedding_kernels in KERNELS, f"embedding_kernels must be one of {', '.join(KERNELS)}, "
                f"got {self.embedding_kernels!r}")
        require(0 <= self.embedding_threads <= 64, "embedding_threads must be in 0..64")
        require(self.sqlite_synchronous in ("FULL", "NORMAL"), "sqlite_synchronous must be FULL or NORMAL")
        require(self.chunk_target_chars >= 50, "chunk_target_chars must be >= 50")
        require(self.chunk_hard_limit_chars >= self.chunk_target_chars,
                "chunk_hard_limit_chars must be >= chunk_target_chars")
        require(self.backend_health_poll_seconds > 0, "backend_health_poll_seconds must be > 0")
        require(self.backend_health_unhealthy_samples >= 1, "backend_health_unhealthy_samples must be >= 1")
        require(self.rrf_k > 0, "rrf_k must be > 0")
        require(self.rerank_backend in ("none", "embedded", "remote"), "rerank_backend must be none, embedded or remote")
        require(1 <= self.rerank_depth <= 100, "rerank_depth must be in 1..100")
        require(0.0 <= self.rerank_weight <= 1.0, "rerank_weight must be in [0, 1]")
        require(self.rerank_timeout_seconds > 0, "rerank_timeout_seconds must be > 0")
        require(self.relevance_cache_mb >= 1, "relevance_cache_mb must be >= 1")
        require(self.rerank_backend != "remote" or self.rerank_url.startswith(("http://", "https://")),
                "rerank_backend remote needs rerank_url (http:// or https://)")
        require(self.lexical_weight >= 0 and self.vector_weight >= 0
                and self.lexical_weight + self.vector_weight > 0, "weights must be >= 0 and not both 0")
        require(self.candidate_k >= 1, "candidate_k must be >= 1")
        require(self.bm25_k1 >= 0 and 0 <= self.bm25_b <= 1, "need bm25_k1 >= 0 and 0 <= bm25_b <= 1")
        require(self.trace_timeout_seconds > 0, "trace_timeout_seconds must be > 0")
        require(self.version_event_poll_seconds > 0, "version_event_poll_seconds must be > 0")
        require(0 < self.version_event_backoff_seconds <= self.version_event_max_backoff_seconds,
                "need 0 < version_event_backoff_seconds <= version_event_max_backoff_seconds")
        require(self.signing_provider == "file" or self.signing_key_file is not None,
                "signing_key_file (the key reference) is required for a signing provider other than file")
        require(1 <= self.max_k <= 1000, "max_k must be in 1..1000")
        require(self.candidate_k >= self.max_k, "candidate_k must be >= max_k")
        require(self.max_query_chars >= 1, "max_query_chars must be >= 1")
        require(self.max_document_chars >= 1, "max_document_chars must be >= 1")
        require(1024 <= self.max_source_bytes <= 1024 * 1024 * 1024, "max_source_bytes must be in 1 KiB..1 GiB")
        require(self.max_source_pages >= 1, "max_source_pages must be >= 1")
        require(1 <= self.default_page_size <= self.max_page_size, "need 1 <= default_page_size <= max_page_size")
        if self.backend == "opensearch":
            self.opensearch_config()  # validates hosts, auth, TLS files, prefix, timeouts

    def fusion(self):
        """The FusionSettings these settings name: how every search fuses its candidate lists."""
        from services.retrieval.index.types import FusionSettings

        return FusionSettings(method=self.fusion_method, rrf_k=self.rrf_k, lexical_weight=self.lexical_weight,
                              vector_weight=self.vector_weight, candidate_k=self.candidate_k)

    def opensearch_config(self):
        """The OpenSearchConfig of these settings (SettingsError when one is invalid)."""
        from services.retrieval.index.opensearch import OpenSearchConfig
        from services.retrieval.index.types import BM25Settings

        require(not self.opensearch_ca_certs or Path(self.opensearch_ca_certs).is_file(),
                f"opensearch_ca_certs {self.opensearch_ca_certs!r} is not a readable file")
        try:
            return OpenSearchConfig(
                hosts=self.opensearch_hosts, username=self.opensearch_username, password=self.opensearch_password,
                use_ssl=self.opensearch_use_ssl, verify_certs=self.opensearch_verify_certs,
                ca_certs=self.opensearch_ca_certs, index_prefix=self.opensearch_index_prefix,
                timeout_seconds=self.opensearch_timeout_seconds, max_retries=self.opensearch_max_retries,
                retry_backoff_seconds=self.opensearch_retry_backoff_seconds, shards=self.opensearch_shards,
                replicas=self.opensearch_replicas, keep_generations=self.opensearch_keep_generations,
                rebuild_on_start=self.opensearch_rebuild_on_start, bm25=BM25Settings())
        except ValueError as exc:
            require(False, f"opensearch settings: {exc}")

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return sqlite_url(self.data_dir / "retrieval.sqlite")

    def resolved_signing_key(self) -> Path:
        return self.signing_key_file or (self.data_dir / "keys" / "retrieval-signing.pem")

    def resolved_cache_path(self) -> Path:
        return self.embedding_cache_path or (self.data_dir / "embeddings.sqlite")

    def resolved_relevance_store_path(self) -> Path:
        return self.relevance_store_path or (self.data_dir / "relevance-passages.sqlite")
