"""The search backend's health, sampled in the background: what the retrieval service's metrics and
its gRPC health say about the index it searches.

Every ``poll_seconds`` the monitor takes one ``backend.health()`` sample (one request, no retries)
and records it in citetrace_search_backend_health{status} (1 for the current status, 0 for the
others) and citetrace_search_backend_nodes. It tells the runner whether the service can serve:
NOT_SERVING only while the backend is red or unreachable (searches would fail or miss passages);
a yellow cluster (a node and its replicas gone, every primary still assigned) keeps SERVING, since
searches are complete and the client's retries move to the live nodes; so is a cluster electing a
new manager (OpenSearchBackend.health reports it yellow). NOT_SERVING needs ``unhealthy_samples``
bad samples in a row (one slow reply on a busy machine must not take the service out of every
health-checked client's balancer); one good sample makes it SERVING again. Transitions are logged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from citetrace.kit.metrics import record_search_backend_health

from services.retrieval.index import BackendHealth, SearchBackend

log = logging.getLogger("citetrace.retrieval.backend_health")


class BackendHealthMonitor:
    def __init__(self, backend: SearchBackend, poll_seconds: float, unhealthy_samples: int = 3,
                 service: str = "retrieval") -> None:
        self.backend = backend
        self.poll_seconds = poll_seconds
        self.unhealthy_samples = unhealthy_samples
        self._bad_in_a_row = 0
        self.service = service
        self.last: BackendHealth | None = None
        self._report_serving: Callable[[bool], None] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def report_to(self, report_serving: Callable[[bool], None]) -> None:
        """Where can-serve / cannot-serve goes (the ServiceRunner's health, via ServiceSpec)."""
        self._report_serving = report_serving
        if self.last is not None:
            report_serving(self.can_serve)

    @property
    def can_serve(self) -> bool:
        return self._bad_in_a_row < self.unhealthy_samples

    def sample(self) -> BackendHealth:
        """One sample, recorded and reported (the loop's step; callable directly)."""
        health = self.backend.health()
        previous, self.last = self.last, health
        self._bad_in_a_row = 0 if health.can_serve else self._bad_in_a_row + 1
        record_search_backend_health(self.service, self.backend.name, health.status, health.nodes)
        if previous is None or previous.status != health.status:
            level = logging.INFO if health.can_serve else logging.ERROR
            log.log(level, "search backend %s is %s (%d nodes; %s)%s", self.backend.name, health.status,
                    health.nodes, health.detail, f", was {previous.status}" if previous else "")
        if self._report_serving is not None:
            self._report_serving(self.can_serve)
        return health

    def start(self) -> None:
        if self._thread is not None:
            return
        self.sample()
        self._thread = threading.Thread(target=self._run, name="retrieval-backend-health", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                self.sample()
            except Exception:  # a bug here must not stop the sampling
                log.exception("search backend health sample failed")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.poll_seconds + 10)
            self._thread = None
