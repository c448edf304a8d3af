"""Settings of the retrieval service, read from CITETRACE_RETRIEVAL_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from citetrace.kit.settings import ServerSettings

PREFIX = "CITETRACE_RETRIEVAL_"


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50052
    metrics_port: int = 9152
    data_dir: Path = Path(".citetrace")
    # SQLAlchemy URL of the store of record; defaults to SQLite under data_dir.
    database_url: str | None = None
