"""End-to-end fixtures: the six services as separate processes (`citetrace up --detach` on shifted
ports and a temporary data dir), the sample corpus ingested and the sample slots loaded once per
session and search backend; extra single-service processes (an orchestrator whose scheduler or
retrieval is down, a generation service with the fault-injecting `test` backend) started on demand.

The stack's retrieval runs on the embedded index unless a test asks for another backend:
``@pytest.mark.parametrize("stack", BOTH_BACKENDS, indirect=True)`` runs it once per backend
(OpenSearch: the local node, as tests/retrieval/opensearch_fixtures.py finds or starts it, on an
index prefix of its own that is deleted afterwards)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from citetrace.kit.auth import AuthSettings, bearer_metadata, mint_token
from citetrace.kit.stack import BY_NAME, SERVICES
from citetrace.kit.testing import auth_env
from citetrace.kit.tls import TransportSettings, open_channel
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from citetrace.trace.v1 import trace_service_pb2_grpc as trace_grpc
from observability.harness import free_port_offset

from apps.cli.common import cli_transport, local_ca
from apps.cli.stack import health_of

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "deploy" / "samples" / "corpus"
SLOTS = REPO / "deploy" / "samples" / "slots.yaml"
BACKENDS = ("embedded", "opensearch")
# For tests whose outcome depends on retrieval: once per search backend (one stack each per session).
BOTH_BACKENDS = ["embedded", pytest.param("opensearch", marks=pytest.mark.opensearch)]


@contextlib.contextmanager
def backend_env(backend: str) -> Iterator[dict[str, str]]:
    """The CITETRACE_RETRIEVAL_* settings that put a stack's retrieval on `backend`. OpenSearch: the
    node of tests/retrieval/opensearch_fixtures.py (started if nothing answers), a fresh index prefix,
    its indices deleted when the block ends."""
    if backend == "embedded":
        yield {"CITETRACE_RETRIEVAL_BACKEND": "embedded"}
        return
    if backend != "opensearch":
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    from retrieval.opensearch_fixtures import ensure_node

    from services.retrieval.index.opensearch import OpenSearchBackend, OpenSearchConfig

    url = ensure_node()
    prefix = f"ct-e2e-{uuid.uuid4().hex[:10]}-"
    try:
        yield {"CITETRACE_RETRIEVAL_BACKEND": "opensearch", "CITETRACE_RETRIEVAL_OPENSEARCH_HOSTS": url,
               "CITETRACE_RETRIEVAL_OPENSEARCH_INDEX_PREFIX": prefix}
    finally:
        with contextlib.suppress(Exception):
            OpenSearchBackend(OpenSearchConfig(hosts=(url,), index_prefix=prefix)).drop_all()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def citetrace(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The CLI as a process; `env` adds variables to this process's environment (for `up`: settings
    of the services it starts)."""
    return subprocess.run([sys.executable, "-m", "apps.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env={**os.environ, **env} if env else None)


@dataclasses.dataclass
class Stack:
    data_dir: Path
    offset: int
    auth: AuthSettings
    procs: list[subprocess.Popen] = dataclasses.field(default_factory=list)
    backend: str = "embedded"
    retrieval_env: dict[str, str] = dataclasses.field(default_factory=dict)  # backend_env's settings

    def target(self, service: str) -> str:
        return f"127.0.0.1:{BY_NAME[service].port + self.offset}"

    @property
    def transport(self) -> TransportSettings:
        """How a client reaches this stack: mutual TLS with the CLI's certificate from its CA
        (what `citetrace up` creates), unless it was started plaintext."""
        return cli_transport(self.data_dir)

    def identity(self, name: str) -> TransportSettings:
        """The transport settings of service `name` of this stack (its certificate)."""
        return cli_transport(self.data_dir, identity=name) if self.transport.mode == "mtls" else self.transport

    def channel(self, service_or_target: str) -> grpc.Channel:
        """A channel of its own (close it) to a service of the stack (or an address), as the CLI."""
        address = self.target(service_or_target) if service_or_target in BY_NAME else service_or_target
        return open_channel(address, self.transport)

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return citetrace(*args, timeout=timeout)

    def token(self, tenant: str, roles=("patient",), locations=()) -> str:
        return mint_token(self.auth, tenant_id=tenant, subject=f"e2e-{tenant}", roles=roles, location_ids=locations)

    def ask(self, question: str, tenant: str = "acme-health", roles=("patient",), target: str | None = None,
            locations=(), timeout: float = 30, **fields) -> pb.AskResponse:
        with self.channel(target or "orchestrator") as channel:
            return pb_grpc.OrchestratorServiceStub(channel).Ask(
                pb.AskRequest(question=question, **fields), timeout=timeout,
                metadata=bearer_metadata(self.token(tenant, roles, locations)))

    def get_trace(self, trace_id: str, tenant: str = "acme-health",
                  roles=("auditor", "patient")) -> trace_pb.GetTraceResponse:
        """The trace record; the orchestrator delivers it in the background (its durable outbox), so
        a record asked for right after the answer may need a moment: NOT_FOUND is retried up to 10 s."""
        deadline = time.monotonic() + 10
        with self.channel("trace") as channel:
            while True:
                try:
                    return trace_grpc.TraceServiceStub(channel).GetTrace(
                        trace_pb.GetTraceRequest(trace_id=trace_id), timeout=10,
                        metadata=bearer_metadata(self.token(tenant, roles)))
                except grpc.RpcError as err:
                    if err.code() != grpc.StatusCode.NOT_FOUND or time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)

    def start_service(self, name: str, data_dir: Path, *, service_data_dir: Path | None = None,
                      **settings: str) -> str:
        """One more process of a service on a free port; settings are its env (without prefix).
        service_data_dir: the service's DATA_DIR (e.g. the stack's, for a second retrieval process over
        the same store of record); data_dir holds its log."""
        info = BY_NAME[name]
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CITETRACE_", "OTEL_"))}
        env.update({
            "OPENBLAS_NUM_THREADS": "1",
            **auth_env(self.auth),
            **(local_ca(self.data_dir).issue(name).env() if self.transport.mode == "mtls" else {}),
            f"{info.env_prefix}PORT": str(port),
            f"{info.env_prefix}METRICS_PORT": "-1",
        })
        if name == "orchestrator":
            env[f"{info.env_prefix}DATA_DIR"] = str(data_dir)
            for other in SERVICES:
                if other.name != "orchestrator":
                    env[f"{info.env_prefix}{other.name.upper()}_TARGET"] = self.target(other.name)
        if service_data_dir is not None:
            env[f"{info.env_prefix}DATA_DIR"] = str(service_data_dir)
        env.update({f"{info.env_prefix}{key.upper()}": value for key, value in settings.items()})
        data_dir.mkdir(parents=True, exist_ok=True)
        log = open(data_dir / f"{name}-{port}.log", "ab")  # noqa: SIM115 - owned by the child
        proc = subprocess.Popen([sys.executable, "-m", info.module], env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=REPO, start_new_session=True)
        log.close()
        self.procs.append(proc)
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}; see {data_dir}")
            if health_of(address, timeout=0.5, transport=self.transport) == "SERVING":
                return address
            time.sleep(0.2)
        raise RuntimeError(f"{name} on {address} did not become SERVING")


