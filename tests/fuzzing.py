"""The property-based fuzz suite of the RPC edges (issue 17 §3), shared by every service's fuzz test
(tests/<service>/test_fuzz_<service>.py). Generic over the proto descriptors: requests generated from
the request message's descriptor (any field, any enum number, any Timestamp, long and odd strings,
maps, a few levels deep), valid seed requests with one field (at the top or at any depth) replaced
by a generated value, seed bytes flipped, cut or extended, and raw bytes; each sent over real gRPC
with a token of every role, a token of another tenant, an expired one, a garbage one or none.

A service's test builds a `World` (its running service on real gRPC, its stores' row counter, its
valid seed requests) and calls `check` for each example. Properties checked per call:
- never INTERNAL or UNKNOWN, never DEADLINE_EXCEEDED (a hang past the call's deadline);
- an INVALID_ARGUMENT carries an ErrorInfo reason and names the field (ErrorInfo metadata "field"),
  except an undecodable request, which has no field; the message stays bounded (the error channel);
- a failed call leaves every row count of the service's stores unchanged (nothing half-stored);
and `assert_serving` checks the health service says SERVING afterwards.

Budget: FUZZ_EXAMPLES examples per property (default 25: a few seconds per service); Hypothesis keeps
failing examples in its local example database (.hypothesis/) and replays them first. Every failure the
suite found is kept as a named regression case in the service's fuzz test (REGRESSIONS), so a fresh
clone (CI) replays them too."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import grpc
from citetrace.kit.clients import error_info
from citetrace.kit.testing import token_metadata
from citetrace.vocab import ROLES
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
FORBIDDEN = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DEADLINE_EXCEEDED}
# An error message longer than this is not "a bounded prefix" of anything (the client's metadata
# limit is 16 KB; the kit bounds messages far below it).
MAX_DETAILS_CHARS = 2048
INVALID_TOKENS = ("none", "garbage", "expired", "other-tenant")
# Three in four calls carry a valid token of some role, so most reach past authentication.
WHO = (*ROLES, *ROLES, *INVALID_TOKENS)
OTHER_TENANT = "fuzz-other-tenant"


def fuzz_settings(examples: int = EXAMPLES):
    # No "explain" phase: it re-parses this module's source, which trips a CPython 3.11 AST bug
    # ("AST constructor recursion depth mismatch") and hides the real failure.
    return settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[p for p in Phase if p != Phase.explain])


# -- values from descriptors ------------------------------------------------------------------------

ODD_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "fuzz", "probe-nl\n", "x" * 20_000, "\u202e", "../../etc", "a" * 129, "0" * 64,
                     "en-US", "e" * 5000, "%00", "\x00", "Robert'); DROP TABLE x;--"]),
)
INT32 = st.one_of(st.sampled_from([0, 1, -1, 99, 2**31 - 1, -(2**31)]), st.integers(-(2**31), 2**31 - 1))
INT64 = st.one_of(st.sampled_from([0, -1, 1_700_000_000, 2**63 - 1, -(2**63)]), st.integers(-(2**63), 2**63 - 1))
MAX_DEPTH = 3


def _map_entry(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def value_of(field: FieldDescriptor, depth: int = 0):
    """A strategy of one (non-repeated) value of `field`."""
    t = field.type
    if t == FieldDescriptor.TYPE_MESSAGE:
        return message_values(field.message_type, depth + 1)
    if t == FieldDescriptor.TYPE_ENUM:
        return st.one_of(st.sampled_from([v.number for v in field.enum_type.values]), INT32)
    if t == FieldDescriptor.TYPE_STRING:
        return ODD_TEXT
    if t == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=64)
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=True, width=32 if t == FieldDescriptor.TYPE_FLOAT else 64)
    if t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
        return INT64
    if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return st.integers(0, 2**64 - 1)
    if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return st.integers(0, 2**32 - 1)
    return INT32


def field_values(field: FieldDescriptor, depth: int = 0):
    """A strategy of what `field` can hold: a value, a short list, or a small map."""
    if _map_entry(field):
        key, value = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
        return st.dictionaries(value_of(key, depth), value_of(value, depth), max_size=3)
    if field.is_repeated:
        return st.lists(value_of(field, depth), max_size=3)
    return value_of(field, depth)


def message_values(desc: Descriptor, depth: int = 0):
    """A strategy of dicts (field name -> value) of a message `desc`, a few levels deep."""
    if desc.full_name == "google.protobuf.Timestamp":
        return st.fixed_dictionaries({}, optional={"seconds": INT64, "nanos": INT32})
    if depth > MAX_DEPTH:
        return st.just({})
    return st.fixed_dictionaries({}, optional={f.name: field_values(f, depth) for f in desc.fields})


def values_of(msg: Message) -> dict:
    """The dict form (as message_values makes) of a message: what a mutation starts from."""
    out: dict = {}
    for field, value in msg.ListFields():
        if _map_entry(field):
            vfield = field.message_type.fields_by_name["value"]
            out[field.name] = {k: values_of(v) if vfield.message_type else v for k, v in value.items()}
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            out[field.name] = [values_of(v) for v in value] if field.is_repeated else values_of(value)
        else:
            out[field.name] = list(value) if field.is_repeated else value
    return out


def build(desc: Descriptor, values: Mapping) -> Message:
    msg = message_factory.GetMessageClass(desc)()
    _fill(msg, values)
    return msg


def _fill(msg: Message, values: Mapping) -> None:
    for name, value in values.items():
        field = msg.DESCRIPTOR.fields_by_name[name]
        target = getattr(msg, name) if (field.is_repeated or field.message_type is not None) else None
        if _map_entry(field):
            vfield = field.message_type.fields_by_name["value"]
            for k, v in value.items():
                if vfield.message_type is not None:
                    _fill(target[k], v)
                else:
                    target[k] = v
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.is_repeated:
                for item in value:
                    _fill(target.add(), item)
            else:
                target.SetInParent()
                _fill(target, value)
        elif field.is_repeated:
            target.extend(value)
        else:
            setattr(msg, name, value)


def _mutate_one_field(desc: Descriptor, seed: dict):
    """The seed with one top-level field replaced by a generated value."""
    return st.sampled_from(list(desc.fields)).flatmap(
        lambda f: field_values(f).map(lambda v, f=f: {**seed, f.name: v}))


def _paths(desc: Descriptor, values: dict, prefix: tuple = ()) -> list[tuple[tuple, FieldDescriptor]]:
    """Every field the seed could have at any depth, by path (field names and list indexes): the
    fields it sets and the ones it leaves empty inside the messages it sets."""
    out = []
    for f in desc.fields:
        out.append(((*prefix, f.name), f))
        value = values.get(f.name)
        if f.type != FieldDescriptor.TYPE_MESSAGE or value is None or _map_entry(f):
            continue
        if f.is_repeated:
            for i, item in enumerate(value):
                out.extend(_paths(f.message_type, item, (*prefix, f.name, i)))
        else:
            out.extend(_paths(f.message_type, value, (*prefix, f.name)))
    return out


def _replaced(values, path: tuple, new):
    """A copy of nested `values` with the value at `path` replaced."""
    head, *rest = path
    copy = list(values) if isinstance(values, list) else dict(values)
    copy[head] = new if not rest else _replaced(values[head], tuple(rest), new)
    return copy


def _mutate_deep(desc: Descriptor, seed: dict):
    """The seed with one field at any depth replaced (the rest stays valid, so the request gets past
    the checks of its other fields and reaches deeper code)."""
    return st.sampled_from(_paths(desc, seed)).flatmap(
        lambda pf: field_values(pf[1]).map(lambda v, pf=pf: _replaced(seed, pf[0], v)))


def _mutate_bytes(raw: bytes):
    """The seed's bytes with one byte changed, cut short, or with junk appended."""
    if not raw:
        return st.binary(max_size=64)
    at = st.integers(0, len(raw) - 1)
    return st.one_of(
        st.tuples(at, st.integers(0, 255)).map(lambda t: raw[:t[0]] + bytes([t[1]]) + raw[t[0] + 1:]),
        at.map(lambda i: raw[:i]),
        st.binary(min_size=1, max_size=32).map(lambda junk: raw + junk),
    )


