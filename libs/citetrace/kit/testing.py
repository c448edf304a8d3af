"""In-process servers on port 0 with real gRPC, for tests and benchmarks."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator

from citetrace.kit.auth import AuthSettings, bearer_metadata, mint_token
from citetrace.kit.server import ServiceRunner, ServiceSpec
from citetrace.kit.settings import ServerSettings


def test_auth_settings() -> AuthSettings:
    return AuthSettings(hs256_secret=secrets.token_urlsafe(40))


@contextlib.contextmanager
def serving(spec: ServiceSpec, auth: AuthSettings, *, warm: bool = True, grace: float = 0.5) -> Iterator[ServiceRunner]:
    """Runs one service in-process on a free port until the block ends."""
    runner = ServiceRunner(spec, ServerSettings(port=0, metrics_port=-1, grace_seconds=grace), auth)
    runner.start()
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
