"""The six gRPC services of the local stack and its web application (the console): module, default
ports, settings prefix. The one table the CLI, the docs and the deploy checks read."""

from __future__ import annotations

import dataclasses


class _Named:
    """What follows from a process's short name: its module and its settings prefix."""

    name: str

    @property
    def module(self) -> str:
        return f"services.{self.name}"

    @property
    def env_prefix(self) -> str:
        return f"CITETRACE_{self.name.upper()}_"


@dataclasses.dataclass(frozen=True)
class ServiceInfo(_Named):
    name: str  # short name, also the folder under services/
    full_name: str  # the gRPC service's full name
    port: int
    metrics_port: int

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"


# Start order: stores first, then the services that call them.
SERVICES: tuple[ServiceInfo, ...] = (
    ServiceInfo("retrieval", "citetrace.retrieval.v1.RetrievalService", 50052, 9152),
    ServiceInfo("scheduler_gateway", "citetrace.scheduler_gateway.v1.SchedulerGatewayService", 50053, 9153),
    ServiceInfo("generation", "citetrace.generation.v1.GenerationService", 50054, 9154),
    ServiceInfo("citation_validator", "citetrace.citation_validator.v1.CitationValidatorService", 50055, 9155),
    ServiceInfo("trace", "citetrace.trace.v1.TraceService", 50056, 9156),
    ServiceInfo("orchestrator", "citetrace.orchestrator.v1.OrchestratorService", 50051, 9151),
)

BY_NAME = {info.name: info for info in SERVICES}


@dataclasses.dataclass(frozen=True)
class WebAppInfo(_Named):
    """An HTTP application of the stack (not a gRPC service): ready when GET `ready_path` is 200
    (SERVING), liveness at `live_path`. It calls the services only over their gRPC contracts."""

    name: str
    port: int
    metrics_port: int
    ready_path: str = "/readyz"
    live_path: str = "/healthz"

    def url(self, offset: int = 0) -> str:
        return f"http://127.0.0.1:{self.port + offset}"


CONSOLE = WebAppInfo("console", 8150, 9157)
WEB_APPS: tuple[WebAppInfo, ...] = (CONSOLE,)


def stack_ports() -> list[int]:
    """Every port the local stack binds (before a --port-offset)."""
    return [p for info in (*SERVICES, *WEB_APPS) for p in (info.port, info.metrics_port)]
