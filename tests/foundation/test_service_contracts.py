"""Contract tests for every service over real gRPC, in-process on port 0: health, reflection,
INVALID_ARGUMENT with ErrorInfo, authentication, deadlines."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util

import grpc
import pytest
from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.citation_validator.v1 import citation_validator_service_pb2_grpc as cv_grpc
from citetrace.generation.v1 import generation_service_pb2 as gen_pb
from citetrace.generation.v1 import generation_service_pb2_grpc as gen_grpc
from citetrace.kit.clients import error_info
from citetrace.kit.stack import SERVICES
from citetrace.kit.testing import serving
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as orch_pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as orch_grpc
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as sched_pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as sched_grpc
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from citetrace.trace.v1 import trace_service_pb2_grpc as trace_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

# service -> (stub class, method name, a request that is invalid, the ErrorInfo reason expected)
INVALID_CALLS = {
    "retrieval": (ret_grpc.RetrievalServiceStub, "Search", ret_pb.SearchRequest(query="   ", k=5), "EMPTY_QUERY"),
    "scheduler_gateway": (
        sched_grpc.SchedulerGatewayServiceStub, "FindSlots", sched_pb.FindSlotsRequest(), "MISSING_SPECIALTY"),
    "generation": (gen_grpc.GenerationServiceStub, "Generate", gen_pb.GenerateRequest(question=""), "EMPTY_QUESTION"),
    "citation_validator": (cv_grpc.CitationValidatorServiceStub, "Validate", cv_pb.ValidateRequest(), "NO_CLAIMS"),
    "trace": (trace_grpc.TraceServiceStub, "GetTrace", trace_pb.GetTraceRequest(), "MISSING_TRACE_ID"),
    "orchestrator": (orch_grpc.OrchestratorServiceStub, "Ask", orch_pb.AskRequest(question=" "), "EMPTY_QUESTION"),
}


def build_spec(name: str, tmp_path):
    settings_mod = importlib.import_module(f"services.{name}.settings")
    fields = {f.name for f in dataclasses.fields(settings_mod.Settings)}
    overrides = {"port": 0, "metrics_port": -1}
    if "data_dir" in fields:
        overrides["data_dir"] = tmp_path
    settings = settings_mod.Settings(**overrides)
    # A service's assembly point: its bootstrap where it has one (issue 13), else its servicer module.
    assembly = "bootstrap" if importlib.util.find_spec(f"services.{name}.bootstrap") else "servicer"
    return importlib.import_module(f"services.{name}.{assembly}").build_spec(settings)


@pytest.fixture(params=[info.name for info in SERVICES])
def running(request, auth, tmp_path):
    name = request.param
    spec = build_spec(name, tmp_path)
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        yield name, spec, channel


def test_health_is_serving_after_warm_up(running):
    _, spec, channel = running
    stub = health_pb2_grpc.HealthStub(channel)
    for service in ("", spec.full_name):
        reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_service(running):
    _, spec, channel = running
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
    names = {svc.name for reply in replies for svc in reply.list_services_response.service}
    assert spec.full_name in names
    assert "grpc.health.v1.Health" in names


def test_invalid_input_is_invalid_argument_with_error_info(running, metadata_for):
    name, _, channel = running
    stub_cls, method, request, reason = INVALID_CALLS[name]
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub_cls(channel), method)(request, timeout=10, metadata=metadata_for("tenant-a"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    info = error_info(caught.value)
    assert info is not None and info.reason == reason
    assert info.domain == f"{name}.citetrace"


def test_missing_token_is_unauthenticated(running):
    name, _, channel = running
    stub_cls, method, request, _ = INVALID_CALLS[name]
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub_cls(channel), method)(request, timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert error_info(caught.value).reason == "TOKEN_MISSING"


def test_token_signed_with_another_key_is_unauthenticated(running):
    from citetrace.kit.testing import test_auth_settings, token_metadata

    name, _, channel = running
    stub_cls, method, request, _ = INVALID_CALLS[name]
    forged = token_metadata(test_auth_settings(), "tenant-a")
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub_cls(channel), method)(request, timeout=10, metadata=forged)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert error_info(caught.value).reason == "TOKEN_INVALID"


def test_deadline_exceeded_is_reported(running, metadata_for):
    name, _, channel = running
    stub_cls, method, request, _ = INVALID_CALLS[name]
    with pytest.raises(grpc.RpcError) as caught:
        getattr(stub_cls(channel), method)(request, timeout=-1.0, metadata=metadata_for("tenant-a"))
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
