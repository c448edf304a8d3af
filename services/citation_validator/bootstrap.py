"""The one assembly point of the citation validator: settings -> the source policy, the support model
(embedded or remote), the passage store (retrieval's GetPassages) -> the validator -> the servicer. __main__, the tests and the benchmarks build the
service here."""

from __future__ import annotations

import dataclasses
import logging

from citetrace.citation_validator.v1 import citation_validator_service_pb2 as pb
from citetrace.citation_validator.v1 import citation_validator_service_pb2_grpc as pb_grpc
from citetrace.kit.auth import AuthSettings
from citetrace.kit.server import ServiceSpec

from services.citation_validator.core import PassageStore, Validator
from services.citation_validator.policy import SourcePolicy
from services.citation_validator.servicer import CitationValidatorServicer
from services.citation_validator.settings import Settings
from services.citation_validator.store import RetrievalPassageStore
from services.citation_validator.support import SupportModel, build_support_model

log = logging.getLogger("citetrace.citation_validator")


@dataclasses.dataclass
class CitationValidation:
    """The assembled service."""

    settings: Settings
    validator: Validator
    servicer: CitationValidatorServicer

    def warm_up(self) -> None:
        self.validator.support.warm_up()
        log.info("citation validator: source policy %s, support model %s", self.validator.policy.version,
                 self.validator.support.version)

    def spec(self) -> ServiceSpec:
        return ServiceSpec(
            name="citation_validator",
            full_name=pb.DESCRIPTOR.services_by_name["CitationValidatorService"].full_name,
            servicer=self.servicer,
            register=pb_grpc.add_CitationValidatorServiceServicer_to_server,
            # Largest request accepted (documented in ARCHITECTURE.md, "Limits"): a ValidateRequest carries the claims and the offered passages.
            max_receive_message_bytes=4 * 1024 * 1024,
            warm_up=self.warm_up,
            close=self.validator.close,
        )


def build(settings: Settings, *, store: PassageStore | None = None,
          support: SupportModel | None = None) -> CitationValidation:
    """The service; `store` replaces retrieval's GetPassages (the in-process benchmark reads through the
    servicer) and `support` the support model the settings name (tests: a judge that cannot answer)."""
    policy = SourcePolicy.load(settings.source_policy_file)
    support = support or build_support_model(
        settings.support_model, weights_file=settings.support_weights_file,
        base_url=settings.support_remote_base_url, model=settings.support_remote_model,
        api_key=settings.support_remote_api_key, timeout_seconds=settings.support_remote_timeout_seconds,
        response_format=settings.support_remote_response_format)
    validator = Validator(store or RetrievalPassageStore(settings.retrieval_target), policy, support,
                          reload_timeout=settings.reload_timeout_seconds,
                          max_claims=settings.max_claims, max_offered=settings.max_offered,
                          reload_workers=settings.max_workers)
    return CitationValidation(settings, validator, CitationValidatorServicer(validator))


def build_spec(settings: Settings, auth: AuthSettings | None = None, **adapters) -> ServiceSpec:
    """What services/citation_validator/__main__.py serves (the validator signs nothing: `auth` is unused)."""
    return build(settings, **adapters).spec()
