"""Settings of the citation_validator service, read from CITETRACE_CITATION_VALIDATOR_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from citetrace.kit.settings import ServerSettings, require

PREFIX = "CITETRACE_CITATION_VALIDATOR_"
HERE = Path(__file__).resolve().parent


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50055
    metrics_port: int = 9155
    # The store of record cited versions are reloaded from (retrieval GetPassages).
    retrieval_target: str = "127.0.0.1:50052"
    # Deadline of the reload call (also capped by the incoming call's deadline).
    reload_timeout_seconds: float = 2.0
    # Which source class may establish which claim type (versioned data).
    source_policy_file: Path = HERE / "source_policy.yaml"
    # Support-decision thresholds, chosen on the labelled set (make bench-support).
    thresholds_file: Path = HERE / "support_thresholds.yaml"
    # Embedding similarity as a helper signal of the support decision (never decides alone).
    embeddings: bool = True
    max_claims: int = 64
    max_offered: int = 100

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.reload_timeout_seconds > 0, "reload_timeout_seconds must be > 0")
        require(self.max_claims >= 1 and self.max_offered >= 1, "max_claims and max_offered must be >= 1")
        require(bool(self.retrieval_target.strip()), "retrieval_target must not be empty")
