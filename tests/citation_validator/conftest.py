"""A REAL retrieval service (in-process, port 0, SQLite store) holding a small, visibly synthetic
corpus, and a citation validator whose reload path calls it over gRPC with the caller's token."""

from __future__ import annotations

import contextlib
import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest
from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.citation_validator.v1 import citation_validator_service_pb2_grpc as cv_grpc
from citetrace.common.v1 import common_pb2
from citetrace.kit.testing import serving, token_metadata
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from google.protobuf import timestamp_pb2

from services.citation_validator.bootstrap import build_spec as build_validator
from services.citation_validator.settings import Settings as ValidatorSettings
from services.retrieval.bootstrap import build_spec as build_retrieval
from services.retrieval.settings import Settings as RetrievalSettings

T2025 = datetime(2025, 1, 1, tzinfo=UTC)
ACME, BOREALIS = "acme-health", "borealis-clinics"

# Every text below is synthetic test material of the fictional sample world.
DOCS = {
    "val-arrival": dict(
        tenant=ACME, source_class="scheduling_policy", title="Arrival at Northside Family Clinic (synthetic)",
        text="# Arrival\n\nPlease arrive 15 minutes before your appointment time. "
             "Check in at the front desk with a photo ID.\n\n"
             "MRI patients must arrive 30 minutes early to complete a safety questionnaire. However, patients "
             "who completed the questionnaire online may arrive 15 minutes early.\n"),
    "val-cancel": dict(
        tenant=ACME, source_class="cancellation_policy", title="Cancellation policy (synthetic)",
        text="# Cancellation\n\nYou can cancel or reschedule an appointment up to 24 hours before it starts at no "
             "charge. A late cancellation fee of $25 applies to cancellations made less than 24 hours ahead, "
             "except when the clinic cancels the appointment.\n"),
    "val-dr-berg": dict(
        tenant=ACME, source_class="provider_profile", title="Dr. Berg (synthetic)",
        text="# Dr. Berg\n\nDr. Berg (synthetic) is a cardiologist at Northside Family Clinic. "
             "Dr. Berg charges a late cancellation fee of $40 for missed visits.\n"),
    "val-module": dict(
        tenant=ACME, source_class="handbook", title="Patient orientation handbook (synthetic)",
        text="# Orientation\n\nThis module begins with an introductory lesson.\n"),
    "val-staff-only": dict(
        tenant=ACME, source_class="handbook", title="Staff handbook (synthetic)", roles=("staff",),
        text="# Staff\n\nStaff must badge in at the service entrance before 7:30 am.\n"),
    "val-fjord": dict(
        tenant=BOREALIS, source_class="scheduling_policy", title="Fjordview Clinic arrival (synthetic)",
        text="# Arrival\n\nPlease arrive 10 minutes before your appointment at Fjordview Clinic (synthetic).\n"),
}


def ts(value: datetime) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(value)
    return out


@dataclasses.dataclass
class World:
    auth: object
    retrieval: ret_grpc.RetrievalServiceStub
    retrieval_address: str
    passages: dict[str, common_pb2.Passage]  # document_id -> its first passage, as GetPassages returns it

    def md(self, tenant=ACME, roles=("patient",)):
        return token_metadata(self.auth, tenant, roles)

    def ingest(self, document_id: str, text: str, *, tenant=ACME, source_class="scheduling_policy",
               title="A synthetic document", roles=("patient", "staff"), valid_from=T2025):
        request = ret_pb.IngestDocumentRequest(
            document=common_pb2.Document(tenant_id=tenant, document_id=document_id, source_class=source_class,
                                         title=title),
            text=text, status=common_pb2.VERSION_STATUS_APPROVED, valid_from=ts(valid_from), roles=list(roles),
            intents=[common_pb2.INTENT_ARRIVAL_PREPARATION], locale="en")
        return self.retrieval.IngestDocument(request, timeout=60, metadata=self.md(tenant, ("policy_admin",)))

    def load(self, passage_id: str, tenant=ACME) -> common_pb2.Passage:
        reply = self.retrieval.GetPassages(ret_pb.GetPassagesRequest(passage_ids=[passage_id]), timeout=10,
                                           metadata=self.md(tenant, ("policy_admin",)))
        return reply.passages[0]

    def offered(self, *document_ids: str, labels=None) -> list[common_pb2.LabelledPassage]:
        labels = labels or [f"S{i}" for i in range(1, len(document_ids) + 1)]
        out = []
        for label, doc in zip(labels, document_ids, strict=True):
            item = common_pb2.LabelledPassage(label=label)
            item.passage.CopyFrom(self.passages[doc])
            out.append(item)
        return out


@contextlib.contextmanager
def retrieval_service(auth, data_dir: Path):
    spec = build_retrieval(RetrievalSettings(port=0, metrics_port=-1, data_dir=data_dir))
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        yield runner, ret_grpc.RetrievalServiceStub(channel)


@pytest.fixture(scope="session")
def world(auth, tmp_path_factory):
    with retrieval_service(auth, tmp_path_factory.mktemp("validator-retrieval")) as (runner, stub):
        w = World(auth, stub, runner.address, {})
        for document_id, spec in DOCS.items():
            spec = dict(spec)
            reply = w.ingest(document_id, spec.pop("text"), tenant=spec.pop("tenant"), **spec)
            w.passages[document_id] = w.load(reply.passages[0].passage_id, reply.version.document.tenant_id)
        yield w


@contextlib.contextmanager
def validator_service(auth, retrieval_target: str, **overrides):
    settings = ValidatorSettings(port=0, metrics_port=-1, retrieval_target=retrieval_target, **overrides)
    with serving(build_validator(settings), auth) as runner, grpc.insecure_channel(runner.address) as channel:
        yield cv_grpc.CitationValidatorServiceStub(channel)


@pytest.fixture(scope="session")
def validator(auth, world):
    with validator_service(auth, world.retrieval_address) as stub:
        yield stub


@pytest.fixture
def validate(validator, world):
    """validate(claims, offered, tenant=..., roles=..., as_of=...) -> ValidateResponse."""

    def call(claims, offered, *, tenant=ACME, roles=("patient",), as_of=None, stub=None):
        request = cv_pb.ValidateRequest(claims=claims, offered=offered,
                                        intent=common_pb2.INTENT_ARRIVAL_PREPARATION)
        if as_of is not None:
            request.as_of.CopyFrom(ts(as_of))
        return (stub or validator).Validate(request, timeout=15, metadata=world.md(tenant, roles))

    return call


def claim(claim_id: str, text: str, *labels: str, claim_type=common_pb2.CLAIM_TYPE_ARRIVAL_RULE) -> common_pb2.Claim:
    return common_pb2.Claim(claim_id=claim_id, text=text, evidence_labels=list(labels), claim_type=claim_type)


def reasons(validation) -> list[str]:
    return [common_pb2.FailureReason.Name(f.reason).removeprefix("FAILURE_REASON_") for f in validation.findings]
