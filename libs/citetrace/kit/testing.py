"""In-process servers on port 0 with real gRPC, for tests and benchmarks."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from citetrace.kit import clients
from citetrace.kit.auth import AuthSettings, bearer_metadata, mint_token
from citetrace.kit.server import ServiceRunner, ServiceSpec
from citetrace.kit.settings import ServerSettings
from citetrace.kit.tls import PLAINTEXT


def test_auth_settings() -> AuthSettings:
    """A fresh Ed25519 token issuer in a temporary directory (the production verification path:
    EdDSA, the algorithm fixed by the public key), with its private key so tests can mint tokens."""
    from citetrace.signing import generate_key_files

    folder = Path(tempfile.mkdtemp(prefix="citetrace-issuer-"))
    private, public = folder / "issuer-key.pem", folder / "issuer-key.pub.pem"
    generate_key_files(private, public)
    return AuthSettings(rs256_public_key_file=public, rs256_private_key_file=private)


def auth_env(auth: AuthSettings, *, signing: bool = True) -> dict[str, str]:
    """The CITETRACE_AUTH_* variables that give a service process these settings (without the
    private key when not `signing`)."""
    if auth.hs256_secret:
        return {"CITETRACE_AUTH_HS256_SECRET": auth.hs256_secret}
    env = {"CITETRACE_AUTH_RS256_PUBLIC_KEY_FILE": str(auth.rs256_public_key_file)}
    if signing and auth.rs256_private_key_file is not None:
        env["CITETRACE_AUTH_RS256_PRIVATE_KEY_FILE"] = str(auth.rs256_private_key_file)
    return env


def install_dev_issuer(auth: AuthSettings, data_dir: Path) -> None:
    """Puts the issuer keypair of `auth` where `citetrace up` creates the local stack's, so the CLI
    mints tokens the in-process services accept."""
    data_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(auth.rs256_private_key_file, data_dir / "issuer-key.pem")
    (data_dir / "issuer-key.pem").chmod(0o600)
    shutil.copyfile(auth.rs256_public_key_file, data_dir / "issuer-key.pub.pem")


def plaintext_unless_configured() -> None:
    """In-process tests and benchmarks talk plaintext (the development setting) unless the
    environment sets CITETRACE_TLS_MODE."""
    if not os.environ.get("CITETRACE_TLS_MODE"):
        clients.configure_transport(PLAINTEXT)


@contextlib.contextmanager
def serving(spec: ServiceSpec, auth: AuthSettings, *, warm: bool = True, grace: float = 0.5) -> Iterator[ServiceRunner]:
    """Runs one service in-process on a free port until the block ends (plaintext, with this
    process's client channels, unless CITETRACE_TLS_MODE says otherwise)."""
    if not clients.configured():
        plaintext_unless_configured()
    runner = ServiceRunner(spec, ServerSettings(port=0, metrics_port=-1, grace_seconds=grace), auth)
    runner.start()
    # An earlier test may have left a channel to this (reused) port in reconnect backoff.
    clients.forget_channel(runner.address)
    try:
        if warm:
            runner.warm_up()
        yield runner
    finally:
        runner.stop(grace)


def token_metadata(auth: AuthSettings, tenant: str, roles=("patient",), locations=(), subject="test-user",
                   patient_ref: str = ""):
    return bearer_metadata(mint_token(auth, tenant_id=tenant, subject=subject, roles=roles, location_ids=locations,
                                      patient_ref=patient_ref))


def service_metadata(tenant: str, caller: str = "orchestrator"):
    """Call metadata of a backend service acting as itself for `tenant` over plaintext (the
    development setting, where the caller's identity is claimed in `citetrace-peer`; under mTLS
    its certificate says it): what kit.trace_client sends."""
    from citetrace.kit.callers import TENANT_METADATA
    from citetrace.kit.tls import PEER_METADATA

    return ((TENANT_METADATA, tenant), (PEER_METADATA, caller))


def through(metadata, caller: str):
    """`metadata` (e.g. a user's token) of a call made through service `caller` over plaintext."""
    from citetrace.kit.tls import PEER_METADATA

    return (*metadata, (PEER_METADATA, caller))
