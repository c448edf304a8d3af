"""Downstream calls under the Ask's deadline: each call is capped by the per-call timeout and by
what is left of the deadline, a transient UNAVAILABLE is retried once when the deadline leaves
room, and every call's duration is kept as a stage timing of the trace record."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TypeVar

from citetrace.kit.errors import DeadlineExceeded, Unavailable

from services.orchestrator.core.model import StageTiming

Request = TypeVar("Request")
Reply = TypeVar("Reply")
TRANSIENT = (Unavailable,)


class Deadline:
    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds

    def remaining(self) -> float:
        return self._at - time.monotonic()


@dataclasses.dataclass(frozen=True)
class CallPolicy:
    call_timeout_seconds: float = 5.0
    retry_backoff_seconds: float = 0.05


@dataclasses.dataclass
class Calls:
    """The downstream calls of one stage or part: one deadline, one list of timings."""

    deadline: Deadline
    policy: CallPolicy
    timings: list[StageTiming] = dataclasses.field(default_factory=list)

    def for_part(self) -> Calls:
        """The same deadline, the part's own timings (parts run concurrently)."""
        return Calls(self.deadline, self.policy)

    def __call__(self, service: str, stage_name: str, fn: Callable[[Request, float], Reply], request: Request) -> Reply:
        attempt = 0
        while True:
            left = self.deadline.remaining()
            if left <= 0.01:
                raise DeadlineExceeded("DEADLINE_EXCEEDED", f"no time left for {stage_name}")
            timeout = min(self.policy.call_timeout_seconds, left)
            started = time.perf_counter()
            try:
                return fn(request, timeout)
            except TRANSIENT:
                if attempt == 0 and self.deadline.remaining() > self.policy.retry_backoff_seconds + 0.05:
                    attempt += 1
                    time.sleep(self.policy.retry_backoff_seconds)
                    continue
                raise
            finally:
                self.timings.append(StageTiming(service, stage_name, (time.perf_counter() - started) * 1000.0))
