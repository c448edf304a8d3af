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
    # Proposals: how long one waits for the patient's confirmation, how long a review task waits
    # for staff (never past the appointment's or the last offered slot's start), and how often
    # expired proposals are recorded as expired (0: only when touched).
    proposal_ttl_seconds: int = 900
    review_task_ttl_seconds: int = 172800
    expiry_sweep_seconds: float = 30.0
    # Action events (every proposal, confirmation, rejection, failure, expiry, direct booking) go to
    # the trace service as links of the tenant's hash chain: queued in the scheduling database with
    # the change, delivered in the background with exponential backoff (trace_events.py). Empty
    # target: they stay queued.
    trace_target: str = "127.0.0.1:50056"
    trace_timeout_seconds: float = 5.0
    action_event_poll_seconds: float = 2.0
    action_event_backoff_seconds: float = 0.5
    action_event_max_backoff_seconds: float = 30.0

    def __post_init__(self) -> None:
        super().__post_init__()
        require(1 <= self.max_range_days <= 366, "max_range_days must be in 1..366")
        require(1 <= self.default_range_days <= self.max_range_days,
                "default_range_days must be in 1..max_range_days")
        require(1 <= self.default_page_size <= 100, "default_page_size must be in 1..100")
        require(30 <= self.proposal_ttl_seconds <= 7 * 86400, "proposal_ttl_seconds must be in 30..604800")
        require(60 <= self.review_task_ttl_seconds <= 30 * 86400, "review_task_ttl_seconds must be in 60..2592000")
        require(0 <= self.expiry_sweep_seconds <= 3600, "expiry_sweep_seconds must be in 0..3600")
