"""Citation-validator servicer: proto <-> domain only (checks in services/citation_validator/core.py,
the support decision in support.py, the reload adapter in store.py)."""

from __future__ import annotations

import logging

from citetrace.citation_validator.v1 import citation_validator_service_pb2 as pb
from citetrace.citation_validator.v1 import citation_validator_service_pb2_grpc as pb_grpc
from citetrace.common.v1 import common_pb2
from citetrace.kit.context import current_principal
from citetrace.kit.timestamps import field_time
from citetrace.vocab import enum_label

from services.citation_validator.core import ClaimIn, OfferedPassage, ValidationResult, Validator

log = logging.getLogger(__name__)
_VERDICT = {
    "SUPPORTED": common_pb2.SUPPORT_VERDICT_SUPPORTED,
    "UNSUPPORTED": common_pb2.SUPPORT_VERDICT_UNSUPPORTED,
    "UNRESOLVED": common_pb2.SUPPORT_VERDICT_UNRESOLVED,
}


def to_domain(request: pb.ValidateRequest):
    """Translation only: what the request must satisfy is checked by the validator."""
    claims = [ClaimIn(claim.claim_id, claim.text, tuple(claim.evidence_labels),
                      enum_label(common_pb2.ClaimType, claim.claim_type, "CLAIM_TYPE_", unspecified=""))
              for claim in request.claims]
    offered = []
    for item in request.offered:
        ident = item.passage.identity
        offered.append(OfferedPassage(
            label=item.label, passage_id=ident.passage_id, tenant_id=ident.tenant_id,
            document_id=ident.document_id, version_id=ident.version_id, start=ident.start, end=ident.end,
            content_sha256=ident.content_sha256, source_anchor=ident.source_anchor,
            source_class=ident.source_class, text=item.passage.text, page_start=ident.page_start,
            page_end=ident.page_end, page_label_start=ident.page_label_start, page_label_end=ident.page_label_end,
            title=item.passage.title, heading_context=item.passage.heading_context,
        ))
    return claims, offered, field_time(request, "as_of")


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
    """Translates proto <-> domain; built with its validator by services/citation_validator/bootstrap.py."""

    def __init__(self, validator: Validator) -> None:
        self.validator = validator

    def Validate(self, request, context):
        claims, offered, as_of = to_domain(request)
        return to_proto(self.validator.validate(current_principal().tenant_id, claims, offered, as_of))
