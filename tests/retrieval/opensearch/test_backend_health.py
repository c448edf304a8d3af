"""What the retrieval service says about its OpenSearch backend (issue 21 point 1), on the local node
behind a fault proxy: the health gauge and node count, the backend-errors counter (retried vs
exhausted), a search answered from fewer shards retried rather than returned, and the gRPC health
NOT_SERVING once the backend is unreachable. The cluster kills are in test_cluster_failover.py."""

from __future__ import annotations

import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client import REGISTRY

from ..service.conftest import failure
from .faults import FaultProxy
from .test_service import Q, doc_ids, load_world, os_service

pytestmark = pytest.mark.opensearch

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def backend_errors(outcome: str) -> float:
    return REGISTRY.get_sample_value("citetrace_search_backend_errors_total",
                                     {"service": "retrieval", "backend": "opensearch", "outcome": outcome}) or 0.0


def health_gauge() -> dict[str, float]:
    return {status: REGISTRY.get_sample_value("citetrace_search_backend_health", {
        "service": "retrieval", "backend": "opensearch", "status": status})
        for status in ("green", "yellow", "red", "unreachable")}


def grpc_health(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status


def wait_for(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_health_gauge_errors_counter_and_not_serving_when_unreachable(auth, tmp_path, opensearch_url, prefix):
    proxy = FaultProxy(opensearch_url)
    try:
        with os_service(auth, tmp_path, proxy.url, prefix, opensearch_max_retries=2,
                        opensearch_retry_backoff_seconds=0.05, backend_health_poll_seconds=0.2) as svc:
            load_world(svc)
            address = svc.runner.address
            assert health_gauge() == {"green": 1, "yellow": 0, "red": 0, "unreachable": 0}
            assert REGISTRY.get_sample_value("citetrace_search_backend_nodes",
                                             {"service": "retrieval", "backend": "opensearch"}) == 1
            assert grpc_health(address) == SERVING
            expected = doc_ids(svc.search("os-a", Q))

            retried, exhausted = backend_errors("retried"), backend_errors("exhausted")
            proxy.lose_a_shard(1)  # a node died under one shard of the next search: partial hits
            assert doc_ids(svc.search("os-a", Q)) == expected  # retried, not returned short
            assert backend_errors("retried") == retried + 1
            assert backend_errors("exhausted") == exhausted

            proxy.lose_a_shard(3)  # every attempt partial: refused, never an answer from fewer shards
            assert failure(svc.search, "os-a", Q) == (grpc.StatusCode.UNAVAILABLE, "SEARCH_BACKEND_UNAVAILABLE")
            assert backend_errors("retried") == retried + 3
            assert backend_errors("exhausted") == exhausted + 1

            proxy.stop()
            wait_for(lambda: grpc_health(address) == NOT_SERVING, "NOT_SERVING with OpenSearch unreachable")
            assert health_gauge() == {"green": 0, "yellow": 0, "red": 0, "unreachable": 1}
    finally:
        proxy.stop()


def test_the_embedded_backend_is_always_healthy(auth, tmp_path):
    from ..service.conftest import running_service

    with running_service(auth, tmp_path, backend_health_poll_seconds=0.2) as svc:
        assert svc.core.backend.health().status == "green"
        assert grpc_health(svc.runner.address) == SERVING
