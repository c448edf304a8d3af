"""Settings of the trace service, read from CITETRACE_TRACE_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from citetrace.kit.settings import ServerSettings

PREFIX = "CITETRACE_TRACE_"


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50056
    metrics_port: int = 9156
    data_dir: Path = Path(".citetrace")
    # SQLAlchemy URL of the trace store; defaults to SQLite under data_dir.
    database_url: str | None = None
