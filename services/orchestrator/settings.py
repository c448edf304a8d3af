"""Settings of the orchestrator service, read from CITETRACE_ORCHESTRATOR_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from citetrace.kit.settings import ServerSettings

PREFIX = "CITETRACE_ORCHESTRATOR_"


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50051
    metrics_port: int = 9151
    data_dir: Path = Path(".citetrace")
    retrieval_target: str = "127.0.0.1:50052"
    scheduler_gateway_target: str = "127.0.0.1:50053"
    generation_target: str = "127.0.0.1:50054"
    citation_validator_target: str = "127.0.0.1:50055"
    trace_target: str = "127.0.0.1:50056"
