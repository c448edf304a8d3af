"""The orchestrator end to end: six services as separate processes, the sample corpus and slots,
every part outcome, the two-part question, outages, cross-tenant isolation, a misbehaving
generator, and a trace for every Ask."""

from __future__ import annotations

import datetime as dt

import grpc
import pytest
from citetrace.common.v1 import common_pb2 as c
from citetrace.common.v1 import route_pb2 as r
from citetrace.vocab import INTENT

from .conftest import BOTH_BACKENDS

pytestmark = pytest.mark.slow
# The tests whose answer depends on what retrieval finds run on both search backends; outages,
# clarification, scheduler scope and the generator faults do not depend on the backend.
both_backends = pytest.mark.parametrize("stack", BOTH_BACKENDS, indirect=True)

ARRIVAL_Q = "When should I arrive for my appointment at Northside Family Clinic?"
TWO_PART_Q = "Can I book cardiology tomorrow, and when should I arrive?"


def outcomes(response):
    return [(r.PartKind.Name(p.kind), c.PartOutcome.Name(p.outcome)) for p in response.parts]


def assert_citations_pinned(part):
    assert part.claims, "an answered part shows claims"
    for claim in part.claims:
        assert claim.citations, f"claim {claim.claim_id} has no citation"
        for cit in claim.citations:
            assert len(cit.passage_id) == 64 and len(cit.version_id) == 64 and len(cit.content_sha256) == 64
            assert cit.end > cit.start >= 0
            assert cit.link == f"/documents/{cit.document_id}/versions/{cit.version_id}#chars={cit.start}-{cit.end}"
            assert cit.source_class and cit.source_anchor


def assert_traced(stack, response, tenant="acme-health"):
    """The trace exists, under the response's trace ID, with the same parts and outcomes."""
    assert len(response.trace_id) == 32 and int(response.trace_id, 16)
    record = stack.get_trace(response.trace_id, tenant=tenant).record
    assert record.trace_id == response.trace_id
    assert record.tenant_id == tenant
    assert [(p.part_id, p.outcome) for p in record.parts] == [(p.part_id, p.outcome) for p in response.parts]
    assert record.route.router_version == response.route.router_version
    return record


@both_backends
def test_answered_with_citations(stack):
    response = stack.ask(ARRIVAL_Q)
    assert outcomes(response) == [("PART_KIND_ARRIVAL_PREPARATION", "PART_OUTCOME_ANSWERED")]
    part = response.parts[0]
    assert_citations_pinned(part)
    cited = {cit.document_id for claim in part.claims for cit in claim.citations}
    # Only approved, current documents of the asked intent for Northside (or every location).
    assert cited and cited <= {"acme-arrival-policy", "acme-northside-checkin", "acme-patient-faq"}
    record = assert_traced(stack, response)
    (part_record,) = record.parts
    assert part_record.retrieval.retrieved, "the retrieved set is kept"
    assert part_record.retrieval.settings.filters.tenant_id == "acme-health"
    assert part_record.generation.passages_offered >= 1 and part_record.generation.labels_offered
    assert part_record.citations, "the citation set is kept apart from the retrieved set"
    cited = {cit.passage_id for cit in part_record.citations}
    assert cited <= {hit.passage.identity.passage_id for hit in part_record.retrieval.retrieved}
    assert any(claim.shown and claim.validation.support == c.SUPPORT_VERDICT_SUPPORTED for claim in part_record.claims)
    # Delivered in the background from the orchestrator's durable outbox (trace_delivered: False).
    assert record.corpus.version_ids and not response.trace_delivered


@both_backends
def test_two_part_question_slot_and_policy(stack):
    response = stack.ask("Can I book cardiology at Northside tomorrow, and when should I arrive?")
    assert outcomes(response) == [("PART_KIND_LIVE_SLOT", "PART_OUTCOME_ANSWERED"),
                                  ("PART_KIND_ARRIVAL_PREPARATION", "PART_OUTCOME_ANSWERED")]
    slot_part, policy_part = response.parts
    assert slot_part.slots and slot_part.HasField("slots_as_of")
    assert all(s.location_id == "acme-northside" and s.specialty == "cardiology" for s in slot_part.slots)
    assert all(s.status == c.SLOT_STATUS_FREE for s in slot_part.slots)
    assert slot_part.next_action == c.NEXT_ACTION_CONFIRM_SLOT
    assert_citations_pinned(policy_part)
    routed = response.route
    assert {e.kind: e.value for e in routed.entities}["location"] == "acme-northside"
    assert routed.parts[0].HasField("range_start") and routed.parts[0].HasField("range_end")
    record = assert_traced(stack, response)
    assert len(record.parts[0].slots) == len(slot_part.slots) and record.parts[0].HasField("slots_as_of")


