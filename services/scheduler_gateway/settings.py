"""Settings of the scheduler_gateway service, read from CITETRACE_SCHEDULER_GATEWAY_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from citetrace.kit.settings import ServerSettings

PREFIX = "CITETRACE_SCHEDULER_GATEWAY_"


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50053
    metrics_port: int = 9153
    data_dir: Path = Path(".citetrace")
    # SQLAlchemy URL of the scheduling system of record; defaults to SQLite under data_dir.
    database_url: str | None = None