# -- the world a service's fuzz test runs against ----------------------------------------------------

@dataclasses.dataclass
class World:
    """One running service: its channel, contract, tenant, the stores' row counter and a valid
    request per RPC (`seeds`) for the mutations."""

    channel: grpc.Channel
    service: ServiceDescriptor
    auth: object
    tenant: str
    counts: Callable[[], dict[str, int]]
    seeds: dict[str, Message] = dataclasses.field(default_factory=dict)
    locations: tuple[str, ...] = ()
    patient_ref: str = ""
    # Generous: a hang is what this catches, not a slow call on a loaded CI machine.
    timeout: float = 20.0

    def _repr_pretty_(self, p, cycle) -> None:  # Hypothesis prints a failing example's arguments
        p.text(f"World({self.service.full_name})")

    @property
    def methods(self) -> list[MethodDescriptor]:
        return list(self.service.methods)

    def method(self, name: str) -> MethodDescriptor:
        return self.service.methods_by_name[name]

    def metadata(self, who: str):
        if who == "none":
            return ()
        if who == "garbage":
            return (("authorization", "Bearer not.a.token"),)
        if who == "expired":
            from citetrace.kit.auth import bearer_metadata, mint_token

            return bearer_metadata(mint_token(self.auth, tenant_id=self.tenant, subject="fuzz-user",
                                              roles=("staff",), ttl_seconds=60, now=time.time() - 7200))
        tenant, roles = (OTHER_TENANT, ("staff",)) if who == "other-tenant" else (self.tenant, (who,))
        return token_metadata(self.auth, tenant, roles, self.locations, subject="fuzz-user",
                              patient_ref=self.patient_ref if who == "patient" else "")