@contextlib.contextmanager
def running_stack(data_dir: Path, env: dict[str, str] | None = None, backend: str = "embedded") -> Iterator[Stack]:
    """The six services as processes on a free port offset, the sample corpus ingested and the
    sample slots loaded; everything stopped on exit (also used by the eval harness, tests/eval).
    `env`: CITETRACE_* settings for the services `citetrace up` starts; `backend`: retrieval's search
    backend (embedded or opensearch, see backend_env)."""
    with backend_env(backend) as settings, _running_stack(data_dir, {**settings, **(env or {})}) as stack:
        stack.backend, stack.retrieval_env = backend, settings
        yield stack


@contextlib.contextmanager
def _running_stack(data_dir: Path, env: dict[str, str]) -> Iterator[Stack]:
    data_dir.mkdir(parents=True, exist_ok=True)
    offset = free_port_offset()
    up = citetrace("up", "--detach", "--port-offset", str(offset), "--data-dir", str(data_dir), env=env)
    if up.returncode != 0:
        citetrace("down", "--data-dir", str(data_dir), timeout=60)
        pytest.fail(f"citetrace up failed: {up.stdout}{up.stderr}")
    result = Stack(data_dir, offset, AuthSettings(rs256_public_key_file=data_dir / "issuer-key.pub.pem",
                                                     rs256_private_key_file=data_dir / "issuer-key.pem"))
    try:
        ingest = citetrace("ingest", "--data-dir", str(data_dir), str(CORPUS))
        assert ingest.returncode == 0, ingest.stdout + ingest.stderr
        slots = citetrace("slots", "load", "--data-dir", str(data_dir), str(SLOTS))
        assert slots.returncode == 0, slots.stdout + slots.stderr
        yield result
    finally:
        for proc in result.procs:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=15)
            if proc.poll() is None:
                proc.kill()
        citetrace("down", "--data-dir", str(data_dir), timeout=60)


# params: a test that does not choose gets "embedded" as parameter 0, the same key as BOTH_BACKENDS'
# first entry, so pytest groups them and the session starts one embedded stack and one OpenSearch one.
@pytest.fixture(scope="session", params=["embedded"])
def stack(request, tmp_path_factory) -> Iterator[Stack]:
    """The stack on the embedded index, or on the backend an indirect parametrization names."""
    backend = getattr(request, "param", "embedded")
    if backend == "opensearch":  # no node: a failure under CI, a skip elsewhere (as retrieval's own tests)
        from retrieval.opensearch_fixtures import NodeUnavailable, ensure_node, unavailable

        try:
            ensure_node()
        except NodeUnavailable as exc:
            unavailable(str(exc))
    with running_stack(tmp_path_factory.mktemp(f"e2e-stack-{backend}"), backend=backend) as result:
        yield result


@pytest.fixture
def closed_target() -> str:
    """An address where nothing listens: a downstream that stays down."""
    return f"127.0.0.1:{free_port()}"
