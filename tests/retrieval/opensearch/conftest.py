"""Fixtures of the OpenSearch tests (the node and backends: tests/retrieval/opensearch_fixtures.py)."""

from __future__ import annotations

import contextlib
import uuid

import pytest


@pytest.fixture
def prefix(opensearch_url):
    """A unique index prefix for a service under test; its indices are deleted afterwards."""
    from services.retrieval.index.opensearch import OpenSearchBackend

    from ..opensearch_fixtures import opensearch_config

    value = f"ct-svc-{uuid.uuid4().hex[:10]}-"
    yield value
    with contextlib.suppress(Exception):
        OpenSearchBackend(opensearch_config(opensearch_url, index_prefix=value)).drop_all()