def generated_calls(world: World):
    """(method, request bytes, who): requests generated from the descriptors."""
    return st.sampled_from(world.methods).flatmap(lambda m: st.tuples(
        st.just(m), message_values(m.input_type).map(lambda v, m=m: build(m.input_type, v).SerializeToString()),
        st.sampled_from(WHO)))


def mutated_calls(world: World):
    """(method, request bytes, who): a valid seed request with one field replaced, or its bytes
    mutated. Methods without a seed get generated requests."""
    def of(m: MethodDescriptor):
        seed = world.seeds.get(m.name)
        if seed is None:
            return message_values(m.input_type).map(lambda v: build(m.input_type, v).SerializeToString())
        values = values_of(seed)
        return st.one_of(
            _mutate_one_field(m.input_type, values).map(lambda v: build(m.input_type, v).SerializeToString()),
            _mutate_deep(m.input_type, values).map(lambda v: build(m.input_type, v).SerializeToString()),
            _mutate_bytes(seed.SerializeToString()))

    return st.sampled_from(world.methods).flatmap(
        lambda m: st.tuples(st.just(m), of(m), st.sampled_from(WHO)))


def raw_calls(world: World):
    return st.tuples(st.sampled_from(world.methods), st.binary(max_size=256), st.sampled_from(WHO))


def call(world: World, method: MethodDescriptor, raw: bytes, who: str):
    rpc = world.channel.unary_unary(f"/{world.service.full_name}/{method.name}", request_serializer=None,
                                    response_deserializer=None)
    return rpc(raw, timeout=world.timeout, metadata=world.metadata(who))


def check(world: World, method: MethodDescriptor, raw: bytes, who: str) -> grpc.StatusCode:
    """One call and its properties; returns its status code (OK when it succeeded). With
    FUZZ_SURVEY=<file> a broken property is appended to that file instead of failing the test, so
    one run lists every kind of failure (a developer's tool; CI never sets it)."""
    survey = os.environ.get("FUZZ_SURVEY")
    if not survey:
        return _check(world, method, raw, who)
    try:
        return _check(world, method, raw, who)
    except AssertionError as broken:
        with open(survey, "a", encoding="utf-8") as out:
            out.write(repr(broken.args)[:600] + "\n")
        return grpc.StatusCode.UNKNOWN


def _check(world: World, method: MethodDescriptor, raw: bytes, who: str) -> grpc.StatusCode:
    before = world.counts()
    try:
        call(world, method, raw, who)
    except grpc.RpcError as err:
        code, details = err.code(), err.details() or ""
        # The request's hex (bounded) is what a Regression(method, bytes.fromhex(...), who) needs.
        where = (method.name, who, code, details[:300], raw[:4000].hex())
        assert code not in FORBIDDEN, where
        assert len(details) <= MAX_DETAILS_CHARS, where
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            info = error_info(err)
            assert info is not None and info.reason, where
            assert info.reason == "UNDECODABLE_REQUEST" or info.metadata.get("field"), (*where, info.reason)
        after = world.counts()
        changed = {t: (before.get(t, 0), after.get(t, 0)) for t in before.keys() | after.keys()
                   if before.get(t, 0) != after.get(t, 0)}
        assert not changed, (*where, f"wrote rows although it failed: {changed}")
        return code
    return grpc.StatusCode.OK


