"""Settings validation, token verification and error mapping of the service kit."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from citetrace.kit.auth import AuthSettings, TokenVerifier, bearer_metadata, mint_token
from citetrace.kit.errors import Unauthenticated
from citetrace.kit.settings import ServerSettings, SettingsError, load_settings


@dataclasses.dataclass(frozen=True)
class Example(ServerSettings):
    data_dir: Path = Path(".citetrace")
    targets: tuple[str, ...] = ()
    enabled: bool = False
    url: str | None = None


def test_settings_read_typed_values_with_prefix():
    env = {"X_PORT": "123", "X_DATA_DIR": "/tmp/d", "X_TARGETS": "a, b", "X_ENABLED": "yes", "OTHER": "1"}
    settings = load_settings(Example, "X_", env)
    assert settings == Example(port=123, data_dir=Path("/tmp/d"), targets=("a", "b"), enabled=True)


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"X_PORT": "abc"}, "X_PORT='abc'"),
        ({"X_PORT": "70000"}, "port 70000 out of range"),
        ({"X_ENABLED": "maybe"}, "X_ENABLED"),
        ({"X_PROT": "1"}, "unknown setting(s) X_PROT"),
    ],
)
def test_bad_settings_fail_at_start_up_naming_the_variable(env, fragment):
    with pytest.raises(SettingsError) as caught:
        load_settings(Example, "X_", env)
    assert fragment in str(caught.value)


def test_auth_settings_require_a_key():
    with pytest.raises(SettingsError, match="no token key configured"):
        load_settings(AuthSettings, "CITETRACE_AUTH_", {})
    with pytest.raises(SettingsError, match="at least 32"):
        AuthSettings(hs256_secret="short")


def test_token_round_trip_and_expiry(auth):
    token = mint_token(auth, tenant_id="t1", subject="u1", roles=["staff", "patient"], location_ids=["loc-1"])
    principal, raw = TokenVerifier(auth).verify_metadata(bearer_metadata(token))
    assert (principal.tenant_id, principal.subject, principal.roles, principal.location_ids) == (
        "t1", "u1", ("patient", "staff"), ("loc-1",))
    assert raw == token
    expired = mint_token(auth, tenant_id="t1", subject="u1", ttl_seconds=10, now=1_000_000)
    with pytest.raises(Unauthenticated) as caught:
        TokenVerifier(auth).verify(expired)
    assert caught.value.reason == "TOKEN_EXPIRED"


def test_a_verified_token_is_remembered_by_its_exact_string_and_only_until_it_expires(auth, monkeypatch):
    import dataclasses
    import time

    import jwt as pyjwt

    strict = dataclasses.replace(auth, leeway_seconds=0)
    verifier = TokenVerifier(strict)
    token = mint_token(strict, tenant_id="t1", subject="u1", roles=["patient"], ttl_seconds=2)
    decoded = []
    real_decode = pyjwt.decode
    monkeypatch.setattr(pyjwt, "decode", lambda *a, **k: decoded.append(1) or real_decode(*a, **k))
    first = verifier.verify(token)
    assert verifier.verify(token) is first and len(decoded) == 1  # the same string: verified once
    # Any other string is verified on its own: the token with an altered signature is refused.
    head, _, signature = token.rpartition(".")
    forged = f"{head}.{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"
    with pytest.raises(Unauthenticated) as caught:
        verifier.verify(forged)
    assert caught.value.reason == "TOKEN_INVALID" and len(decoded) == 2
    # Past its expiry the remembered token gets the full check again, and is refused.
    time.sleep(max(0.0, pyjwt.decode(token, options={"verify_signature": False})["exp"] - time.time()) + 1.1)
    with pytest.raises(Unauthenticated) as caught:
        verifier.verify(token)
    assert caught.value.reason == "TOKEN_EXPIRED"


def test_malformed_authorization_metadata_is_rejected(auth):
    with pytest.raises(Unauthenticated) as caught:
        TokenVerifier(auth).verify_metadata([("authorization", "Basic abc")])
    assert caught.value.reason == "TOKEN_MALFORMED"


def test_downstream_deadline_never_outlives_the_incoming_call():
    from citetrace.kit.clients import DEFAULT_TIMEOUT_SECONDS, effective_timeout
    from citetrace.kit.context import call_context

    assert effective_timeout() == DEFAULT_TIMEOUT_SECONDS
    with call_context(None, None, timeout=0.5):
        assert 0.3 < effective_timeout(10.0) <= 0.5
    with call_context(None, None, timeout=-1):
        assert effective_timeout(10.0) == 0.001


def test_a_token_with_role_service_grants_nothing():
    """Services are identified by their certificates: whoever holds the issuer's key still cannot
    mint a service credential, because a token naming role service is refused."""
    from citetrace.kit.errors import Unauthenticated
    from citetrace.kit.testing import test_auth_settings

    auth = test_auth_settings()
    token = mint_token(auth, tenant_id="t1", subject="service:orchestrator", roles=["service"])
    with pytest.raises(Unauthenticated) as refused:
        TokenVerifier(auth).verify_user(token)
    assert refused.value.reason == "SERVICE_ROLE_IN_TOKEN"




def test_configuring_the_same_transport_again_keeps_the_open_channels():
    """An in-process CLI command configures its transport; equal settings must not close the channels
    that in-process services' stubs hold (they would fail 'Cannot invoke RPC on closed channel')."""
    import dataclasses as dc

    from citetrace.kit import clients
    from citetrace.kit.tls import PLAINTEXT

    clients.configure_transport(PLAINTEXT)
    kept = clients.channel("127.0.0.1:1")
    clients.configure_transport(dc.replace(PLAINTEXT))
    assert clients.channel("127.0.0.1:1") is kept
    clients.configure_transport(dc.replace(PLAINTEXT, ca_file=Path("/nonexistent-ca.pem")))
    assert clients.channel("127.0.0.1:1") is not kept
    clients.configure_transport(PLAINTEXT)


def test_a_server_on_a_port_that_was_a_dead_target_is_called_through_a_fresh_channel():
    """The kit's channel cache is per target and process-wide: a port an earlier channel failed on
    (a dead target, or a stopped server whose port the kernel hands out again) leaves that channel
    in reconnect backoff, where calls fail at once with UNAVAILABLE. `serving` forgets the cached
    channel to the port it bound, so the next channel connects afresh (it failed CI once: a slot part
    answered SOURCE_UNAVAILABLE from a stub scheduler that was up)."""
    import socket
    from concurrent import futures

    import grpc
    from citetrace.kit import clients
    from citetrace.kit.tls import PLAINTEXT
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    clients.configure_transport(PLAINTEXT)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    target = f"127.0.0.1:{port}"
    stale = clients.channel(target)
    with pytest.raises(grpc.RpcError) as refused:
        health_pb2_grpc.HealthStub(stale).Check(health_pb2.HealthCheckRequest(), timeout=0.5)
    assert refused.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    assert server.add_insecure_port(target) == port
    server.start()
    try:
        clients.forget_channel(target)
        fresh = clients.channel(target)
        assert fresh is not stale
        reply = health_pb2_grpc.HealthStub(fresh).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        server.stop(0)
        clients.forget_channel(target)
