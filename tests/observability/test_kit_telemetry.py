"""The kit's telemetry rules: stage spans and histograms, no text in attributes, pseudonymous
tenants, per-service zero series, and scope violations counted by the server interceptor."""

from __future__ import annotations

import grpc
import pytest
from citetrace.generation.v1 import generation_service_pb2 as gen_pb2
from citetrace.generation.v1 import generation_service_pb2_grpc as gen_grpc
from citetrace.kit import metrics
from citetrace.kit.errors import PermissionDenied
from citetrace.kit.server import ServiceSpec
from citetrace.kit.telemetry import add_span_processor, current_trace_id, setup_tracing, stage, tenant_ref
from citetrace.kit.testing import serving
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY


@pytest.fixture(scope="module")
def spans():
    setup_tracing("citetrace-tests")
    exporter = InMemorySpanExporter()
    add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def sample(name: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_stage_opens_a_span_and_observes_the_histogram(spans):
    spans.clear()
    before = sample("citetrace_stage_duration_seconds_count", service="retrieval", stage="retrieval.fuse")
    with stage("retrieval", "retrieval.fuse", hits=3, reasons=("A", "B")) as span:
        trace_id = current_trace_id()
        assert span.is_recording()
    (finished,) = [s for s in spans.get_finished_spans() if s.name == "retrieval.fuse"]
    assert format(finished.context.trace_id, "032x") == trace_id
    assert finished.attributes["citetrace.hits"] == 3
    assert list(finished.attributes["citetrace.reasons"]) == ["A", "B"]
    after = sample("citetrace_stage_duration_seconds_count", service="retrieval", stage="retrieval.fuse")
    assert after == before + 1


def test_trace_ids_do_not_follow_the_random_modules_state(spans):
    # A trace ID names an evidence record: a process whose `random` is seeded (a library, Hypothesis)
    # must still get a new one per Ask, or the trace service refuses the second record.
    import random

    ids = []
    for _ in range(2):
        random.seed(0)
        with stage("orchestrator", "orchestrator.ask"):
            ids.append(current_trace_id())
    assert ids[0] and ids[0] != ids[1]


def test_stage_counts_the_cpu_of_its_thread_not_its_waiting(spans):
    import time

    def cpu(stage_name: str) -> float:
        return sample("citetrace_stage_cpu_seconds_total", service="retrieval", stage=stage_name)

    before_busy, before_idle = cpu("retrieval.embed"), cpu("retrieval.lexical")
    with stage("retrieval", "retrieval.embed"):
        end = time.thread_time() + 0.03
        while time.thread_time() < end:  # 30 ms of this thread's CPU
            pass
    with stage("retrieval", "retrieval.lexical"):
        time.sleep(0.05)  # waiting is wall time, not CPU
    assert cpu("retrieval.embed") - before_busy >= 0.03
    assert cpu("retrieval.lexical") - before_idle < 0.02


def test_stage_drops_text_attributes_and_pseudonymizes_the_tenant(spans):
    spans.clear()
    with stage("orchestrator", "orchestrator.route", question="Can I book cardiology?", text="passage",
               tenant="acme-health", part_kind="availability"):
        pass
    (finished,) = [s for s in spans.get_finished_spans() if s.name == "orchestrator.route"]
    attributes = dict(finished.attributes)
    assert "citetrace.question" not in attributes and "citetrace.text" not in attributes
    assert attributes["citetrace.tenant"] == tenant_ref("acme-health") != "acme-health"
    assert attributes["citetrace.part_kind"] == "availability"
    assert not any("cardiology" in str(v) for v in attributes.values())


def test_stage_histogram_buckets_resolve_1ms_to_10s():
    assert metrics.LATENCY_BUCKETS[0] == 0.001 and metrics.LATENCY_BUCKETS[-1] == 10.0
    assert 0.003 in metrics.LATENCY_BUCKETS and 0.0075 in metrics.LATENCY_BUCKETS


def test_record_citation_failure_feeds_digest_and_scope_counters():
    digest = sample("citetrace_digest_failures_total", service="citation_validator", kind="passage_span")
    scope = sample("citetrace_scope_violations_blocked_total", service="citation_validator")
    gap = sample("citetrace_citation_failures_total", reason="CITATION_GAP")
    metrics.record_citation_failure("SPAN_DIGEST_MISMATCH")
    metrics.record_citation_failure("SCOPE_VIOLATION")
    metrics.record_citation_failure("CITATION_GAP")
    assert sample("citetrace_digest_failures_total", service="citation_validator", kind="passage_span") == digest + 1
    assert sample("citetrace_scope_violations_blocked_total", service="citation_validator") == scope + 1
    assert sample("citetrace_citation_failures_total", reason="CITATION_GAP") == gap + 1
    with pytest.raises(ValueError, match="digest failure kind"):
        metrics.record_digest_failure("retrieval", "something_else")


class _ScopeRefusingGenerator(gen_grpc.GenerationServiceServicer):
    def Generate(self, request, context):  # noqa: N802 - gRPC method name
        raise PermissionDenied("SCOPE_VIOLATION", "passage outside the caller's tenant")


def test_server_counts_scope_violations_and_marks_build_info(auth, metadata_for):
    spec = ServiceSpec("generation", "citetrace.generation.v1.GenerationService", _ScopeRefusingGenerator(),
                       gen_grpc.add_GenerationServiceServicer_to_server)
    before = sample("citetrace_scope_violations_blocked_total", service="generation")
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            gen_grpc.GenerationServiceStub(channel).Generate(
                gen_pb2.GenerateRequest(), metadata=metadata_for("acme-health"), timeout=5)
        assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert sample("citetrace_scope_violations_blocked_total", service="generation") == before + 1
    assert sample("citetrace_build_info", service="generation", version=metrics.package_version()) == 1
    handled = sample("citetrace_grpc_server_handled_total", service="generation", method="Generate",
                     code="PERMISSION_DENIED")
    assert handled >= 1


def test_init_service_metrics_creates_zero_series_for_owned_counters():
    metrics.init_service_metrics("orchestrator")
    metrics.init_service_metrics("citation_validator")
    assert REGISTRY.get_sample_value("citetrace_answers_total", {"outcome": "ABSTAINED_NO_EVIDENCE"}) is not None
    assert REGISTRY.get_sample_value("citetrace_citation_failures_total", {"reason": "STALE_VERSION"}) is not None
    assert REGISTRY.get_sample_value("citetrace_trace_outbox_pending", {"service": "orchestrator"}) == 0


def test_container_healthcheck_follows_the_grpc_health_protocol(auth):
    import os
    import subprocess
    import sys

    spec = ServiceSpec("generation", "citetrace.generation.v1.GenerationService", _ScopeRefusingGenerator(),
                       gen_grpc.add_GenerationServiceServicer_to_server)

    def probe(address: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "citetrace.kit.healthcheck", address, "--timeout", "2"],
                              capture_output=True, text=True, timeout=30,
                              env={**os.environ, "CITETRACE_TLS_MODE": "plaintext"})  # as `serving` runs

    with serving(spec, auth, warm=False) as runner:
        cold = probe(runner.address)
        assert (cold.returncode, cold.stdout.strip()) == (1, "NOT_SERVING")
        runner.warm_up()
        warm = probe(runner.address)
        assert (warm.returncode, warm.stdout.strip()) == (0, "SERVING")
        address = runner.address
    gone = probe(address)
    assert gone.returncode == 1 and gone.stdout.strip() in ("UNAVAILABLE", "NOT_SERVING")


def test_kit_stage_table_matches_design_section_7():
    """The kit pre-creates the latency series of exactly the DESIGN §7 stages."""
    from observability.stages import DESIGN_STAGES

    assert {stage: service for service, stages in metrics.DESIGN_STAGES.items() for stage in stages} == {
        stage: service for stage, (service, _) in DESIGN_STAGES.items()}
    metrics.init_service_metrics("retrieval")
    assert REGISTRY.get_sample_value("citetrace_stage_duration_seconds_count",
                                     {"service": "retrieval", "stage": "retrieval.vector"}) is not None


def test_log_records_carry_the_trace_id(spans):
    import io
    import logging

    from citetrace.kit.telemetry import TraceContextFilter

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s trace=%(trace_id)s"))
    handler.addFilter(TraceContextFilter())
    logger = logging.getLogger("citetrace.test.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("outside")
        with stage("trace", "trace.record") as span:
            logger.info("inside")
            trace_id = format(span.get_span_context().trace_id, "032x")
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue().splitlines() == ["outside trace=-", f"inside trace={trace_id}"]
