"""Settings of the orchestrator service, read from CITETRACE_ORCHESTRATOR_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from citetrace.kit.settings import ServerSettings, require

PREFIX = "CITETRACE_ORCHESTRATOR_"


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50051
    metrics_port: int = 9151
    # The trace outbox lives here (orchestrator/trace-outbox/).
    data_dir: Path = Path(".citetrace")
    retrieval_target: str = "127.0.0.1:50052"
    scheduler_gateway_target: str = "127.0.0.1:50053"
    generation_target: str = "127.0.0.1:50054"
    citation_validator_target: str = "127.0.0.1:50055"
    trace_target: str = "127.0.0.1:50056"
    # Passages retrieved per policy part (the retrieved set kept in the trace).
    search_k: int = 8
    # Context budget offered to the generator (labels S1..Sn in rank order).
    context_max_passages: int = 6
    context_max_chars: int = 6000
    # Regenerations with the validator's feedback after a rejected answer (0 = none).
    max_regenerations: int = 2
    # Deadline of one Ask when the caller sets none; each downstream call is capped by
    # call_timeout_seconds and by what is left of the Ask's deadline.
    default_deadline_seconds: float = 15.0
    call_timeout_seconds: float = 5.0
    # Time kept back from the caller's deadline for recording the trace and answering.
    trace_reserve_seconds: float = 0.5
    trace_timeout_seconds: float = 2.0
    # "background": the record is written to the durable outbox and delivered by its background
    # deliverer (the answer does not wait for the trace service; trace_delivered is False).
    # "direct": RecordTrace before answering, the outbox only when the trace service fails.
    trace_delivery: str = "background"
    # SQLite synchronous mode of the outbox file (WAL): NORMAL survives a crash of the process,
    # FULL also an OS crash or power loss (one fsync per record on the answer path).
    outbox_synchronous: str = "NORMAL"
    # Conflict detection looks at this many top hits.
    conflict_top_n: int = 4
    # No clinic named: the tenant-wide answer is also asked of this many clinics' own passages
    # (0: never; the quantity check alone then finds a clinic's override).
    clinic_rules_asked: int = 3
    # No clinic named and several possible: passages retrieved to find a clinic's own rule (set aside,
    # never offered; search_k tenant-wide ones are offered).
    clinic_rules_search_k: int = 16
    # The relevance decision on retrieval's hits (when retrieval reports a relevance model):
    # abstain = a policy part none of whose hits answers the question abstains | off.
    # relevance_offer: relevant = only the hits judged relevant are offered | all.
    relevance_gate: str = "abstain"
    relevance_offer: str = "relevant"
    # Availability without a date: the next N days.
    slot_horizon_days: int = 14
    slot_page_size: int = 6
    locations_cache_seconds: float = 30.0
    part_workers: int = 8
    max_question_chars: int = 2000
    # How far in the past a caller's as_of may lie (clock skew) before the Ask is a replay, which
    # only reviewer and auditor may ask for (issue 17 §5); others get INVALID_ARGUMENT AS_OF_IN_PAST.
    as_of_skew_seconds: float = 300.0
    # Where the question encoder's int8 graph is derived once from the shipped MiniLM model
    # (services/orchestrator/understanding/encoder.py); empty: $XDG_CACHE_HOME/citetrace/models.
    model_cache_dir: str = ""
    # The conversation store (pending clarifications): empty = SQLite under data_dir; in production a
    # PostgreSQL URL (postgresql+psycopg://...) shared by every replica.
    database_url: str = ""
    # How long a conversation (its pending clarification) stays open after its last turn.
    conversation_ttl_seconds: float = 900.0
    # An idempotent Ask's key reserved longer than this without an answer is taken over by the next
    # call with the key: the replica that reserved it is presumed dead (killed mid-Ask). Until then a
    # retry waits for that answer and gets ABORTED IDEMPOTENCY_KEY_IN_PROGRESS. Keep it above the
    # longest Ask (default_deadline_seconds), or a slow Ask could be answered twice.
    idempotency_stale_seconds: float = 120.0

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.search_k >= 1, "search_k must be >= 1")
        require(self.context_max_passages >= 1, "context_max_passages must be >= 1")
        require(self.context_max_chars >= 100, "context_max_chars must be >= 100")
        require(self.max_regenerations >= 0, "max_regenerations must be >= 0")
        require(self.default_deadline_seconds > 0, "default_deadline_seconds must be > 0")
        require(self.call_timeout_seconds > 0, "call_timeout_seconds must be > 0")
        require(self.trace_reserve_seconds >= 0, "trace_reserve_seconds must be >= 0")
        require(self.conflict_top_n >= 2, "conflict_top_n must be >= 2")
        require(self.clinic_rules_asked >= 0, "clinic_rules_asked must be >= 0")
        require(self.clinic_rules_search_k >= 1, "clinic_rules_search_k must be >= 1")
        require(self.relevance_gate in ("abstain", "off"), "relevance_gate must be abstain or off")
        require(self.relevance_offer in ("relevant", "all"), "relevance_offer must be relevant or all")
        require(1 <= self.slot_horizon_days <= 60, "slot_horizon_days must be in 1..60")
        require(self.slot_page_size >= 1, "slot_page_size must be >= 1")
        require(self.part_workers >= 1, "part_workers must be >= 1")
        require(self.max_question_chars >= 10, "max_question_chars must be >= 10")
        require(self.conversation_ttl_seconds > 0, "conversation_ttl_seconds must be > 0")
        require(self.idempotency_stale_seconds > 0, "idempotency_stale_seconds must be > 0")
        require(self.trace_delivery in ("background", "direct"), "trace_delivery must be background or direct")
        require(self.outbox_synchronous in ("NORMAL", "FULL"), "outbox_synchronous must be NORMAL or FULL")

    def conversations_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'orchestrator' / 'conversations.sqlite').resolve()}"

    def outbox_path(self) -> Path:
        return self.data_dir / "orchestrator" / "trace-outbox.sqlite"
