"""Settings of the retrieval service, read from CITETRACE_RETRIEVAL_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from citetrace.kit.settings import ServerSettings, require

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
    # Search backend. Only "embedded" is built; "opensearch" fails at start-up (separate issue).
    backend: str = "embedded"
    # Vector cache (SQLite) keyed by model id + text digest; defaults to data_dir/embeddings.sqlite.
    embedding_cache_path: Path | None = None
    # Truncation of passages and queries for the embedding model (the model allows 512).
    embedding_max_tokens: int = 256
    # Chunking: passages are packed up to the target; one unit (a rule with its exceptions, a
    # table with its header) is kept whole up to the hard limit, then split (sentences / rows).
    chunk_target_chars: int = 700
    chunk_hard_limit_chars: int = 2000
    # Fusion of the lexical and the vector lists (see services/retrieval/index/fusion.py).
    fusion_method: str = "rrf"
    rrf_k: int = 60
    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    candidate_k: int = 100
    # Request limits.
    max_k: int = 50
    max_query_chars: int = 2000
    max_document_chars: int = 1_000_000
    max_passages_per_request: int = 200
    default_page_size: int = 50
    max_page_size: int = 500

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.backend in BACKENDS, f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        require(self.fusion_method in FUSION_METHODS,
                f"fusion_method must be one of {', '.join(FUSION_METHODS)}, got {self.fusion_method!r}")
        require(1 <= self.embedding_max_tokens <= 512, "embedding_max_tokens must be in 1..512")
        require(self.sqlite_synchronous in ("FULL", "NORMAL"), "sqlite_synchronous must be FULL or NORMAL")
        require(self.chunk_target_chars >= 50, "chunk_target_chars must be >= 50")
        require(self.chunk_hard_limit_chars >= self.chunk_target_chars,
                "chunk_hard_limit_chars must be >= chunk_target_chars")
        require(self.rrf_k > 0, "rrf_k must be > 0")
        require(self.lexical_weight >= 0 and self.vector_weight >= 0
                and self.lexical_weight + self.vector_weight > 0, "weights must be >= 0 and not both 0")
        require(self.candidate_k >= 1, "candidate_k must be >= 1")
        require(1 <= self.max_k <= 1000, "max_k must be in 1..1000")
        require(self.candidate_k >= self.max_k, "candidate_k must be >= max_k")
        require(self.max_query_chars >= 1, "max_query_chars must be >= 1")
        require(self.max_document_chars >= 1, "max_document_chars must be >= 1")
        require(1 <= self.default_page_size <= self.max_page_size, "need 1 <= default_page_size <= max_page_size")

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'retrieval.sqlite').resolve()}"

    def resolved_cache_path(self) -> Path:
        return self.embedding_cache_path or (self.data_dir / "embeddings.sqlite")
