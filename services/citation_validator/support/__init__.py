"""The support decision (DESIGN.md §5, issue 15): does the cited evidence state what the claim says?

`SupportModel` is the interface; two backends (settings `SUPPORT_MODEL`):
- `embedded` (default, offline, CPU): the precise checks of checks.py plus semantic alignment from
  the shipped embedding model, combined by a small learned model (embedded.py, weights in
  model/, trained by train.py on WiCE dev, the project's labelled pairs and perturbations of the
  sample corpus);
- `remote`: an OpenAI-compatible chat endpoint used as a MiniCheck-style judge (remote.py).

Three verdicts with a score in [0, 1]; every decision names the exact model version that made it.
A decision that could not be made (the remote judge timed out or answered nonsense) is UNRESOLVED
with `unavailable` set, which the validator reports as CHECK_UNAVAILABLE: never a pass.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

SUPPORTED, UNSUPPORTED, UNRESOLVED = "SUPPORTED", "UNSUPPORTED", "UNRESOLVED"
VERDICTS = (SUPPORTED, UNSUPPORTED, UNRESOLVED)


@dataclasses.dataclass(frozen=True)
class Evidence:
    text: str
    title: str = ""
    context: str = ""  # heading path: counts for words and names, not for numbers or polarity


@dataclasses.dataclass(frozen=True)
class Decision:
    verdict: str
    score: float  # calibrated probability that the evidence supports the claim
    reason: str
    model: str  # the exact support model version
    unavailable: bool = False  # the decision could not be made (CHECK_UNAVAILABLE)


class SupportModel(Protocol):
    @property
    def version(self) -> str:
        """Names the exact model (weights and thresholds) behind every decision."""

    @property
    def local(self) -> bool:
        """A decision runs in this process, costs only CPU and touches nothing outside: the validator
        may then make it while the cited passages are reloaded (keeping it only where the reloaded
        evidence is exactly what it read). A remote judge is asked only about evidence that passed."""

    def warm_up(self) -> None:
        """Loads what the model needs (weights, embedding model); fails loudly on a bad file."""

    def decide(self, claim: str, evidence: list[Evidence]) -> Decision:
        """The verdict on one claim against its cited evidence. Never raises for a model failure:
        returns UNRESOLVED with unavailable=True instead."""


def build_support_model(kind: str, **options) -> SupportModel:
    """The configured backend: `embedded` (weights_file) or `remote` (base_url, model, api_key,
    timeout_seconds)."""
    if kind == "embedded":
        from services.citation_validator.support.embedded import EmbeddedSupportModel

        return EmbeddedSupportModel(options.get("weights_file"))
    if kind == "remote":
        from services.citation_validator.support.remote import RemoteJudge

        return RemoteJudge(options["base_url"], options.get("model", ""), options.get("api_key", ""),
                           float(options.get("timeout_seconds", 10.0)),
                           options.get("response_format", "json_schema"))
    raise ValueError(f"unknown support model {kind!r}: expected embedded or remote")
