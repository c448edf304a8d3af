"""Fixtures of the trace tests: a store URL per backend (SQLite, PostgreSQL) and a running service."""

from __future__ import annotations

import pytest
from tracefixtures import trace_service


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'trace.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def trace(auth, tmp_path, store_url):
    """(runner, stub, servicer) of a trace service on the parametrized store."""
    with trace_service(auth, tmp_path, store_url) as running:
        yield running


@pytest.fixture
def sqlite_trace(auth, tmp_path):
    with trace_service(auth, tmp_path) as running:
        yield running
