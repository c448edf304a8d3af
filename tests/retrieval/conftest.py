"""Fixtures for the search-backend contract suite (test_index_contract.py).

``backend_factory`` is parametrised over the fixture names in CONTRACT_BACKEND_FIXTURES;
each names a fixture returning a zero-argument callable that creates a fresh, empty
backend. To run the whole suite against another backend (OpenSearch), either add a
fixture here and its name to the list (skip inside it when the node is not running),
or override ``backend_factory`` in the backend's own test module after
``from tests.retrieval.test_index_contract import *``.

Contract tests use 384-dimensional vectors (the production dimension) and assert only
what every backend must agree on: membership, order, ranks, and fused scores that are
invariant to affine rescaling of the retrievers' raw scores (RRF, min-max, z-score).
"""

from __future__ import annotations

import pytest

from services.retrieval.index import EmbeddedIndex

from .opensearch_fixtures import (  # noqa: F401 - fixtures
    opensearch_backend_factory,
    opensearch_backends,
    opensearch_url,
)

CONTRACT_BACKEND_FIXTURES = [
    "embedded_backend_factory",
    pytest.param("opensearch_backend_factory", marks=pytest.mark.opensearch),
]


@pytest.fixture
def embedded_backend_factory():
    return EmbeddedIndex


@pytest.fixture(params=CONTRACT_BACKEND_FIXTURES)
def backend_factory(request):
    return request.getfixturevalue(request.param)
