"""Issue 17 §2 and §5 over real gRPC against the trace service: the edge validation layer of the
server kit (citetrace.kit.validation + field_rules.yaml) turns every malformed request the probe found
into INVALID_ARGUMENT with a reason, echoes only a bounded prefix, and stores nothing."""

from __future__ import annotations

import grpc
import pytest
from citetrace.kit.clients import error_info
from citetrace.kit.testing import service_metadata
from citetrace.kit.validation import rules, validate_request
from citetrace.trace.v1 import trace_service_pb2 as pb
from google.protobuf import descriptor_pool
from google.protobuf.timestamp_pb2 import Timestamp
from tracefixtures import TENANT, make_record

SERVICE = ("service",)


def expect_invalid(call, reason):
    with pytest.raises(grpc.RpcError) as caught:
        call()
    err = caught.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (err.code(), err.details()[:200])
    assert error_info(err).reason == reason
    return err


@pytest.mark.parametrize("created_after", [
    Timestamp(seconds=1_700_000_000, nanos=-1),        # negative nanos
    Timestamp(seconds=1_700_000_000, nanos=1_000_000_000),
    Timestamp(seconds=253_402_300_800 * 4),           # past year 9999: no datetime holds it
    Timestamp(seconds=-62_135_596_801 * 2),           # before year 1
])
def test_an_out_of_range_timestamp_is_invalid_timestamp_not_internal(sqlite_trace, metadata_for, created_after):
    _, stub, _ = sqlite_trace
    err = expect_invalid(lambda: stub.ListTraces(pb.ListTracesRequest(created_after=created_after), timeout=10,
                                                 metadata=metadata_for(TENANT, ("auditor",))), "INVALID_TIMESTAMP")
    assert error_info(err).metadata["field"] == "created_after"


def test_record_review_with_an_unknown_decision_is_refused_and_nothing_is_stored(sqlite_trace, metadata_for):
    _, stub, _ = sqlite_trace
    stub.RecordTrace(pb.RecordTraceRequest(record=make_record("t-edge-review")), timeout=10,
                     metadata=service_metadata(TENANT))
    reviewer = metadata_for(TENANT, ("reviewer",), subject="reviewer-9")
    err = expect_invalid(lambda: stub.RecordReview(pb.RecordReviewRequest(trace_id="t-edge-review", decision=99),
                                                   timeout=10, metadata=reviewer), "UNKNOWN_ENUM_VALUE")
    assert error_info(err).metadata["field"] == "decision"
    listed = stub.ListReviews(pb.ListReviewsRequest(trace_id="t-edge-review"), timeout=10,
                              metadata=metadata_for(TENANT, ("auditor",)))
    assert list(listed.reviews) == []
    got = stub.GetTrace(pb.GetTraceRequest(trace_id="t-edge-review"), timeout=10,
                        metadata=metadata_for(TENANT, ("auditor",)))
    assert list(got.reviews) == []


@pytest.mark.parametrize("days", [2_147_483_647, 36_501, -1])
def test_apply_retention_outside_its_documented_range_is_invalid_argument(sqlite_trace, metadata_for, days):
    _, stub, _ = sqlite_trace
    expect_invalid(lambda: stub.ApplyRetention(pb.ApplyRetentionRequest(retention_days=days), timeout=10,
                                               metadata=metadata_for(TENANT, ("auditor", "policy_admin"))),
                   "RETENTION_OUT_OF_RANGE")


@pytest.mark.parametrize("size", [10_000, 100_000, 1_000_000])
def test_a_huge_id_gives_its_reason_with_a_bounded_echo(sqlite_trace, metadata_for, size):
    """The probe saw RESOURCE_EXHAUSTED "Stream removed": the ID was echoed into the details past
    the client's 16 KiB metadata limit."""
    _, stub, _ = sqlite_trace
    huge = "x" * size
    err = expect_invalid(lambda: stub.GetTrace(pb.GetTraceRequest(trace_id=huge), timeout=10,
                                               metadata=metadata_for(TENANT, ("auditor",))), "INVALID_TRACE_ID")
    assert len(err.details()) < 400
    assert f"({size} characters)" in err.details()
    assert sum(len(v) for v in error_info(err).metadata.values()) < 300


def test_a_trailing_newline_does_not_slip_through_an_id_pattern(sqlite_trace, metadata_for):
    _, stub, _ = sqlite_trace
    for bad in ("probe-nl\n", "t\n"):
        expect_invalid(lambda bad=bad: stub.GetTrace(pb.GetTraceRequest(trace_id=bad), timeout=10,
                                                     metadata=metadata_for(TENANT, ("auditor",))), "INVALID_TRACE_ID")
    expect_invalid(lambda: stub.ListTraces(pb.ListTracesRequest(document_id="probe-nl\n"), timeout=10,
                                           metadata=metadata_for(TENANT, ("auditor",))), "INVALID_DOCUMENT_ID")
    rec = make_record("t-nl\n")
    expect_invalid(lambda: stub.RecordTrace(pb.RecordTraceRequest(record=rec), timeout=10,
                                            metadata=service_metadata(TENANT)), "INVALID_TRACE_ID")


