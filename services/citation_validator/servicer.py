"""Citation-validator servicer: proto <-> domain only (checks in services/citation_validator/core.py,
the support decision in support.py, the reload adapter in store.py)."""

from __future__ import annotations

import logging

from citetrace.citation_validator.v1 import citation_validator_service_pb2 as pb
from citetrace.citation_validator.v1 import citation_validator_service_pb2_grpc as pb_grpc
from citetrace.common.v1 import common_pb2
from citetrace.kit.context import current_principal
from citetrace.kit.errors import InvalidArgument
from citetrace.kit.server import ServiceSpec
from citetrace.kit.timestamps import field_time

from services.citation_validator.core import ClaimIn, OfferedPassage, ValidationResult, Validator
from services.citation_validator.policy import SourcePolicy
from services.citation_validator.store import RetrievalPassageStore
from services.citation_validator.support import build_support_model

log = logging.getLogger(__name__)
_VERDICT = {
    "SUPPORTED": common_pb2.SUPPORT_VERDICT_SUPPORTED,
    "UNSUPPORTED": common_pb2.SUPPORT_VERDICT_UNSUPPORTED,
    "UNRESOLVED": common_pb2.SUPPORT_VERDICT_UNRESOLVED,
}


def _claim_type(value: int) -> str:
    name = common_pb2.ClaimType.Name(value) if value in common_pb2.ClaimType.values() else ""
    return "" if not name or name.endswith("_UNSPECIFIED") else name.removeprefix("CLAIM_TYPE_")


def to_domain(request: pb.ValidateRequest, max_claims: int, max_offered: int):
    if not request.claims:
        raise InvalidArgument("NO_CLAIMS", "claims must not be empty")
    if len(request.claims) > max_claims:
        raise InvalidArgument("TOO_MANY_CLAIMS", f"{len(request.claims)} claims; limit {max_claims}")
    if len(request.offered) > max_offered:
        raise InvalidArgument("TOO_MANY_OFFERED", f"{len(request.offered)} offered passages; limit {max_offered}")
    claims = []
    for i, claim in enumerate(request.claims):
        if not claim.claim_id.strip():
            raise InvalidArgument("MISSING_CLAIM_ID", f"claims[{i}].claim_id is empty")
        if not claim.text.strip():
            raise InvalidArgument("EMPTY_CLAIM_TEXT", f"claims[{i}].text is empty")
        if claim.claim_type not in common_pb2.ClaimType.values():
            raise InvalidArgument("INVALID_CLAIM_TYPE", f"claims[{i}].claim_type {claim.claim_type} is unknown")
        claims.append(ClaimIn(claim.claim_id, claim.text, tuple(claim.evidence_labels), _claim_type(claim.claim_type)))
    offered = []
    for i, item in enumerate(request.offered):
        if not item.label:
            raise InvalidArgument("MISSING_LABEL", f"offered[{i}].label is empty")
        ident = item.passage.identity
        offered.append(OfferedPassage(
            label=item.label, passage_id=ident.passage_id, tenant_id=ident.tenant_id,
            document_id=ident.document_id, version_id=ident.version_id, start=ident.start, end=ident.end,
            content_sha256=ident.content_sha256, source_anchor=ident.source_anchor,
            source_class=ident.source_class, text=item.passage.text, page_start=ident.page_start,
            page_end=ident.page_end, page_label_start=ident.page_label_start, page_label_end=ident.page_label_end,
        ))
    as_of = field_time(request, "as_of")
    return claims, offered, as_of


def _finding(f) -> pb.Finding:
    return pb.Finding(reason=common_pb2.FailureReason.Value(f"FAILURE_REASON_{f.reason}"), label=f.label,
                      passage_id=f.passage_id, message=f.message)


def to_proto(result: ValidationResult) -> pb.ValidateResponse:
    return pb.ValidateResponse(
        claims=[
            pb.ClaimValidation(
                claim_id=c.claim_id,
                findings=[_finding(f) for f in c.findings],
                support=_VERDICT[c.support],
                support_score=c.support_score,
                support_reason=c.support_reason,
                citations=[common_pb2.Citation(**vars(cit)) for cit in c.citations],
                withheld=c.withheld,
                support_model=c.support_model,
            )
            for c in result.claims
        ],
        findings=[_finding(f) for f in result.findings],
        passed=result.passed,
        source_policy_version=result.source_policy_version,
        support_model=result.support_model,
    )


class CitationValidatorServicer(pb_grpc.CitationValidatorServiceServicer):
    def __init__(self, settings) -> None:
        self.settings = settings
        self.policy = SourcePolicy.load(settings.source_policy_file)
        self.support = build_support_model(
            settings.support_model, weights_file=settings.support_weights_file,
            base_url=settings.support_remote_base_url, model=settings.support_remote_model,
            api_key=settings.support_remote_api_key, timeout_seconds=settings.support_remote_timeout_seconds,
            response_format=settings.support_remote_response_format)
        self.validator = Validator(RetrievalPassageStore(settings.retrieval_target), self.policy, self.support,
                                   reload_timeout=settings.reload_timeout_seconds)

    def warm_up(self) -> None:
        self.support.warm_up()
        log.info("citation validator: source policy %s, support model %s", self.policy.version, self.support.version)

    def Validate(self, request, context):
        claims, offered, as_of = to_domain(request, self.settings.max_claims, self.settings.max_offered)
        principal = current_principal()
        return to_proto(self.validator.validate(principal.tenant_id, claims, offered, as_of))


def build_spec(settings) -> ServiceSpec:
    return ServiceSpec(
        name="citation_validator",
        full_name=pb.DESCRIPTOR.services_by_name["CitationValidatorService"].full_name,
        servicer=CitationValidatorServicer(settings),
        register=pb_grpc.add_CitationValidatorServiceServicer_to_server,
    )
