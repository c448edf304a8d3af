"""Settings of the trace service, read from CITETRACE_TRACE_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from citetrace.kit.settings import ServerSettings, require
from citetrace.kit.sql import sqlite_url

PREFIX = "CITETRACE_TRACE_"


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50056
    metrics_port: int = 9156
    data_dir: Path = Path(".citetrace")
    # SQLAlchemy URL of the trace store; defaults to SQLite under data_dir (trace.db).
    database_url: str | None = None
    # ApplyRetention redacts query text of records older than this (days); 0 disables the default.
    retention_days: int = 365
    # The service applies the retention to every tenant this often (seconds); 0 = only on request.
    retention_interval_seconds: float = 3600.0
    # Largest page ListTraces/ListReviews return.
    max_page_size: int = 500
    # Retrieval, where GetTrace reads passage text back with the reader's credentials (records
    # keep passage identities only); empty: records are returned without passage text.
    retrieval_target: str = "127.0.0.1:50052"
    passage_read_timeout_seconds: float = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.retention_days >= 0, "retention_days must be >= 0")
        require(self.retention_interval_seconds >= 0, "retention_interval_seconds must be >= 0")
        require(self.max_page_size >= 1, "max_page_size must be >= 1")
        require(self.passage_read_timeout_seconds > 0, "passage_read_timeout_seconds must be > 0")

    def store_url(self) -> str:
        if self.database_url:
            return self.database_url
        return sqlite_url(self.data_dir / "trace.db")
