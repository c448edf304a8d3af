"""Fixtures shared by every test: key material for tokens and a real PostgreSQL when configured."""

from __future__ import annotations

import os

import fuzzing
import pytest
from citetrace.kit.testing import plaintext_unless_configured, test_auth_settings, token_metadata

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# In-process servers and this process's client channels: plaintext (the development setting). The
# processes a test starts read their own CITETRACE_TLS_* (the e2e stack runs mutual TLS).
plaintext_unless_configured()

POSTGRES_URL = fuzzing.POSTGRES_URL


@pytest.fixture(scope="session")
def auth():
    return test_auth_settings()


@pytest.fixture(scope="session")
def metadata_for(auth):
    """metadata_for("tenant-a", roles=("patient",)) -> call metadata with a valid bearer token."""

    def make(tenant: str, roles=("patient",), locations=(), subject="test-user"):
        return token_metadata(auth, tenant, roles, locations, subject)

    return make


@pytest.fixture(scope="session")
def postgres_admin_url():
    """The configured PostgreSQL server's admin URL, for tests that create databases of their own."""
    return POSTGRES_URL


@pytest.fixture
def postgres_url():
    """A fresh, empty PostgreSQL database for one test; dropped afterwards. Started by
    `make postgres-up` (make test does it). Missing PostgreSQL fails under CI, skips elsewhere."""
    with fuzzing.postgres_database(POSTGRES_URL, prefix="test") as url:
        yield url
