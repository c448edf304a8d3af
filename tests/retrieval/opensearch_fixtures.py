"""Fixtures for the OpenSearch backend: a real local node (deploy/opensearch-local/) and fresh,
uniquely prefixed backends that delete their indices afterwards.

The node: if nothing healthy answers on OPENSEARCH_PORT (default 9200), the session runs
deploy/opensearch-local/up.sh once (it reuses a healthy node, builds if needed, waits for health).
A node that cannot be reached or started FAILS the tests under CI (env CI set) and skips them
elsewhere. CITETRACE_TEST_OPENSEARCH_URL points the tests at another node instead (no start-up).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import urllib.request
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PORT = int(os.environ.get("OPENSEARCH_PORT", "9200"))
EXTERNAL_URL = os.environ.get("CITETRACE_TEST_OPENSEARCH_URL", "")
URL = EXTERNAL_URL or f"http://127.0.0.1:{PORT}"


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_cluster/health", timeout=5) as reply:
            return json.load(reply).get("status") in ("green", "yellow")
    except (OSError, ValueError):
        return False


def unavailable(message: str):
    if os.environ.get("CI"):
        pytest.fail(f"OpenSearch needed by the tests is not available: {message}")
    pytest.skip(f"OpenSearch not available ({message}); run make opensearch-up")


class NodeUnavailable(Exception):
    pass


def ensure_node() -> str:
    """The URL of a healthy node: the one answering, else deploy/opensearch-local/up.sh runs once
    (it reuses a healthy node, builds if needed, waits for health). Raises NodeUnavailable."""
    if _healthy(URL):
        return URL
    if EXTERNAL_URL:
        raise NodeUnavailable(f"nothing healthy at CITETRACE_TEST_OPENSEARCH_URL={EXTERNAL_URL}")
    script = REPO / "deploy" / "opensearch-local" / "up.sh"
    try:
        done = subprocess.run(["bash", str(script)], cwd=REPO, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NodeUnavailable(f"{script} did not finish: {exc}") from exc
    if done.returncode != 0 or not _healthy(URL):
        raise NodeUnavailable(f"{script} exited {done.returncode}: {(done.stdout + done.stderr)[-2000:]}")
    return URL


@pytest.fixture(scope="session")
def opensearch_url() -> str:
    try:
        return ensure_node()
    except NodeUnavailable as exc:
        unavailable(str(exc))


def opensearch_config(url: str, **overrides):
    from services.retrieval.index.opensearch import OpenSearchConfig

    fields = dict(hosts=(url,), index_prefix=f"ct-test-{uuid.uuid4().hex[:10]}-", timeout_seconds=60.0,
                  generation_ttl_seconds=0.0, max_retries=2, retry_backoff_seconds=0.1)
    fields.update(overrides)
    return OpenSearchConfig(**fields)


@pytest.fixture
def opensearch_backends(opensearch_url):
    """make(**config_overrides) -> a fresh OpenSearchBackend on its own index prefix; all of them
    are dropped after the test."""
    from services.retrieval.index.opensearch import OpenSearchBackend

    made = []

    def make(**overrides):
        backend = OpenSearchBackend(opensearch_config(opensearch_url, **overrides))
        made.append(backend)
        return backend

    yield make
    for backend in made:
        # Through the real node (a test may have pointed its backend at a proxy it then stopped);
        # a failed cleanup must not hide the test's own outcome.
        with contextlib.suppress(Exception):
            OpenSearchBackend(opensearch_config(opensearch_url, index_prefix=backend.config.index_prefix)).drop_all()


@pytest.fixture
def opensearch_backend_factory(opensearch_backends):
    """The contract suite's factory: a zero-argument callable making a fresh, empty backend."""
    return opensearch_backends
