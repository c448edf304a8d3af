"""Settings of the generation service, read from CITETRACE_GENERATION_* variables."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from citetrace.kit.settings import ServerSettings, require

PREFIX = "CITETRACE_GENERATION_"

Backend = Literal["extractive", "openai", "test"]
Fault = Literal["none", "invent_label", "unsupported_addition", "drop_labels"]


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 50054
    metrics_port: int = 9154
    # extractive (default, offline, deterministic) | openai (any OpenAI-compatible endpoint) |
    # test (extractive + an injected fault, for end-to-end tests of the validator path)
    backend: Backend = "extractive"
    # Context budget, applied in rank order; a request's budget may only tighten it.
    max_passages: int = 6
    max_chars: int = 6000
    # Extractive backend: at most this many claims, each scoring >= selection_ratio * the best.
    max_claims: int = 3
    selection_ratio: float = 0.45
    # Extractive backend: a list its section heading names what is asked about ("What to bring") is
    # answered whole, up to this many items.
    max_list_claims: int = 8
    # Extractive backend: rank answer units by their meaning's similarity to the question (the
    # shipped embedding model, services/generation/semantic.py) as well as by shared words; off,
    # the selection is by words alone (extractive-v1).
    semantic_selection: bool = True
    # With semantic selection: the learned veto on the lead claim (services/generation/lead.py,
    # model/lead.json; make train-lead), and another weights file for it.
    lead_veto: bool = True
    lead_weights_file: Path | None = None
    # OpenAI-compatible chat completions (vLLM, Ollama, llama.cpp server, ...).
    openai_base_url: str = "http://127.0.0.1:8000/v1"
    openai_model: str = ""
    openai_api_key: str = ""
    openai_timeout_seconds: float = 20.0
    openai_response_format: Literal["json_schema", "json_object"] = "json_schema"
    openai_temperature: float = 0.0
    openai_max_tokens: int = 800
    # test backend: which fault to inject, and on attempts 1..N only (0 = every attempt).
    test_fault: Fault = "none"
    test_fault_attempts: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.max_passages >= 1, "max_passages must be >= 1")
        require(self.max_chars >= 100, "max_chars must be >= 100")
        require(self.max_claims >= 1, "max_claims must be >= 1")
        require(self.max_list_claims >= 1, "max_list_claims must be >= 1")
        require(0.0 < self.selection_ratio <= 1.0, "selection_ratio must be in (0, 1]")
        require(self.openai_timeout_seconds > 0, "openai_timeout_seconds must be > 0")
        require(self.test_fault_attempts >= 0, "test_fault_attempts must be >= 0")
        if self.backend == "openai":
            require(bool(self.openai_model), "backend=openai needs CITETRACE_GENERATION_OPENAI_MODEL")
            require(
                self.openai_base_url.startswith(("http://", "https://")),
                f"openai_base_url {self.openai_base_url!r} must start with http:// or https://",
            )
