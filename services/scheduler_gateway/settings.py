"""Settings of the scheduler_gateway service, read from CITETRACE_SCHEDULER_GATEWAY_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from citetrace.kit.settings import ServerSettings, require

PREFIX = "CITETRACE_SCHEDULER_GATEWAY_"


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50053
    metrics_port: int = 9153
    data_dir: Path = Path(".citetrace")
    # SQLAlchemy URL of the scheduling system of record; defaults to SQLite under data_dir
    # (data_dir/scheduler.sqlite3). PostgreSQL: postgresql+psycopg://user@host:port/db
    database_url: str | None = None
    # FindSlots: the longest date range one query may span, and the range used when none is given.
    max_range_days: int = 31
    default_range_days: int = 7
    # page_size 0 means this; 1..100 otherwise.
    default_page_size: int = 20

    def __post_init__(self) -> None:
        super().__post_init__()
        require(1 <= self.max_range_days <= 366, "max_range_days must be in 1..366")
        require(1 <= self.default_range_days <= self.max_range_days,
                "default_range_days must be in 1..max_range_days")
        require(1 <= self.default_page_size <= 100, "default_page_size must be in 1..100")
