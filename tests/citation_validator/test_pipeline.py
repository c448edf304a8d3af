"""Retrieval -> generation -> validation over real gRPC on the sample corpus (deploy/samples):
the extractive answers are useful and validate; every injected generator fault is caught by the
validator, and regeneration with the validator's feedback recovers; the hostile-instruction
passage changes nothing."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.common.v1 import common_pb2
from citetrace.generation.v1 import generation_service_pb2 as gen_pb
from citetrace.generation.v1 import generation_service_pb2_grpc as gen_grpc
from citetrace.kit.testing import serving, token_metadata
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb

from apps.cli.ingest import parse_file
from services.generation.bootstrap import build_spec as build_generation
from services.generation.settings import Settings as GenerationSettings

from .conftest import reasons, retrieval_service, validator_service

pytestmark = pytest.mark.slow
SAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "samples" / "corpus"
ARRIVAL = common_pb2.INTENT_ARRIVAL_PREPARATION
CANCEL = common_pb2.INTENT_CANCELLATION_RESCHEDULING


@pytest.fixture(scope="module")
def stack(auth, tmp_path_factory):
    with retrieval_service(auth, tmp_path_factory.mktemp("pipeline")) as (runner, retrieval):
        for path in sorted(SAMPLES.rglob("*.md")):
            source = parse_file(path)
            retrieval.IngestDocument(source.request(), timeout=120,
                                     metadata=token_metadata(auth, source.tenant, ("policy_admin",)))
        with validator_service(auth, runner.address) as validator:
            yield retrieval, validator


@pytest.fixture(scope="module")
def generators(auth):
    """backend/fault name -> Generation stub (one in-process server each)."""
    stubs, contexts = {}, []
    for name, overrides in {"extractive": {}, "invent_label": {"backend": "test", "test_fault": "invent_label"},
                            "unsupported_addition": {"backend": "test", "test_fault": "unsupported_addition"},
                            "drop_labels": {"backend": "test", "test_fault": "drop_labels"}}.items():
        ctx = serving(build_generation(GenerationSettings(port=0, metrics_port=-1, **overrides)), auth)
        runner = ctx.__enter__()
        contexts.append(ctx)
        channel = grpc.insecure_channel(runner.address)
        stubs[name] = gen_grpc.GenerationServiceStub(channel)
    yield stubs
    for ctx in contexts:
        ctx.__exit__(None, None, None)


def ask(auth, stack, generator, tenant, question, intent, intents, attempt=1, feedback=()):
    retrieval, validator = stack
    md = token_metadata(auth, tenant, ("patient",))
    hits = retrieval.Search(ret_pb.SearchRequest(query=question, k=5, scope=ret_pb.SearchScope(intents=intents)),
                            timeout=30, metadata=md).hits
    offered = [common_pb2.LabelledPassage(label=h.label, passage=h.passage) for h in hits]
    generated = generator.Generate(gen_pb.GenerateRequest(question=question, intent=intent, passages=offered,
                                                          attempt=attempt, feedback=list(feedback)),
                                   timeout=10, metadata=md)
    validation = validator.Validate(cv_pb.ValidateRequest(claims=generated.claims, offered=offered, intent=intent),
                                    timeout=10, metadata=md) if generated.claims else None
    return offered, generated, validation


QUESTIONS = [
    ("acme-health", "When should I arrive for my appointment?", ARRIVAL, [ARRIVAL], "15 minutes"),
    ("acme-health", "What should I bring to my appointment?", ARRIVAL, [ARRIVAL], "photo ID"),
    ("acme-health", "How much is the fee if I cancel my MRI late?", CANCEL, [CANCEL], "$100"),
    ("acme-health", "Can I walk in without an appointment?", common_pb2.INTENT_OTHER, [], "booked in advance"),
    ("acme-health", "When should I arrive for an MRI at Harbor Imaging Center?", ARRIVAL, [ARRIVAL],
     "45 minutes"),
    ("borealis-clinics", "What happens if I cancel late?", CANCEL, [CANCEL], "NOK 350"),
]


@pytest.mark.parametrize(("tenant", "question", "intent", "intents", "expected"), QUESTIONS)
def test_extractive_answers_on_the_sample_corpus_validate(auth, stack, generators, tenant, question, intent,
                                                          intents, expected):
    offered, generated, validation = ask(auth, stack, generators["extractive"], tenant, question, intent, intents)
    assert generated.claims, question
    assert any(expected in c.text for c in generated.claims), [c.text for c in generated.claims]
    assert validation.passed, [(c.claim_id, reasons(c), c.support_reason) for c in validation.claims]
    by_label = {o.label: o.passage.identity.passage_id for o in offered}
    for claim, checked in zip(generated.claims, validation.claims, strict=True):
        assert [c.passage_id for c in checked.citations] == [by_label[label] for label in claim.evidence_labels]
        assert "ignore" not in claim.text.lower() and "welcome" not in claim.text.lower()


def test_hostile_instruction_passage_is_offered_but_never_answers(auth, stack, generators):
    offered, generated, validation = ask(auth, stack, generators["extractive"], "acme-health",
                                         "Are walk-ins welcome at every clinic?", common_pb2.INTENT_OTHER, [])
    assert any("Ignore previous instructions" in o.passage.text for o in offered), "the hostile passage was offered"
    assert all("welcome" not in c.text.lower() for c in generated.claims)
    assert validation is None or validation.passed


@pytest.mark.parametrize(("fault", "reason"), [("invent_label", "CITATION_UNKNOWN"),
                                               ("drop_labels", "CITATION_GAP"),
                                               ("unsupported_addition", None)])
def test_injected_faults_are_caught_and_regeneration_recovers(auth, stack, generators, fault, reason):
    question = ("acme-health", "When should I arrive for my appointment?", ARRIVAL, [ARRIVAL])
    _, generated, validation = ask(auth, stack, generators[fault], *question)
    assert not validation.passed
    bad = [c for c in validation.claims if c.withheld]
    good = [c for c in validation.claims if not c.withheld]
    assert len(bad) == 1 and good, "only the faulty claim is withheld; the others stand"
    if reason:
        assert reasons(bad[0]) == [reason]
    else:
        assert bad[0].support == common_pb2.SUPPORT_VERDICT_UNSUPPORTED and "assessment" in bad[0].support_reason
        assert all(c.support == common_pb2.SUPPORT_VERDICT_SUPPORTED for c in good)
    feedback = [gen_pb.ClaimFeedback(claim_id=c.claim_id, reasons=[f.reason for f in c.findings], support=c.support,
                                     message=c.support_reason) for c in bad]
    _, regenerated, revalidated = ask(auth, stack, generators[fault], *question, attempt=2, feedback=feedback)
    assert regenerated.claims and revalidated.passed
    assert bad[0].claim_id not in [c.claim_id for c in regenerated.claims]
