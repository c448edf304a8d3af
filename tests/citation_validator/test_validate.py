"""Validate over real gRPC against a REAL retrieval service: one test (at least) per row of the
fixture matrix of issue #6, asserting on the returned result."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import grpc
import pytest
from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.common.v1 import common_pb2
from citetrace.kit.clients import error_info
from prometheus_client import REGISTRY

from .conftest import ACME, BOREALIS, claim, reasons

SUPPORTED = common_pb2.SUPPORT_VERDICT_SUPPORTED
UNSUPPORTED = common_pb2.SUPPORT_VERDICT_UNSUPPORTED
UNRESOLVED = common_pb2.SUPPORT_VERDICT_UNRESOLVED
ARRIVE = "Please arrive 15 minutes before your appointment time."
MRI_RULE = ("MRI patients must arrive 30 minutes early to complete a safety questionnaire. However, patients "
            "who completed the questionnaire online may arrive 15 minutes early.")


def failures(reason: str) -> float:
    return REGISTRY.get_sample_value("citetrace_citation_failures_total", {"reason": reason}) or 0.0


def test_supported_control_binds_citation_to_the_pinned_version(validate, world):
    offered = world.offered("val-arrival", "val-cancel")
    reply = validate([claim("c1", ARRIVE, "S1")], offered)
    c1 = reply.claims[0]
    assert reply.passed and list(reply.findings) == []
    assert c1.claim_id == "c1" and list(c1.findings) == [] and not c1.withheld
    assert c1.support == SUPPORTED and c1.support_score >= 0.6 and c1.support_reason
    ident = world.passages["val-arrival"].identity
    assert len(c1.citations) == 1
    cit = c1.citations[0]
    assert (cit.label, cit.passage_id, cit.document_id, cit.version_id) == (
        "S1", ident.passage_id, "val-arrival", ident.version_id)
    assert (cit.start, cit.end, cit.content_sha256, cit.source_anchor, cit.source_class) == (
        ident.start, ident.end, ident.content_sha256, ident.source_anchor, "scheduling_policy")
    assert cit.link == f"/documents/val-arrival/versions/{ident.version_id}#chars={ident.start}-{ident.end}"
    assert cit.title == "Arrival at Northside Family Clinic (synthetic)"
    assert reply.source_policy_version == "source-policy-2026.11.1"
    assert reply.support_model.startswith("embedded:support-embedded-")
    assert c1.support_model == reply.support_model


def test_unsupported_addition_is_withheld_while_the_supported_claim_stays(validate, world):
    before = failures("UNSUPPORTED_CLAIM")
    reply = validate([
        claim("c1", ARRIVE, "S1"),
        claim("c2", "Check in at the front desk with a photo ID and an assessment.", "S1"),
    ], world.offered("val-arrival"))
    c1, c2 = reply.claims
    assert c1.support == SUPPORTED and not c1.withheld and len(c1.citations) == 1
    assert c2.support == UNSUPPORTED and c2.withheld
    assert "assessment" in c2.support_reason
    assert list(c2.findings) == []  # structurally fine: the failure is support, kept apart
    assert not reply.passed
    assert failures("UNSUPPORTED_CLAIM") == before + 1


def test_locator_mismatch_offset_and_anchor(validate, world):
    shifted = world.offered("val-arrival")
    shifted[0].passage.identity.start += 7
    shifted[0].passage.identity.end += 7
    reply = validate([claim("c1", ARRIVE, "S1")], shifted)
    assert reasons(reply.claims[0]) == ["LOCATOR_MISMATCH"]
    assert reply.claims[0].withheld and list(reply.claims[0].citations) == [] and not reply.passed
    anchored = world.offered("val-arrival")
    anchored[0].passage.identity.source_anchor = "Cancellation"
    reply = validate([claim("c1", ARRIVE, "S1")], anchored)
    assert reasons(reply.claims[0]) == ["LOCATOR_MISMATCH"]


def test_version_and_span_digest_mismatch(validate, world):
    other_version = world.offered("val-arrival")
    other_version[0].passage.identity.version_id = "0" * 64
    assert reasons(validate([claim("c1", ARRIVE, "S1")], other_version).claims[0]) == ["VERSION_MISMATCH"]
    edited_text = world.offered("val-arrival")
    edited_text[0].passage.text = edited_text[0].passage.text.replace("15 minutes", "5 minutes")
    reply = validate([claim("c1", "Please arrive 5 minutes before your appointment time.", "S1")], edited_text)
    assert reasons(reply.claims[0]) == ["SPAN_DIGEST_MISMATCH"]
    assert reply.claims[0].withheld
    edited_digest = world.offered("val-arrival")
    edited_digest[0].passage.identity.content_sha256 = hashlib.sha256(b"something else").hexdigest()
    before = _digest_failures()
    assert reasons(validate([claim("c1", ARRIVE, "S1")], edited_digest).claims[0]) == ["SPAN_DIGEST_MISMATCH"]
    assert _digest_failures() == before + 1  # feeds the digest-failure alert


def _digest_failures() -> float:
    from prometheus_client import REGISTRY

    labels = {"service": "citation_validator", "kind": "passage_span"}
    return REGISTRY.get_sample_value("citetrace_digest_failures_total", labels) or 0.0


def test_authority_mismatch_provider_profile_cannot_establish_a_cancellation_term(validate, world):
    text = "Dr. Berg charges a late cancellation fee of $40 for missed visits."
    reply = validate([claim("c1", text, "S1", claim_type=common_pb2.CLAIM_TYPE_CANCELLATION_TERM)],
                     world.offered("val-dr-berg"))
    c1 = reply.claims[0]
    assert reasons(c1) == ["AUTHORITY_MISMATCH"]
    assert "provider_profile" in c1.findings[0].message and "source-policy-2026.11.1" in c1.findings[0].message
    assert c1.withheld and list(c1.citations) == []
    # the same passage may establish a provider description
    ok = validate([claim("c1", "Dr. Berg (synthetic) is a cardiologist at Northside Family Clinic.", "S1",
                         claim_type=common_pb2.CLAIM_TYPE_PROVIDER_DESCRIPTION)], world.offered("val-dr-berg"))
    assert ok.passed and ok.claims[0].support == SUPPORTED


def test_changed_source_superseded_after_retrieval_is_stale(validate, world):
    text = "# Parking\n\nThe visitor lot behind Northside Family Clinic (synthetic) is free for 2 hours.\n"
    first = world.ingest("val-parking", text, valid_from=datetime(2025, 1, 1, tzinfo=UTC))
    passage = world.load(first.passages[0].passage_id)
    offered = [common_pb2.LabelledPassage(label="S1", passage=passage)]
    sentence = "The visitor lot behind Northside Family Clinic (synthetic) is free for 2 hours."
    assert validate([claim("c1", sentence, "S1", claim_type=common_pb2.CLAIM_TYPE_SCHEDULING_RULE)], offered).passed
    # A new version replaces it after the answer's retrieval.
    world.ingest("val-parking", text.replace("2 hours", "1 hour"), valid_from=datetime(2026, 6, 1, tzinfo=UTC))
    reply = validate([claim("c1", sentence, "S1", claim_type=common_pb2.CLAIM_TYPE_SCHEDULING_RULE)], offered)
    c1 = reply.claims[0]
    assert reasons(c1) == ["STALE_VERSION"] and c1.withheld and not reply.passed
    assert "superseded by" in c1.findings[0].message
    # ... while an as_of before the change still validates (the saved answer stays identifiable)
    past = validate([claim("c1", sentence, "S1", claim_type=common_pb2.CLAIM_TYPE_SCHEDULING_RULE)], offered,
                    as_of=datetime(2026, 1, 1, tzinfo=UTC))
    assert past.passed


def test_retired_version_is_stale(validate, world):
    text = "# Lockers\n\nLockers for MRI patients are next to the changing room.\n"
    reply = world.ingest("val-lockers", text)
    passage = world.load(reply.passages[0].passage_id)
    offered = [common_pb2.LabelledPassage(label="S1", passage=passage)]
    sentence = "Lockers for MRI patients are next to the changing room."
    assert validate([claim("c1", sentence, "S1")], offered).passed
    world.retrieval.SetVersionStatus(
        __import__("citetrace.retrieval.v1.retrieval_service_pb2", fromlist=["x"]).SetVersionStatusRequest(
            version_id=reply.version.version_id, status=common_pb2.VERSION_STATUS_RETIRED),
        timeout=10, metadata=world.md(ACME, ("policy_admin",)))
    stale = validate([claim("c1", sentence, "S1")], offered)
    assert reasons(stale.claims[0]) == ["STALE_VERSION"] and "retired" in stale.claims[0].findings[0].message


def test_duplicate_claim_ids_and_duplicate_passage_ids(validate, world):
    reply = validate([claim("c1", ARRIVE, "S1"), claim("c1", ARRIVE, "S1")], world.offered("val-arrival"))
    assert reasons(reply) == ["DUPLICATE_CLAIM_ID"]
    assert all("DUPLICATE_CLAIM_ID" in reasons(c) for c in reply.claims) and not reply.passed
    twice = world.offered("val-arrival", "val-arrival")  # one passage offered as S1 and S2
    reply = validate([claim("c1", ARRIVE, "S2")], twice)
    assert reasons(reply) == ["DUPLICATE_PASSAGE_ID"]
    assert reasons(reply.claims[0]) == ["DUPLICATE_PASSAGE_ID"] and reply.claims[0].withheld


def test_dangling_evidence_refs(validate, world):
    offered = world.offered("val-arrival", "val-cancel")
    offered[1].passage.ClearField("identity")  # S2 carries no passage identity
    reply = validate([claim("c1", ARRIVE, "S1", "S2")], offered)
    assert reasons(reply.claims[0]) == ["DANGLING_EVIDENCE_REF"]
    assert [c.label for c in reply.claims[0].citations] == ["S1"]  # the good evidence is still bound
    ambiguous = world.offered("val-arrival", "val-cancel", labels=["S1", "S1"])
    reply = validate([claim("c1", ARRIVE, "S1")], ambiguous)
    assert reasons(reply) == ["DANGLING_EVIDENCE_REF"] and reasons(reply.claims[0]) == ["DANGLING_EVIDENCE_REF"]


def test_unknown_label(validate, world):
    before = failures("CITATION_UNKNOWN")
    reply = validate([claim("c1", ARRIVE, "S1", "S99")], world.offered("val-arrival"))
    c1 = reply.claims[0]
    assert reasons(c1) == ["CITATION_UNKNOWN"] and c1.findings[0].label == "S99"
    assert c1.withheld and not reply.passed
    assert failures("CITATION_UNKNOWN") == before + 1


def test_no_label_is_a_citation_gap_unless_non_factual(validate, world):
    reply = validate([
        claim("c1", ARRIVE),
        claim("c2", "Thank you for your question.", claim_type=common_pb2.CLAIM_TYPE_NON_FACTUAL),
        claim("c3", "Patients must arrive 45 minutes early.", claim_type=common_pb2.CLAIM_TYPE_NON_FACTUAL),
    ], world.offered("val-arrival"))
    c1, c2, c3 = reply.claims
    assert reasons(c1) == ["CITATION_GAP"] and c1.withheld
    assert list(c2.findings) == [] and c2.support == SUPPORTED and not c2.withheld
    assert reasons(c3) == ["CITATION_GAP"] and "states a rule" in c3.findings[0].message


def test_passage_of_another_tenant_is_a_scope_violation(validate, world):
    foreign = world.offered("val-fjord")
    text = "Please arrive 10 minutes before your appointment at Fjordview Clinic (synthetic)."
    reply = validate([claim("c1", text, "S1")], foreign)  # the caller is acme-health
    assert reasons(reply.claims[0]) == ["SCOPE_VIOLATION"] and reply.claims[0].withheld
    # Even with the tenant field forged, the store of record does not hand it out.
    forged = world.offered("val-fjord")
    forged[0].passage.identity.tenant_id = ACME
    reply = validate([claim("c1", text, "S1")], forged)
    assert reasons(reply.claims[0]) == ["SCOPE_VIOLATION"]
    assert list(reply.claims[0].citations) == []
    # The owner tenant validates the same claim fine.
    assert validate([claim("c1", text, "S1")], world.offered("val-fjord"), tenant=BOREALIS).passed


def test_passage_outside_the_callers_roles_is_a_scope_violation(validate, world):
    text = "Staff must badge in at the service entrance before 7:30 am."
    offered = world.offered("val-staff-only")
    assert reasons(validate([claim("c1", text, "S1", claim_type=common_pb2.CLAIM_TYPE_GENERAL_POLICY)],
                            offered, roles=("patient",)).claims[0]) == ["SCOPE_VIOLATION"]
    assert validate([claim("c1", text, "S1", claim_type=common_pb2.CLAIM_TYPE_GENERAL_POLICY)], offered,
                    roles=("staff",)).passed


def test_reordered_evidence_list_binds_markers_by_id_not_position(validate, world):
    claims = [claim("c1", ARRIVE, "S1"),
              claim("c2", "A late cancellation fee of $25 applies to cancellations made less than 24 hours ahead, "
                          "except when the clinic cancels the appointment.", "S2",
                    claim_type=common_pb2.CLAIM_TYPE_CANCELLATION_TERM)]
    ordered = world.offered("val-arrival", "val-cancel")
    reordered = list(reversed(world.offered("val-arrival", "val-cancel")))  # S2 first, IDs preserved
    a, b = validate(claims, ordered), validate(claims, reordered)
    assert a.passed and b.passed
    for x, y in zip(a.claims, b.claims, strict=True):
        assert [(c.label, c.passage_id) for c in x.citations] == [(c.label, c.passage_id) for c in y.citations]
    assert b.claims[0].citations[0].passage_id == world.passages["val-arrival"].identity.passage_id
    assert b.claims[1].citations[0].passage_id == world.passages["val-cancel"].identity.passage_id


def test_negation_flipped_is_unsupported(validate, world):
    flipped = MRI_RULE.replace("must arrive", "must not arrive")
    reply = validate([claim("c1", MRI_RULE, "S1"), claim("c2", flipped, "S1")], world.offered("val-arrival"))
    assert reply.claims[0].support == SUPPORTED
    assert reply.claims[1].support == UNSUPPORTED and "negation" in reply.claims[1].support_reason
    assert reply.claims[1].support_score < reply.claims[0].support_score


def test_number_changed_is_unsupported(validate, world):
    reply = validate([claim("c1", "Please arrive 30 minutes before your appointment time.", "S1")],
                     world.offered("val-arrival"))
    c1 = reply.claims[0]
    assert c1.support == UNSUPPORTED and c1.withheld
    assert "30 minute" in c1.support_reason


def test_dropped_exception_is_unsupported(validate, world):
    rule_only = "MRI patients must arrive 30 minutes early to complete a safety questionnaire."
    reply = validate([claim("c1", rule_only, "S1")], world.offered("val-arrival"))
    assert reply.claims[0].support == UNSUPPORTED and "exception" in reply.claims[0].support_reason


def test_seed_module_fixture(validate, world):
    reply = validate([
        claim("c1", "This module begins with an introductory lesson.", "S1",
              claim_type=common_pb2.CLAIM_TYPE_GENERAL_POLICY),
        claim("c2", "The module contains an introductory lesson and an assessment.", "S1",
              claim_type=common_pb2.CLAIM_TYPE_GENERAL_POLICY),
    ], world.offered("val-module"))
    assert [c.support for c in reply.claims] == [SUPPORTED, UNSUPPORTED]
    assert [c.withheld for c in reply.claims] == [False, True]


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ([], "NO_CLAIMS"),
        ([claim("", ARRIVE, "S1")], "MISSING_CLAIM_ID"),
        ([claim("c1", "   ", "S1")], "EMPTY_CLAIM_TEXT"),
        ([claim(f"c{i}", ARRIVE, "S1") for i in range(65)], "TOO_MANY_CLAIMS"),
    ],
)
def test_bad_requests_are_invalid_argument(validate, world, claims, reason):
    with pytest.raises(grpc.RpcError) as caught:
        validate(claims, world.offered("val-arrival"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(caught.value).reason == reason


def test_unauthenticated_call_is_rejected(validator, world):
    with pytest.raises(grpc.RpcError) as caught:
        validator.Validate(cv_pb.ValidateRequest(claims=[claim("c1", ARRIVE, "S1")],
                                                 offered=world.offered("val-arrival")), timeout=5)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
