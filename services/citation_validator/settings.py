"""Settings of the citation_validator service, read from CITETRACE_CITATION_VALIDATOR_* variables."""

from __future__ import annotations

import dataclasses

from citetrace.kit.settings import ServerSettings

PREFIX = "CITETRACE_CITATION_VALIDATOR_"


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50055
    metrics_port: int = 9155
    retrieval_target: str = "127.0.0.1:50052"
