"""Recovery in the real multi-process stack (`citetrace up --detach`, supervised): retrieval killed
with SIGKILL under a light Ask load is restarted by the supervisor, and the orchestrator uses it
again within 1 s of its SERVING (health-checked client channels with a short reconnect backoff);
the other services never stop serving; `citetrace restart retrieval` restarts it and says so."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from citetrace.common.v1 import common_pb2 as c
from citetrace.kit.stack import SERVICES

from apps.cli.common import read_state
from apps.cli.stack import _alive, health_of, web_health_of

pytestmark = pytest.mark.slow

ARRIVAL_Q = "When should I arrive for my appointment at Northside Family Clinic?"
# The point is "within 1 s of SERVING"; the bound allows for 2 shared, loaded cores (an Ask that
# started just before the channel saw SERVING can still fail) and still fails with gRPC's default
# backoff or the previous 2 s cap (the finding: ~5.5 s).
USED_AGAIN_WITHIN_SECONDS = 1.0
LOAD_THREADS = 2


class AskLoad:
    """LOAD_THREADS callers asking ARRIVAL_Q back to back; each Ask kept as (start, end, ok), ok when
    its policy part is ANSWERED."""

    def __init__(self, stack) -> None:
        self.stack = stack
        self.results: list[tuple[float, float, bool]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(LOAD_THREADS)]

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                response = self.stack.ask(ARRIVAL_Q, timeout=10)
                ok = [p.outcome for p in response.parts] == [c.PART_OUTCOME_ANSWERED]
            except Exception:  # noqa: BLE001 - any failed call counts as a failure
                ok = False
            self.results.append((started, time.monotonic(), ok))
            time.sleep(0.02)

    def __enter__(self) -> AskLoad:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


class HealthWatch:
    """Polls the health of the named services every 50 ms; remembers every sample not SERVING."""

    def __init__(self, stack, names: list[str]) -> None:
        self.targets = {name: stack.target(name) for name in names}
        self.transport = stack.transport
        self.console_url = read_state(stack.data_dir)["services"]["console"]["url"]
        self.not_serving: list[tuple[str, str]] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, target in self.targets.items():
                health = health_of(target, timeout=2.0, transport=self.transport)
                if health != "SERVING":
                    self.not_serving.append((name, health))
            console = web_health_of(self.console_url, timeout=2.0)
            if console != "SERVING":
                self.not_serving.append(("console", console))
            self.samples += 1
            time.sleep(0.05)

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _retrieval_pid(stack) -> int:
    return read_state(stack.data_dir)["services"]["retrieval"]["pid"]


def _wait_serving_again(stack, old_pid: int, timeout: float = 120) -> float:
    """Monotonic time of the first SERVING answer of the retrieval process that replaced `old_pid`
    (a fresh channel per check, polled every 20 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _retrieval_pid(stack) != old_pid:
            checked = time.monotonic()
            if health_of(stack.target("retrieval"), timeout=0.5, transport=stack.transport) == "SERVING":
                return checked
        time.sleep(0.02)
    raise AssertionError(f"retrieval not SERVING again within {timeout} s; see {stack.data_dir / 'logs'}")


def test_retrieval_killed_under_load_is_restarted_and_used_again_within_1s_of_serving(stack):
    assert stack.ask(ARRIVAL_Q).parts[0].outcome == c.PART_OUTCOME_ANSWERED
    others = [info.name for info in SERVICES if info.name != "retrieval"]
    old_pid = _retrieval_pid(stack)
    restarts_before = read_state(stack.data_dir)["services"]["retrieval"].get("restarts", 0)
    with HealthWatch(stack, others) as watch, AskLoad(stack) as load:
        time.sleep(2.0)  # the load runs against a healthy stack first
        killed_at = time.monotonic()
        os.kill(old_pid, signal.SIGKILL)
        serving_at = _wait_serving_again(stack, old_pid)
        time.sleep(5.0)  # the load keeps running after SERVING
    results = sorted(load.results)
    before = [ok for _, end, ok in results if end < killed_at]  # answered before the kill
    outage = [ok for start, _, ok in results if killed_at + 0.1 <= start < serving_at]
    after_serving = [(start - serving_at, ok) for start, _, ok in results if start >= serving_at]
    failed_after = [offset for offset, ok in after_serving if not ok]
    last_failure = max(failed_after, default=0.0)
    print(f"retrieval down for {serving_at - killed_at:.1f} s; {len(results)} Asks; "
          f"last failure {last_failure:.3f} s after SERVING; during the outage {outage}; after: "
          f"{[(round(offset, 3), ok) for offset, ok in after_serving]}")
    assert before and all(before), "the load was answered before the kill"
    # The test exercised an outage (an Ask that started just before the check that saw SERVING may
    # already be answered).
    assert outage.count(False) >= 3, f"Asks during the outage fail: {outage}"
    assert last_failure <= USED_AGAIN_WITHIN_SECONDS, (
        f"Asks still failed {last_failure:.3f} s after retrieval was SERVING: {after_serving}")
    late = [ok for offset, ok in after_serving if offset > USED_AGAIN_WITHIN_SECONDS]
    assert len(late) >= 4 and all(late), "every Ask after the first second is answered"
    # The supervisor restarted it (and logged it); the others never stopped serving.
    assert not _alive(old_pid)
    assert read_state(stack.data_dir)["services"]["retrieval"]["restarts"] == restarts_before + 1
    up_log = (stack.data_dir / "logs" / "up.log").read_text()
    assert f"retrieval (pid {old_pid}) was killed by SIGKILL; restarting in" in up_log
    assert f"retrieval restarted (pid {old_pid} -> {_retrieval_pid(stack)})" in up_log
    assert watch.samples >= 10 and watch.not_serving == [], watch.not_serving


def test_citetrace_restart_retrieval_is_reported_and_the_stack_answers(stack):
    old_pid = _retrieval_pid(stack)
    restarts_before = read_state(stack.data_dir)["services"]["retrieval"].get("restarts", 0)
    others = [info.name for info in SERVICES if info.name != "retrieval"]
    with HealthWatch(stack, others) as watch:
        restart = stack.cli("restart", "retrieval", "--data-dir", str(stack.data_dir), timeout=240)
    assert restart.returncode == 0, restart.stdout + restart.stderr
    new_pid = _retrieval_pid(stack)
    assert new_pid != old_pid and not _alive(old_pid) and _alive(new_pid)
    assert f"retrieval restarted (pid {old_pid} -> {new_pid}), SERVING after" in restart.stdout
    assert health_of(stack.target("retrieval"), transport=stack.transport) == "SERVING"
    assert watch.not_serving == [], watch.not_serving
    up_log = (stack.data_dir / "logs" / "up.log").read_text()
    assert f"restart of retrieval (pid {old_pid}) requested" in up_log
    status = stack.cli("status", "--data-dir", str(stack.data_dir))
    assert status.returncode == 0, status.stdout + status.stderr
    (line,) = [line for line in status.stdout.splitlines() if line.startswith("retrieval ")]
    assert line.split()[-2:] == [str(restarts_before + 1), "SERVING"], line
    # Used again at once: the orchestrator's channel sees the new process's SERVING.
    deadline = time.monotonic() + USED_AGAIN_WITHIN_SECONDS
    while True:
        outcome = stack.ask(ARRIVAL_Q).parts[0].outcome
        if outcome == c.PART_OUTCOME_ANSWERED or time.monotonic() > deadline:
            break
    assert outcome == c.PART_OUTCOME_ANSWERED
