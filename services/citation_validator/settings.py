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
    # The support decision: embedded (learned, offline) | remote (an OpenAI-compatible judge).
    support_model: str = "embedded"
    # Versioned weights, gates and thresholds of the embedded model (make train-support writes them).
    support_weights_file: Path = HERE / "support" / "model" / "support-embedded.json"
    # The remote judge: OpenAI-compatible base URL (…/v1), model name, key, per-claim timeout.
    support_remote_base_url: str = ""
    support_remote_model: str = ""
    support_remote_api_key: str = ""
    support_remote_timeout_seconds: float = 10.0
    # json_schema (OpenAI structured output) | json_object (with the schema inline: llama.cpp's server)
    support_remote_response_format: str = "json_schema"
    max_claims: int = 64
    max_offered: int = 100

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.reload_timeout_seconds > 0, "reload_timeout_seconds must be > 0")
        require(self.max_claims >= 1 and self.max_offered >= 1, "max_claims and max_offered must be >= 1")
        require(bool(self.retrieval_target.strip()), "retrieval_target must not be empty")
        require(self.support_model in ("embedded", "remote"), "support_model must be embedded or remote")
        require(self.support_model != "remote" or bool(self.support_remote_base_url.strip()),
                "support_model remote needs support_remote_base_url")
        require(self.support_remote_response_format in ("json_schema", "json_object"),
                "support_remote_response_format must be json_schema or json_object")
        require(self.support_remote_timeout_seconds > 0, "support_remote_timeout_seconds must be > 0")
