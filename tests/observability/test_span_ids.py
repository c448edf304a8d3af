"""Span and trace IDs (kit.telemetry.UrandomIdGenerator): a trace ID names an Ask's evidence record,
so IDs must never repeat — not when something seeds `random`, not across threads, and not in a
forked child, which must not reuse the random block its parent had read ahead."""

from __future__ import annotations

import os
import random
import threading

from citetrace.kit.telemetry import UrandomIdGenerator


def test_seeding_random_does_not_repeat_ids():
    ids = UrandomIdGenerator()
    random.seed(7)
    first = [ids.generate_trace_id() for _ in range(3)]
    random.seed(7)
    again = [ids.generate_trace_id() for _ in range(3)]
    assert not set(first) & set(again)


def test_ids_are_unique_across_threads_and_blocks():
    ids = UrandomIdGenerator()
    found: list[list[int]] = [[] for _ in range(4)]

    def draw(slot: int) -> None:
        # Several blocks per thread: 4 KiB holds 256 trace IDs.
        found[slot] = [ids.generate_trace_id() for _ in range(1000)] + [ids.generate_span_id() for _ in range(1000)]

    threads = [threading.Thread(target=draw, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for slot in found for i in slot]
    assert len(set(every)) == len(every) == 8000
    assert all(0 < i < 2 ** 128 for i in every)
    assert all(i < 2 ** 64 for slot in found for i in slot[1000:])


def test_a_forked_child_never_reuses_its_parents_ids():
    ids = UrandomIdGenerator()
    ids.generate_trace_id()  # the parent has a block read ahead now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next IDs and leave at once
        try:
            os.write(write, ",".join(str(ids.generate_trace_id()) for _ in range(4)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = {int(x) for x in pipe.read().split(",")}
    os.waitpid(pid, 0)
    parent = {ids.generate_trace_id() for _ in range(4)}
    assert len(child) == 4 and not child & parent