def assert_serving(world: World) -> None:
    reply = health_pb2_grpc.HealthStub(world.channel).Check(
        health_pb2.HealthCheckRequest(service=world.service.full_name), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


# -- row counters ------------------------------------------------------------------------------------

def sqlite_counts(*paths: Path, skip: tuple[str, ...] = ()) -> Callable[[], dict[str, int]]:
    """Row counts of every table of the SQLite files at `paths` (files not there yet count as empty)."""
    def counts() -> dict[str, int]:
        out: dict[str, int] = {}
        for path in paths:
            if not Path(path).exists():
                continue
            with sqlite3.connect(path) as conn:
                # sqlite_sequence and the like are SQLite's bookkeeping, not the service's rows.
                tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                                     "AND name NOT LIKE 'sqlite_%'")]
                for t in tables:
                    if t not in skip:
                        out[f"{Path(path).name}:{t}"] = conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]
        return out

    return counts


def sql_counts(url: str, skip: tuple[str, ...] = ()) -> Callable[[], dict[str, int]]:
    """Row counts of every table of the database at a SQLAlchemy `url` (PostgreSQL worlds)."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)

    def counts() -> dict[str, int]:
        with engine.connect() as conn:
            tables = [t for t in sa.inspect(conn).get_table_names() if t not in skip]
            return {t: conn.execute(sa.text(f'SELECT COUNT(*) FROM "{t}"')).scalar_one() for t in tables}

    return counts


# The same server the `postgres_url` fixture of tests/conftest.py uses (which a module cannot import:
# `conftest` is the nearest directory's).
POSTGRES_URL = os.environ.get("CITETRACE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:55432/postgres")


@contextlib.contextmanager
def postgres_database(admin_url: str = POSTGRES_URL, prefix: str = "fuzz"):
    """A fresh PostgreSQL database, dropped afterwards (a fuzz module's, and the `postgres_url`
    fixture's): skips when PostgreSQL is not running, fails under CI."""
    import uuid

    import pytest
    import sqlalchemy as sa

    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except sa.exc.OperationalError as exc:
        admin.dispose()
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL not reachable at {admin_url}: {exc}")
        pytest.skip("PostgreSQL not running (make postgres-up)")
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def directory_counts(root: Path, skip: tuple[str, ...] = ()) -> Callable[[], dict[str, int]]:
    """Row counts of every table of every SQLite file (*.db, *.sqlite) under `root`."""
    def counts() -> dict[str, int]:
        files = sorted([*Path(root).rglob("*.db"), *Path(root).rglob("*.sqlite")])
        return sqlite_counts(*files, skip=skip)()

    return counts


# -- the tests a service's fuzz module gets ----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Regression:
    """A failing example the suite found, kept (issue 17 §3: failures saved as regression examples)."""

    method: str
    request: bytes
    who: str = "staff"
    note: str = ""


def suite(regressions: tuple[Regression, ...] = (), examples: int = EXAMPLES):
    """The fuzz tests of a module whose `world` fixture gives a World: generated, mutated and raw
    requests, the saved regressions, and the service still SERVING (last: pytest keeps this order).
    Use: `test_generated, test_mutated, test_raw, test_regressions, test_still_serving = suite(...)`."""
    from hypothesis import given

    @fuzz_settings(examples)
    @given(data=st.data())
    def test_generated(world, data):
        check(world, *data.draw(generated_calls(world)))

    @fuzz_settings(examples)
    @given(data=st.data())
    def test_mutated(world, data):
        check(world, *data.draw(mutated_calls(world)))

    @fuzz_settings(examples)
    @given(data=st.data())
    def test_raw(world, data):
        check(world, *data.draw(raw_calls(world)))

    def test_regressions(world):
        for case in regressions:
            check(world, world.method(case.method), case.request, case.who)

    def test_still_serving(world):
        assert_serving(world)

    return test_generated, test_mutated, test_raw, test_regressions, test_still_serving
