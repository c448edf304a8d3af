"""The orchestrator's idempotency store for Asks, on SQLite and PostgreSQL: reserve, complete,
replay, another request under the key, concurrent callers with one key, release on failure."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from citetrace.kit.errors import Aborted, AlreadyExists, InvalidArgument

from services.orchestrator.ask_results import AskResultStore, checked_key, fingerprint


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    url = f"sqlite:///{tmp_path / 'orch.sqlite3'}" if request.param == "sqlite" else \
        request.getfixturevalue("postgres_url")
    s = AskResultStore(url, wait_seconds=0.5)
    s.migrate()
    s.migrate()  # idempotent
    yield s
    s.close()


def test_a_completed_ask_is_replayed_and_another_request_is_refused(store):
    first = fingerprint(q="Can I move my appointment?", sub="pat-1")
    assert store.reserve("acme", "k1", first) is None
    store.complete("acme", "k1", "trace-1", b"answer-bytes")
    replay = store.reserve("acme", "k1", first)
    assert (replay.trace_id, replay.response) == ("trace-1", b"answer-bytes")
    with pytest.raises(AlreadyExists) as caught:
        store.reserve("acme", "k1", fingerprint(q="another question", sub="pat-1"))
    assert caught.value.reason == "IDEMPOTENCY_KEY_REUSED"
    assert store.reserve("borealis", "k1", first) is None  # keys are per tenant


def test_a_failed_ask_gives_its_key_back_and_a_running_one_makes_others_wait(store):
    print_ = fingerprint(q="x")
    assert store.reserve("acme", "k2", print_) is None
    with pytest.raises(Aborted) as caught:  # still running after wait_seconds
        store.reserve("acme", "k2", print_)
    assert caught.value.reason == "IDEMPOTENCY_KEY_IN_PROGRESS"
    store.release("acme", "k2")
    assert store.reserve("acme", "k2", print_) is None


def test_concurrent_callers_with_one_key_get_one_answer(store):
    store.wait_seconds = 10
    print_ = fingerprint(q="y")
    winners, replays, lock = [], [], threading.Lock()
    barrier = threading.Barrier(6)

    def call(i: int) -> None:
        barrier.wait(10)
        stored = store.reserve("acme", "k3", print_)
        with lock:
            (replays if stored is not None else winners).append(i)
        if stored is None:
            store.complete("acme", "k3", f"trace-{i}", f"answer-{i}".encode())

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(winners) == 1 and len(replays) == 5


def test_a_reservation_of_a_dead_replica_is_taken_over_and_old_keys_purged(store):
    now = [dt.datetime(2026, 12, 1, 12, 0)]
    store.clock = lambda: now[0]
    assert store.reserve("acme", "k4", "f") is None
    now[0] += dt.timedelta(seconds=store.stale_seconds + 1)
    assert store.reserve("acme", "k4", "f") is None
    now[0] += dt.timedelta(seconds=store.retention_seconds + 1)
    assert store.purge() == 1


def test_keys_are_checked():
    assert checked_key(" abc-1 ") == "abc-1" and checked_key("") == ""
    with pytest.raises(InvalidArgument):
        checked_key("has space")
