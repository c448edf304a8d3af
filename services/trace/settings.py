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
    # The seal (issue 16, services/trace/sealing.py): every record and chain link is signed with an
    # Ed25519 key outside the database (provider "file": a PEM PKCS#8 key file, default
    # data_dir/keys/trace-signing.pem; a KMS provider registered in citetrace.signing otherwise).
    signing_provider: str = "file"
    signing_key_file: Path | None = None
    # Create the key file when it is missing (development; deployments set false and mount the key).
    signing_key_create: bool = True
    # Further PEM public keys that verify (rotation: the old keys' public halves).
    verify_key_files: tuple[str, ...] = ()
    # Signed chain-head checkpoints go to this directory (append-only files; mount it from storage
    # the database's writers cannot write). Default data_dir/checkpoints.
    checkpoint_dir: Path | None = None
    # A checkpoint of every tenant whose head moved, this often (seconds); 0 = only on request.
    checkpoint_interval_seconds: float = 300.0
    # citetrace_review_backlog counts answers needing re-review (a cited version superseded or
    # retired) for longer than this (seconds; default 7 days), recomputed this often (0 = never).
    review_backlog_seconds: float = 7 * 86400.0
    review_backlog_interval_seconds: float = 60.0

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.retention_days >= 0, "retention_days must be >= 0")
        require(self.retention_interval_seconds >= 0, "retention_interval_seconds must be >= 0")
        require(self.max_page_size >= 1, "max_page_size must be >= 1")
        require(self.passage_read_timeout_seconds > 0, "passage_read_timeout_seconds must be > 0")
        require(self.checkpoint_interval_seconds >= 0, "checkpoint_interval_seconds must be >= 0")
        require(self.review_backlog_seconds >= 0, "review_backlog_seconds must be >= 0")
        require(self.review_backlog_interval_seconds >= 0, "review_backlog_interval_seconds must be >= 0")
        require(self.signing_provider == "file" or self.signing_key_file is not None,
                "signing_key_file (the key reference) is required for a signing provider other than file")

    def resolved_signing_key(self) -> Path:
        return self.signing_key_file or (self.data_dir / "keys" / "trace-signing.pem")

    def resolved_checkpoint_dir(self) -> Path:
        return self.checkpoint_dir or (self.data_dir / "checkpoints")

    def store_url(self) -> str:
        if self.database_url:
            return self.database_url
        return sqlite_url(self.data_dir / "trace.db")
