"""The stage spans of DESIGN.md §7, with the service that opens each and its parent stage."""

from __future__ import annotations

# stage -> (service, parent stage or None for a stage directly under the RPC's server span)
DESIGN_STAGES: dict[str, tuple[str, str | None]] = {
    "orchestrator.ask": ("orchestrator", None),
    "orchestrator.route": ("orchestrator", "orchestrator.ask"),
    "retrieval.search": ("retrieval", None),
    "retrieval.embed": ("retrieval", "retrieval.search"),
    "retrieval.lexical": ("retrieval", "retrieval.search"),
    "retrieval.vector": ("retrieval", "retrieval.search"),
    "retrieval.fuse": ("retrieval", "retrieval.search"),
    "generation.generate": ("generation", None),
    "validator.validate": ("citation_validator", None),
    "validator.reload": ("citation_validator", "validator.validate"),
    "validator.support": ("citation_validator", "validator.validate"),
    "scheduler.find_slots": ("scheduler_gateway", None),
    "trace.record": ("trace", None),
}