@both_backends
def test_two_part_question_without_clinic_asks_which_and_still_answers_the_policy(stack):
    response = stack.ask(TWO_PART_Q)
    assert outcomes(response) == [("PART_KIND_LIVE_SLOT", "PART_OUTCOME_NEEDS_CLARIFICATION"),
                                  ("PART_KIND_ARRIVAL_PREPARATION", "PART_OUTCOME_ANSWERED")]
    question = response.parts[0].clarification_question
    assert question.count("?") == 1
    assert "Northside Family Clinic" in question and "Northgate Family Clinic" in question
    assert not response.parts[0].slots
    assert response.next_action == c.NEXT_ACTION_ANSWER_CLARIFICATION
    assert_traced(stack, response)


def test_clarification_for_missing_specialty(stack):
    response = stack.ask("Are there any openings next Monday?")
    assert outcomes(response) == [("PART_KIND_LIVE_SLOT", "PART_OUTCOME_NEEDS_CLARIFICATION")]
    assert response.parts[0].clarification_question.startswith("Which specialty")
    assert list(response.route.parts[0].missing_entities) == ["specialty"]
    assert_traced(stack, response)


@both_backends
def test_abstains_when_no_eligible_evidence(stack):
    # borealis-clinics has no document about parking. A question with no matched intent searches
    # the union of the policy intents (decided up front, in the route's explanations, never
    # widened after the result); what it finds does not answer the question, so the part abstains
    # and nothing is cited (seed 000: ranking first is no reason to be cited).
    response = stack.ask("Where can I park my car?", tenant="borealis-clinics")
    assert outcomes(response) == [("PART_KIND_OTHER_POLICY", "PART_OUTCOME_ABSTAINED_NO_EVIDENCE")]
    part = response.parts[0]
    assert not part.claims and part.answer_text
    assert part.next_action == c.NEXT_ACTION_CONTACT_SCHEDULING_DESK
    assert any(e.startswith("search scope: no intent lexicon matched") for e in response.route.explanations)
    record = assert_traced(stack, response, tenant="borealis-clinics")
    assert sorted(INTENT.name(i) for i in record.parts[0].retrieval.settings.filters.intents) == sorted(
        ["other", "arrival_preparation", "cancellation_rescheduling", "provider_information"])
    assert not record.parts[0].citations and not any(claim.shown for claim in record.parts[0].claims)


def test_out_of_scope_clinical_and_emergency(stack):
    clinical = stack.ask("Should I stop taking my blood thinner before the echo?")
    assert outcomes(clinical) == [("PART_KIND_CLINICAL_BOUNDARY", "PART_OUTCOME_OUT_OF_SCOPE")]
    assert clinical.parts[0].next_action == c.NEXT_ACTION_CONTACT_CLINICIAN
    assert not clinical.route.in_scope
    record = assert_traced(stack, clinical)
    assert not record.parts[0].HasField("retrieval"), "nothing was searched for a clinical question"
    emergency = stack.ask("I have chest pain, can I book cardiology today?")
    assert outcomes(emergency) == [("PART_KIND_CLINICAL_BOUNDARY", "PART_OUTCOME_OUT_OF_SCOPE")]
    assert emergency.next_action == c.NEXT_ACTION_CONTACT_EMERGENCY_SERVICES
    assert_traced(stack, emergency)


@both_backends
def test_mixed_question_boundary_for_the_clinical_part_only(stack):
    response = stack.ask("Can I book cardiology at Northgate tomorrow and should I stop my blood thinner?")
    assert outcomes(response) == [("PART_KIND_LIVE_SLOT", "PART_OUTCOME_ANSWERED"),
                                  ("PART_KIND_CLINICAL_BOUNDARY", "PART_OUTCOME_OUT_OF_SCOPE")]
    assert response.parts[0].slots
    assert response.next_action == c.NEXT_ACTION_CONTACT_CLINICIAN
    assert_traced(stack, response)


@both_backends
def test_conflict_shows_both_and_routes_to_the_policy_owner(stack):
    response = stack.ask("When should I arrive for my MRI at Harbor Imaging Center?")
    assert outcomes(response) == [("PART_KIND_ARRIVAL_PREPARATION", "PART_OUTCOME_CONFLICT")]
    part = response.parts[0]
    assert part.next_action == c.NEXT_ACTION_ROUTE_TO_POLICY_OWNER
    documents = {conflict.citation.document_id for conflict in part.conflicts}
    assert documents == {"acme-harbor-mri-arrival", "acme-imaging-preparation"}
    texts = " ".join(conflict.text for conflict in part.conflicts)
    assert "45 minutes" in texts and "30 minutes" in texts
    assert not part.claims, "the generator is never asked to choose"
    record = assert_traced(stack, response)
    assert not record.parts[0].HasField("generation")