@pytest.mark.parametrize("raw", [
    b"\x0a\x02\xff\xfe",                       # trace_id with invalid UTF-8
    b"\x7b" * 200 + b"\x7c" * 200,             # groups nested 200 deep
    b"\x0a\x05ab",                             # truncated
])
def test_an_undecodable_request_is_invalid_argument_and_the_service_keeps_serving(sqlite_trace, metadata_for, raw):
    runner, stub, _ = sqlite_trace
    with grpc.insecure_channel(runner.address) as channel:
        call = channel.unary_unary("/citetrace.trace.v1.TraceService/GetTrace",
                                   request_serializer=None, response_deserializer=pb.GetTraceResponse.FromString)
        expect_invalid(lambda: call(raw, timeout=10, metadata=metadata_for(TENANT, ("auditor",))),
                       "UNDECODABLE_REQUEST")
    # Still serving, and an undecodable request from an unauthenticated caller is UNAUTHENTICATED.
    stub.ListTraces(pb.ListTracesRequest(), timeout=10, metadata=metadata_for(TENANT, ("auditor",)))
    with grpc.insecure_channel(runner.address) as channel:
        call = channel.unary_unary("/citetrace.trace.v1.TraceService/GetTrace", request_serializer=None,
                                   response_deserializer=pb.GetTraceResponse.FromString)
        with pytest.raises(grpc.RpcError) as caught:
            call(raw, timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_a_nul_character_in_any_string_field_is_refused_at_the_edge():
    """PostgreSQL cannot store U+0000 in text: a NUL that reached it came back INTERNAL (the fuzz
    suite's GetAppointment regression). Every string field of every request refuses it, naming
    the field's path."""
    from citetrace.kit.errors import InvalidArgument

    for request, field in [(pb.GetTraceRequest(trace_id="t-1\x00"), "trace_id"),
                           (pb.RecordReviewRequest(trace_id="t-1", rubric_note="fine\x00"), "rubric_note"),
                           (pb.RecordTraceRequest(record=pb.TraceRecord(principal_ref="p\x00")), "record.principal_ref")]:
        with pytest.raises(InvalidArgument) as refused:
            validate_request(request)
        assert (refused.value.reason, refused.value.metadata["field"]) == ("NUL_CHARACTER", field)


def test_every_rule_names_a_real_field_and_empty_requests_pass():
    """The table can't drift from the protos silently: each entry is a field of its message, and
    every RPC's empty request keeps every rule (required-ness is the cores' decision)."""
    import importlib

    for module in ("retrieval.v1.retrieval_service", "trace.v1.trace_service", "orchestrator.v1.orchestrator_service",
                   "scheduler_gateway.v1.scheduler_gateway_service", "generation.v1.generation_service",
                   "citation_validator.v1.citation_validator_service"):
        mod = importlib.import_module(f"citetrace.{module}_pb2")
        for service in mod.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                validate_request(getattr(mod, method.input_type.name)())
    pool = descriptor_pool.Default()
    for message, field in rules().fields:
        assert field in pool.FindMessageTypeByName(message).fields_by_name, (message, field)


def test_entity_surfaces_and_principal_ref_only_for_readers_of_the_question(sqlite_trace, metadata_for):
    """Staff and policy_admin read the record without the question's fragments (a date of birth
    as a date entity) or who asked it; reviewer and auditor see them, as they see the question."""
    from citetrace.common.v1 import route_pb2 as r

    _, stub, _ = sqlite_trace
    rec = make_record("t-edge-surface", question="I was born 1970-03-04, when do I arrive?")
    rec.route.entities.append(r.Entity(kind="date", surface="1970-03-04", value="1970-03-04", confidence=1.0))
    stub.RecordTrace(pb.RecordTraceRequest(record=rec), timeout=10, metadata=service_metadata(TENANT))
    for roles in (("staff",), ("policy_admin",)):
        got = stub.GetTrace(pb.GetTraceRequest(trace_id="t-edge-surface"), timeout=10,
                            metadata=metadata_for(TENANT, roles)).record
        assert got.principal_ref == "" and got.query.raw == ""
        assert [(e.kind, e.surface, e.value) for e in got.route.entities] == [("date", "", "1970-03-04")]
    for roles in (("reviewer",), ("auditor",)):
        got = stub.GetTrace(pb.GetTraceRequest(trace_id="t-edge-surface"), timeout=10,
                            metadata=metadata_for(TENANT, roles)).record
        assert got.principal_ref == "subj-7f3a" and got.query.raw.startswith("I was born")
        assert [e.surface for e in got.route.entities] == ["1970-03-04"]
    ok = stub.VerifyChain(pb.VerifyChainRequest(), timeout=10, metadata=metadata_for(TENANT, ("auditor",)))
    assert ok.ok
