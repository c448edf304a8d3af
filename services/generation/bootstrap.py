"""The one assembly point of the generation service: settings -> the backend (extractive, an
OpenAI-compatible server, or the fault-injecting test backend) -> the generator -> the servicer.
__main__, the tests and the benchmarks build the service here."""

from __future__ import annotations

import dataclasses

from citetrace.generation.v1 import generation_service_pb2 as pb
from citetrace.generation.v1 import generation_service_pb2_grpc as pb_grpc
from citetrace.kit.auth import AuthSettings
from citetrace.kit.server import ServiceSpec

from services.generation.core import Backend
from services.generation.generator import Generator, make_backend
from services.generation.servicer import GenerationServicer
from services.generation.settings import Settings


@dataclasses.dataclass
class Generation:
    """The assembled service."""

    settings: Settings
    generator: Generator
    servicer: GenerationServicer

    def close(self) -> None:
        self.generator.close()

    def spec(self) -> ServiceSpec:
        return ServiceSpec(
            name="generation",
            full_name=pb.DESCRIPTOR.services_by_name["GenerationService"].full_name,
            servicer=self.servicer,
            register=pb_grpc.add_GenerationServiceServicer_to_server,
            # Largest request accepted (documented in ARCHITECTURE.md, "Limits"): a GenerateRequest carries at most 200 labelled passages.
            max_receive_message_bytes=4 * 1024 * 1024,
            warm_up=self.generator.warm_up,  # the extractive backend's embedding model; nothing for a remote one
            close=self.close,
        )


def build(settings: Settings, *, backend: Backend | None = None) -> Generation:
    generator = Generator(settings, backend or make_backend(settings))
    return Generation(settings, generator, GenerationServicer(generator))


def build_spec(settings: Settings, auth: AuthSettings | None = None, **adapters) -> ServiceSpec:
    """What services/generation/__main__.py serves (generation signs nothing: `auth` is unused)."""
    return build(settings, **adapters).spec()