def test_scheduler_down_slot_part_unavailable_policy_part_still_answers(stack, tmp_path, closed_target):
    target = stack.start_service("orchestrator", tmp_path / "no-scheduler",
                                 scheduler_gateway_target=closed_target, default_deadline_seconds="10")
    response = stack.ask("Can I book cardiology at Northside tomorrow, and when should I arrive?", target=target)
    assert outcomes(response) == [("PART_KIND_LIVE_SLOT", "PART_OUTCOME_SOURCE_UNAVAILABLE"),
                                  ("PART_KIND_ARRIVAL_PREPARATION", "PART_OUTCOME_ANSWERED")]
    assert not response.parts[0].slots, "no slot from anywhere but the scheduler"
    assert response.parts[0].next_action == c.NEXT_ACTION_RETRY_LATER
    assert_citations_pinned(response.parts[1])
    record = assert_traced(stack, response)
    assert "scheduler_gateway: UNAVAILABLE" in record.parts[0].error


def test_retrieval_down_policy_unavailable_and_clinical_still_bounded(stack, tmp_path, closed_target):
    target = stack.start_service("orchestrator", tmp_path / "no-retrieval",
                                 retrieval_target=closed_target, default_deadline_seconds="10")
    policy = stack.ask(ARRIVAL_Q, target=target)
    assert outcomes(policy) == [("PART_KIND_ARRIVAL_PREPARATION", "PART_OUTCOME_SOURCE_UNAVAILABLE")]
    assert not policy.parts[0].claims
    assert "retrieval: UNAVAILABLE" in assert_traced(stack, policy).parts[0].error
    clinical = stack.ask("Do I have an infection?", target=target)
    assert outcomes(clinical) == [("PART_KIND_CLINICAL_BOUNDARY", "PART_OUTCOME_OUT_OF_SCOPE")]
    assert clinical.parts[0].next_action == c.NEXT_ACTION_CONTACT_CLINICIAN
    assert_traced(stack, clinical)


def _all_document_ids(response):
    ids = set()
    for part in response.parts:
        ids |= {cit.document_id for claim in part.claims for cit in claim.citations}
        ids |= {conflict.citation.document_id for conflict in part.conflicts}
    return ids


@pytest.mark.parametrize("question", [
    "Can I book cardiology at Fjordview Clinic tomorrow?",
    "Hva er reglene for avbestilling ved Aurora Clinic?",
    "When should I arrive at Cedar Main Street Clinic?",
    "Can I book physiotherapy at Fjordview tomorrow, and what is the cancellation policy?",
])
@both_backends
def test_a_tenant_never_receives_another_tenants_passages_or_slots(stack, question):
    response = stack.ask(question, tenant="acme-health")
    for part in response.parts:
        assert all(slot.location_id.startswith("acme-") for slot in part.slots)
    assert all(doc.startswith("acme-") for doc in _all_document_ids(response))
    record = assert_traced(stack, response)
    for part in record.parts:
        assert all(hit.passage.identity.tenant_id == "acme-health" for hit in part.retrieval.retrieved)
        assert all(slot.location_id.startswith("acme-") for slot in part.slots)


def test_another_tenants_location_is_not_found(stack):
    with pytest.raises(grpc.RpcError) as caught:
        stack.ask("Can I book cardiology tomorrow?", tenant="acme-health", location_id="bor-fjord")
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    ok = stack.ask("Can I book cardiology tomorrow?", tenant="borealis-clinics", location_id="bor-fjord")
    assert ok.parts[0].outcome == c.PART_OUTCOME_ANSWERED
    assert all(slot.location_id == "bor-fjord" for slot in ok.parts[0].slots)


def test_another_tenants_trace_is_not_found(stack):
    response = stack.ask(ARRIVAL_Q, tenant="acme-health")
    assert_traced(stack, response)
    with pytest.raises(grpc.RpcError) as caught:
        stack.get_trace(response.trace_id, tenant="borealis-clinics")
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


@both_backends
def test_staff_only_documents_never_reach_a_patient(stack):
    for question in ("Can clinics overbook appointments?", "What is the cancellation policy?"):
        response = stack.ask(question, tenant="acme-health", roles=("patient",))
        assert "acme-staff-overbooking" not in _all_document_ids(response)
        record = assert_traced(stack, response)
        for part in record.parts:
            assert all(hit.passage.identity.document_id != "acme-staff-overbooking"
                       for hit in part.retrieval.retrieved)


