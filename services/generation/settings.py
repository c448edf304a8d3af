"""Settings of the generation service, read from CITETRACE_GENERATION_* variables."""

from __future__ import annotations

import dataclasses

from citetrace.kit.settings import ServerSettings

PREFIX = "CITETRACE_GENERATION_"


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50054
    metrics_port: int = 9154
