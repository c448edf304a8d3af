"""Mutual TLS between processes (issue 17 §1): a real trace service process with its certificate from
a local CA requires a client certificate of that CA. A caller with one is served; a certificate from
another CA, no certificate, or plaintext are refused at the handshake; the caller's identity is the
SAN URI of its certificate."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from citetrace.kit.auth import bearer_metadata, mint_token
from citetrace.kit.testing import auth_env
from citetrace.kit.tls import (
    PEER_METADATA,
    PLAINTEXT,
    LocalCA,
    TransportSettings,
    identity_of_certificate,
    open_channel,
    peer_identity,
)
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc

from apps.cli.stack import health_of

REPO = Path(__file__).resolve().parents[2]
TENANT = "acme-health"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    root = tmp_path_factory.mktemp("pki")
    return LocalCA(root / "ours"), LocalCA(root / "theirs", common_name="another CA")


@contextlib.contextmanager
def trace_process_with(ca: LocalCA, auth, folder: Path) -> Iterator[tuple[str, Path]]:
    """`python -m services.trace` with its certificate from `ca`, SERVING; (address, log)."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITETRACE_")}
    env.update({"CITETRACE_TRACE_PORT": str(port), "CITETRACE_TRACE_METRICS_PORT": "-1",
                "CITETRACE_TRACE_DATA_DIR": str(folder), **auth_env(auth, signing=False),
                **ca.issue("trace").env()})
    log = folder / "trace.log"
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "services.trace"], cwd=REPO, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    address = f"127.0.0.1:{port}"
    caller = ca.issue("orchestrator").settings()
    try:
        deadline = time.monotonic() + 90
        while health_of(address, timeout=1.0, transport=caller) != "SERVING":
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield address, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def trace_process(pki, auth, tmp_path_factory):
    with trace_process_with(pki[0], auth, tmp_path_factory.mktemp("trace")) as running:
        yield running


def _list_traces(address: str, transport: TransportSettings, auth) -> pb.ListTracesResponse:
    token = mint_token(auth, tenant_id=TENANT, subject="auditor-1", roles=["auditor"])
    with open_channel(address, transport) as channel:
        return pb_grpc.TraceServiceStub(channel).ListTraces(pb.ListTracesRequest(), timeout=10,
                                                            metadata=bearer_metadata(token))


def test_a_caller_with_a_certificate_of_our_ca_is_served(trace_process, pki, auth):
    address, log = trace_process
    reply = _list_traces(address, pki[0].issue("console").settings(), auth)
    assert list(reply.traces) == []
    assert "plaintext" not in log.read_text()  # no development warning under mTLS


def test_a_certificate_from_another_ca_is_refused(trace_process, pki, auth):
    ours, theirs = pki
    # It trusts our CA for the server's certificate, but presents one our CA never issued.
    forged = dataclasses.replace(theirs.issue("orchestrator").settings(), ca_file=ours.ca_file)
    with pytest.raises(grpc.RpcError) as refused:
        _list_traces(trace_process[0], forged, auth)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


def test_no_client_certificate_is_refused(trace_process, pki, auth):
    ours, _ = pki
    token = mint_token(auth, tenant_id=TENANT, subject="auditor-1", roles=["auditor"])
    server_only = grpc.ssl_channel_credentials(root_certificates=ours.ca_file.read_bytes())
    with grpc.secure_channel(trace_process[0], server_only) as channel, pytest.raises(grpc.RpcError) as refused:
        pb_grpc.TraceServiceStub(channel).ListTraces(pb.ListTracesRequest(), timeout=10,
                                                    metadata=bearer_metadata(token))
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


def test_plaintext_is_refused_by_an_mtls_server(trace_process, auth):
    with pytest.raises(grpc.RpcError) as refused:
        _list_traces(trace_process[0], PLAINTEXT, auth)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


def test_identity_is_the_certificate_san_uri_and_a_plaintext_claim_counts_only_in_plaintext(pki):
    ours, _ = pki
    files = ours.issue("retrieval")
    pem = files.cert_file.read_bytes()
    assert identity_of_certificate(pem) == "retrieval"
    claim = [(PEER_METADATA, "orchestrator")]
    assert peer_identity({"x509_pem_cert": [pem]}, claim, files.settings()) == "retrieval"
    assert peer_identity({}, claim, files.settings()) == ""
    assert peer_identity({}, claim, PLAINTEXT) == "orchestrator"


def test_key_files_are_private_and_certificates_are_reused(pki):
    ours, _ = pki
    first = ours.issue("generation")
    assert first.key_file.stat().st_mode & 0o777 == 0o600
    assert (ours.folder / "ca-key.pem").stat().st_mode & 0o777 == 0o600
    again = ours.issue("generation")
    assert again.cert_file.read_bytes() == first.cert_file.read_bytes()


def test_mtls_settings_need_their_files():
    from citetrace.kit.settings import SettingsError
    from citetrace.kit.tls import transport_from_environment

    with pytest.raises(SettingsError, match="CITETRACE_TLS_MODE=plaintext"):
        transport_from_environment({})
    assert transport_from_environment({"CITETRACE_TLS_MODE": "plaintext"}).plaintext


def test_plaintext_is_a_development_setting_that_warns(caplog):
    from citetrace.kit.tls import warn_if_plaintext

    with caplog.at_level("WARNING", logger="citetrace.tls"):
        warn_if_plaintext(PLAINTEXT, "trace")
    assert "plaintext gRPC (CITETRACE_TLS_MODE=plaintext) is a development setting" in caplog.text