@pytest.fixture(scope="module")
def faulty(stack, tmp_path_factory):
    """Orchestrators whose generator misbehaves (the generation service's `test` backend)."""
    base = tmp_path_factory.mktemp("faulty")
    targets = {}
    for fault, attempts in (("invent_label", "0"), ("unsupported_addition", "0"), ("invent_label", "1")):
        generation = stack.start_service("generation", base / f"gen-{fault}-{attempts}", backend="test",
                                         test_fault=fault, test_fault_attempts=attempts)
        targets[(fault, attempts)] = stack.start_service(
            "orchestrator", base / f"orch-{fault}-{attempts}", generation_target=generation, max_regenerations="1")
    return targets


def test_invented_label_is_caught_and_never_shown(stack, faulty):
    response = stack.ask(ARRIVAL_Q, target=faulty[("invent_label", "0")])
    (part,) = response.parts
    assert part.outcome in (c.PART_OUTCOME_PARTIALLY_ANSWERED, c.PART_OUTCOME_ABSTAINED_NO_EVIDENCE)
    assert part.withheld
    assert any(c.FAILURE_REASON_CITATION_UNKNOWN in w.reasons for w in part.withheld)
    assert all(cit.label != "S99" for claim in part.claims for cit in claim.citations)
    record = assert_traced(stack, response)
    assert record.parts[0].generation.attempts == 2, "regenerated once with feedback, then gave up"
    assert c.FAILURE_REASON_CITATION_UNKNOWN in record.parts[0].reasons


def test_unsupported_addition_is_withheld(stack, faulty):
    response = stack.ask(ARRIVAL_Q, target=faulty[("unsupported_addition", "0")])
    (part,) = response.parts
    assert part.outcome in (c.PART_OUTCOME_PARTIALLY_ANSWERED, c.PART_OUTCOME_ABSTAINED_NO_EVIDENCE,
                            c.PART_OUTCOME_UNRESOLVED)
    assert part.withheld
    assert all("an assessment" not in claim.text for claim in part.claims)
    if part.outcome == c.PART_OUTCOME_PARTIALLY_ANSWERED:
        assert_citations_pinned(part)
    record = assert_traced(stack, response)
    assert any(not claim.shown and "an assessment" in claim.claim.text for claim in record.parts[0].claims)


def test_regeneration_with_feedback_recovers(stack, faulty):
    response = stack.ask(ARRIVAL_Q, target=faulty[("invent_label", "1")])
    assert outcomes(response) == [("PART_KIND_ARRIVAL_PREPARATION", "PART_OUTCOME_ANSWERED")]
    record = assert_traced(stack, response)
    assert record.parts[0].generation.attempts == 2
    first = [claim for claim in record.parts[0].claims if claim.attempt == 1]
    assert first and not any(claim.shown for claim in first)


def test_cli_prints_markers_sources_and_trace_or_json(stack):
    from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
    from google.protobuf import json_format

    text = stack.cli("ask", "--data-dir", str(stack.data_dir), "--tenant", "acme-health", "--roles", "patient",
                     "Can I book cardiology at Northside tomorrow, and when should I arrive?", timeout=60)
    assert text.returncode == 0, text.stderr
    assert "[p1] LIVE_SLOT: ANSWERED" in text.stdout and "[p2] ARRIVAL_PREPARATION: ANSWERED" in text.stdout
    assert "[1]" in text.stdout and "Sources:" in text.stdout and "/documents/acme-arrival-policy/versions/" in text.stdout
    trace_id = text.stdout.strip().splitlines()[-1].split()[1]
    assert stack.get_trace(trace_id).record.trace_id == trace_id
    # A recent as_of (within the clock-skew tolerance; older ones are replays for reviewer/auditor).
    as_of = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=30)).replace(microsecond=0)
    as_of_text = as_of.strftime("%Y-%m-%dT%H:%M:%SZ")
    as_json = stack.cli("ask", "--data-dir", str(stack.data_dir), "--tenant", "acme-health", "--json",
                        "--as-of", as_of_text, ARRIVAL_Q, timeout=60)
    assert as_json.returncode == 0, as_json.stderr
    response = json_format.Parse(as_json.stdout, pb.AskResponse())
    assert response.parts[0].outcome == c.PART_OUTCOME_ANSWERED
    assert '"outcome": "PART_OUTCOME_ANSWERED"' in as_json.stdout and '"passageId"' in as_json.stdout
    assert stack.get_trace(response.trace_id).record.as_of.ToJsonString() == as_of_text
    assert response.as_of.ToJsonString() == as_of_text  # every answer states the as_of it was computed for
