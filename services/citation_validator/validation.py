"""What a ValidateRequest must satisfy, checked once, by the validator (the servicer only translates)."""

from __future__ import annotations

from collections.abc import Sequence

from citetrace.kit.errors import InvalidArgument
from citetrace.vocab import CLAIM_TYPES


def check_request(claims: Sequence, offered: Sequence, *, max_claims: int, max_offered: int) -> None:
    """`claims` are core.ClaimIn, `offered` core.OfferedPassage; InvalidArgument names what is wrong."""
    if not claims:
        raise InvalidArgument("NO_CLAIMS", "claims must not be empty", field="claims")
    if len(claims) > max_claims:
        raise InvalidArgument("TOO_MANY_CLAIMS", f"{len(claims)} claims; limit {max_claims}", field="claims")
    if len(offered) > max_offered:
        raise InvalidArgument("TOO_MANY_OFFERED", f"{len(offered)} offered passages; limit {max_offered}", field="offered")
    for i, claim in enumerate(claims):
        if not claim.claim_id.strip():
            raise InvalidArgument("MISSING_CLAIM_ID", f"claims[{i}].claim_id is empty", field="claims.claim_id")
        if not claim.text.strip():
            raise InvalidArgument("EMPTY_CLAIM_TEXT", f"claims[{i}].text is empty", field="claims.text")
        if claim.claim_type and claim.claim_type not in CLAIM_TYPES:
            raise InvalidArgument("INVALID_CLAIM_TYPE", f"claims[{i}].claim_type {claim.claim_type} is unknown", field="claims.claim_type")
    for i, item in enumerate(offered):
        if not item.label:
            raise InvalidArgument("MISSING_LABEL", f"offered[{i}].label is empty", field="offered.label")
