"""A periodic background task of the gateway (e.g. recording expired proposals), stopped before the
database closes. Failures are logged and retried at the next tick: the task is housekeeping, never
on a caller's path."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("citetrace.scheduler_gateway")


class Periodic:
    def __init__(self, name: str, interval_seconds: float, task: Callable[[], object]) -> None:
        self.name = name
        self.interval_seconds = interval_seconds
        self.task = task
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_seconds):
            try:
                self.task()
            except Exception:  # noqa: BLE001 - the database may be briefly unavailable; try next tick
                log.exception("%s: background pass failed", self.name)
