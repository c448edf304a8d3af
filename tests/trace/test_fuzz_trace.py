"""A first property-based fuzz suite over the trace service's RPCs (issue 17 §3), over real gRPC on
SQLite: requests generated from the proto descriptors (any field, any enum number, any Timestamp,
long and odd strings) and raw mutated bytes, with tokens of every role and invalid ones. Properties:
never INTERNAL/UNKNOWN, never a hang past the deadline, never a partial write (every table's row count
unchanged by a failed call), and the service still SERVING afterwards.

The budget is fixed: FUZZ_EXAMPLES (default 120) generated requests and as many byte strings;
Hypothesis keeps failing examples in its example database (.hypothesis/) and replays them first."""

from __future__ import annotations

import os
import sqlite3

import grpc
import pytest
from citetrace.kit.testing import token_metadata
from citetrace.trace.v1 import trace_service_pb2 as pb
from google.protobuf.descriptor import FieldDescriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tracefixtures import TENANT, make_record, trace_service

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "120"))
SERVICE = pb.DESCRIPTOR.services_by_name["TraceService"]
METHODS = list(SERVICE.methods)
ROLES = ("patient", "staff", "reviewer", "auditor", "policy_admin", "service")
FORBIDDEN = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DEADLINE_EXCEEDED}
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

_ODD_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "t-fuzz", "probe-nl\n", "x" * 20_000, "\u202e", "../../etc", "a" * 129, "0" * 64]),
)
_INT32 = st.one_of(st.sampled_from([0, 1, -1, 99, 2**31 - 1, -(2**31)]), st.integers(-(2**31), 2**31 - 1))
_INT64 = st.one_of(st.sampled_from([0, -1, 1_700_000_000, 2**63 - 1, -(2**63)]), st.integers(-(2**63), 2**63 - 1))


def _value(field: FieldDescriptor, depth: int):
    t = field.type
    if t == FieldDescriptor.TYPE_MESSAGE:
        return _message(field.message_type, depth + 1)
    if t == FieldDescriptor.TYPE_ENUM:
        return st.one_of(st.sampled_from([v.number for v in field.enum_type.values]), _INT32)
    if t == FieldDescriptor.TYPE_STRING:
        return _ODD_TEXT
    if t == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=64)
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=True, width=32 if t == FieldDescriptor.TYPE_FLOAT else 64)
    if t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
        return _INT64
    if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return st.integers(0, 2**64 - 1)
    if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return st.integers(0, 2**32 - 1)
    return _INT32


def _message(desc, depth: int = 0):
    """Serialized-ready dicts of field -> value for `desc`, a few levels deep."""
    if desc.full_name == "google.protobuf.Timestamp":
        return st.fixed_dictionaries({}, optional={"seconds": _INT64,
                                                   "nanos": _INT32})
    if depth > 3:
        return st.just({})
    optional = {}
    for f in desc.fields:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            continue
        v = _value(f, depth)
        optional[f.name] = st.lists(v, max_size=3) if f.is_repeated else v
    return st.fixed_dictionaries({}, optional=optional)


def _build(cls, values: dict):
    msg = cls()
    _fill(msg, values)
    return msg


def _fill(msg, values: dict) -> None:
    for name, value in values.items():
        field = msg.DESCRIPTOR.fields_by_name[name]
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.is_repeated:
                for item in value:
                    _fill(getattr(msg, name).add(), item)
            else:
                getattr(msg, name).SetInParent()
                _fill(getattr(msg, name), value)
        elif field.is_repeated:
            getattr(msg, name).extend(value)
        else:
            setattr(msg, name, value)


def _metadata(auth, who):
    if who == "none":
        return ()
    if who == "garbage":
        return (("authorization", "Bearer not.a.token"),)
    return token_metadata(auth, TENANT, (who,), subject="fuzz-user")


_WHO = st.sampled_from((*ROLES, "none", "garbage"))
_CALLS = st.sampled_from(METHODS).flatmap(
    lambda m: st.tuples(st.just(m), _message(m.input_type), _WHO))


@pytest.fixture(scope="module")
def world(auth, tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz-trace")
    url = f"sqlite:///{data / 'trace.db'}"
    with trace_service(auth, data, url) as (runner, stub, _):
        stub.RecordTrace(pb.RecordTraceRequest(record=make_record("t-fuzz")), timeout=10,
                         metadata=token_metadata(auth, TENANT, ("service",)))
        with grpc.insecure_channel(runner.address) as channel:
            yield {"channel": channel, "db": data / "trace.db", "auth": auth, "address": runner.address}


def _counts(db) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}


def _call(world, method, request_bytes: bytes, metadata):
    rpc = world["channel"].unary_unary(f"/{SERVICE.full_name}/{method.name}", request_serializer=None,
                                       response_deserializer=None)
    return rpc(request_bytes, timeout=10, metadata=metadata)


def _check(world, method, raw: bytes, who) -> None:
    before = _counts(world["db"])
    try:
        _call(world, method, raw, _metadata(world["auth"], who))
    except grpc.RpcError as err:
        assert err.code() not in FORBIDDEN, (method.name, who, err.code(), err.details()[:300])
        assert _counts(world["db"]) == before, f"{method.name} failed with {err.code()} but wrote rows"


@FUZZ
@given(call=_CALLS)
def test_generated_requests_never_internal_never_partial(world, call):
    method, values, who = call
    request = _build(getattr(pb, method.input_type.name), values)
    _check(world, method, request.SerializeToString(), who)


@FUZZ
@given(method=st.sampled_from(METHODS), raw=st.binary(max_size=256), who=_WHO)
def test_mutated_bytes_never_internal_never_partial(world, method, raw, who):
    _check(world, method, raw, who)


def test_still_serving_after_the_fuzzing(world):
    # Runs last in this module (pytest keeps definition order).
    reply = health_pb2_grpc.HealthStub(world["channel"]).Check(
        health_pb2.HealthCheckRequest(service=SERVICE.full_name), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
