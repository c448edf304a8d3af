"""The trace service's stage span `trace.record` (with the stage histogram) and the chain-failure
metric; no question or passage text in span attributes."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from citetrace.kit.telemetry import add_span_processor, setup_tracing
from citetrace.kit.testing import service_metadata
from citetrace.trace.v1 import trace_service_pb2 as pb
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY
from tracefixtures import MRI_RULE, TENANT, make_record


@pytest.fixture(scope="module")
def spans():
    setup_tracing("citetrace-tests")
    exporter = InMemorySpanExporter()
    add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_record_trace_opens_the_trace_record_stage(spans, sqlite_trace, metadata_for):
    _, stub, _ = sqlite_trace
    spans.clear()
    before = sample("citetrace_stage_duration_seconds_count", service="trace", stage="trace.record")
    rec = make_record("span-1")
    stub.RecordTrace(pb.RecordTraceRequest(record=rec), timeout=10, metadata=service_metadata(TENANT))
    stub.RecordTrace(pb.RecordTraceRequest(record=rec), timeout=10, metadata=service_metadata(TENANT))
    finished = [s for s in spans.get_finished_spans() if s.name == "trace.record"]
    assert [s.attributes["citetrace.created"] for s in finished] == [True, False]
    assert finished[0].attributes["citetrace.parts"] == 1
    text = " ".join(str(v) for s in finished for v in s.attributes.values())
    assert "MRI" not in text and MRI_RULE.text not in text and TENANT not in text
    after = sample("citetrace_stage_duration_seconds_count", service="trace", stage="trace.record")
    assert after == before + 2


def test_a_broken_chain_counts_a_digest_failure(sqlite_trace, metadata_for):
    _, stub, servicer = sqlite_trace
    stub.RecordTrace(pb.RecordTraceRequest(record=make_record("m-1")), timeout=10,
                     metadata=service_metadata(TENANT))
    before = sample("citetrace_digest_failures_total", service="trace", kind="trace_chain")
    auditor = metadata_for(TENANT, ("auditor",))
    assert stub.VerifyChain(pb.VerifyChainRequest(), timeout=10, metadata=auditor).ok
    assert sample("citetrace_digest_failures_total", service="trace", kind="trace_chain") == before
    with servicer.core.store.engine.begin() as conn:
        conn.exec_driver_sql("DROP TRIGGER trace_queries_redaction_only")
        conn.execute(sa.text("UPDATE trace_queries SET normalized = 'edited' WHERE trace_id = 'm-1'"))
    report = stub.VerifyChain(pb.VerifyChainRequest(), timeout=10, metadata=auditor)
    assert not report.ok and report.first_broken_trace_id == "m-1" and "digest" in report.detail
    assert sample("citetrace_digest_failures_total", service="trace", kind="trace_chain") == before + 1
