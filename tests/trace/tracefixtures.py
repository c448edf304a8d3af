"""Synthetic trace records for the trace tests (visibly synthetic sample-world IDs)."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import tempfile
from pathlib import Path

import grpc
from citetrace.common.v1 import common_pb2 as c
from citetrace.common.v1 import route_pb2 as r
from citetrace.kit.testing import serving
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc
from google.protobuf import timestamp_pb2

from services.trace.bootstrap import build_spec
from services.trace.settings import Settings

TENANT = "acme-health"
OTHER_TENANT = "borealis-clinics"


def ts(value: dt.datetime) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(value)
    return out


def passage(doc: str, version: str, start: int, end: int, text: str, anchor: str = "Arrival > Imaging",
            tenant: str = TENANT) -> c.Passage:
    pid = hashlib.sha256(f"{tenant}:{doc}:{version}:{start}:{end}".encode()).hexdigest()
    return c.Passage(
        identity=c.PassageIdentity(
            passage_id=pid, tenant_id=tenant, document_id=doc, version_id=version, start=start, end=end,
            content_sha256=hashlib.sha256(text.encode()).hexdigest(), source_anchor=anchor,
            source_class="preparation_instructions", extraction_version="chunker-1"),
        text=text, heading_context=anchor, title=f"{doc} (synthetic)", locale="en")


def hit(p: c.Passage, rank: int, label: str = "") -> ret.SearchHit:
    return ret.SearchHit(label=label or f"S{rank}", passage=p, lexical_score=10.0 / rank, lexical_rank=rank,
                         vector_score=1.0 / rank, vector_rank=rank, fused_score=2.0 / (60 + rank), fused_rank=rank)


def citation(label: str, p: c.Passage) -> c.Citation:
    i = p.identity
    return c.Citation(label=label, passage_id=i.passage_id, document_id=i.document_id, version_id=i.version_id,
                      start=i.start, end=i.end, content_sha256=i.content_sha256, source_anchor=i.source_anchor,
                      source_class=i.source_class, title=p.title,
                      link=f"/documents/{i.document_id}/versions/{i.version_id}#chars={i.start}-{i.end}")


MRI_RULE = passage("acme-imaging-prep", "v" + "1" * 63, 0, 58,
                   "Arrive 30 minutes before an MRI appointment at Harbor Imaging.")
MRI_OTHER = passage("acme-imaging-prep", "v" + "1" * 63, 58, 120,
                    "Remove all metal objects before the scan.", anchor="Arrival > Metal")
CANCEL_RULE = passage("acme-cancellation", "v" + "2" * 63, 0, 60,
                      "Cancel at least 24 hours ahead to avoid a fee.", anchor="Cancellation")


def make_record(trace_id: str, *, tenant: str = TENANT, question: str = "When should I arrive for my MRI?",
                outcome: int = c.PART_OUTCOME_ANSWERED, created_at: dt.datetime | None = None,
                cited=(MRI_RULE,), retrieved=(MRI_RULE, MRI_OTHER), filter_roles=("patient",),
                verdict: int = c.SUPPORT_VERDICT_SUPPORTED, reasons=(), principal_roles=("patient",)) -> pb.TraceRecord:
    from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv
    from citetrace.generation.v1 import generation_service_pb2 as gen

    created_at = created_at or dt.datetime.now(dt.UTC).replace(tzinfo=None)
    hits = [hit(p, i + 1) for i, p in enumerate(retrieved)]
    label_of = {h.passage.identity.passage_id: h.label for h in hits}
    citations = [citation(label_of.get(p.identity.passage_id, "S9"), p) for p in cited]
    claim = c.Claim(claim_id="c1", text="Arrive 30 minutes early.", evidence_labels=[x.label for x in citations],
                    claim_type=c.CLAIM_TYPE_ARRIVAL_RULE)
    part = pb.PartRecord(
        part_id="p1", kind=r.PART_KIND_ARRIVAL_PREPARATION, intent=c.INTENT_ARRIVAL_PREPARATION,
        retrieval=pb.RetrievalRecord(
            settings=ret.RetrievalSettings(
                backend="embedded", index_generation="gen-1", k=len(hits), rrf_k=60, lexical_weight=1.0,
                vector_weight=1.0, filters=ret.AppliedFilters(tenant_id=tenant, roles=list(filter_roles),
                                                              status=c.VERSION_STATUS_APPROVED)),
            retrieved=hits),
        generation=pb.GenerationRecord(
            generator=gen.GeneratorInfo(backend="extractive", model_id="extractive-1", prompt_version="p1",
                                        settings={"temperature": "0", "max_tokens": "200"}),
            passages_offered=len(hits), chars_offered=sum(len(h.passage.text) for h in hits),
            labels_offered=[h.label for h in hits], attempts=1),
        claims=[pb.ClaimRecord(claim=claim, validation=cv.ClaimValidation(
            claim_id="c1", support=verdict, support_score=0.9, support_reason="coverage 1.0",
            citations=citations), attempt=1, shown=verdict == c.SUPPORT_VERDICT_SUPPORTED)],
        citations=citations, reasons=list(reasons), outcome=outcome,
        next_action=c.NEXT_ACTION_NONE, answer_text="Arrive 30 minutes early [S1].", source_policy_version="sp-1")
    return pb.TraceRecord(
        trace_id=trace_id, tenant_id=tenant, created_at=ts(created_at), principal_ref="subj-7f3a",
        principal_roles=list(principal_roles), query=pb.QueryText(raw=question, normalized=question.lower()),
        as_of=ts(created_at),
        route=r.RouteDecision(in_scope=True, scope_reason="rule:appointment", intents=[c.INTENT_ARRIVAL_PREPARATION],
                              parts=[r.RoutedPart(part_id="p1", kind=r.PART_KIND_ARRIVAL_PREPARATION,
                                                  intent=c.INTENT_ARRIVAL_PREPARATION)],
                              router_version="router-1"),
        parts=[part], timings=[c.StageTiming(service="retrieval", stage="retrieval.search", duration_ms=4.2)],
        corpus=pb.CorpusSnapshot(backend="embedded", index_generation="gen-1",
                                 version_ids=sorted({p.identity.version_id for p in retrieved})),
        outcome=outcome, source_policy_version="sp-1")


@contextlib.contextmanager
def trace_service(auth, data_dir, database_url=None, **settings):
    """A trace service; without retrieval_target it reads no passage text back (and never calls
    whatever listens on the default retrieval port)."""
    settings.setdefault("retrieval_target", "")
    spec = build_spec(Settings(port=0, metrics_port=-1, data_dir=data_dir, database_url=database_url, **settings))
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        yield runner, pb_grpc.TraceServiceStub(channel), spec.servicer


def core_on(store, sealer=None, **settings):
    """The trace core the bootstrap builds, on an open `store` (no passage read-back); `sealer`
    replaces the signing key the settings name."""
    from services.trace import bootstrap

    settings.setdefault("retrieval_target", "")
    # The signing key and the checkpoint directory live outside the database: a fresh directory.
    settings.setdefault("data_dir", Path(tempfile.mkdtemp(prefix="citetrace-trace-")))
    return bootstrap.build(Settings(port=0, metrics_port=-1, **settings), store=store, sealer=sealer).core
