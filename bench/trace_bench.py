"""Trace service benchmark over real gRPC (in-process server on port 0): RecordTrace latency with
1 and 4 concurrent writers of one tenant (the per-tenant chain serializes them), GetTrace and
ListTraces latency, VerifyChain time for the whole chain. SQLite by default; --database-url for
PostgreSQL (a server URL: the benchmark creates a scratch database next to it and drops it after).

    .venv/bin/python bench/trace_bench.py [--records 500] [--database-url postgresql+psycopg://...]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "trace"))

from citetrace.kit.testing import service_metadata, test_auth_settings, token_metadata  # noqa: E402
from citetrace.trace.v1 import trace_service_pb2 as pb  # noqa: E402
from tracefixtures import TENANT, make_record, trace_service  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(name: str, samples: list[float]) -> None:
    ms = [s * 1000 for s in samples]
    print(f"{name:<34} n={len(ms):<5} p50={statistics.median(ms):7.2f} ms  p95={pct(ms, 0.95):7.2f} ms  "
          f"max={max(ms):7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    with scratch_database(args.database_url) as url:
        run(args, url)


@contextlib.contextmanager
def scratch_database(url: str | None):
    if not url or not url.startswith("postgresql"):
        yield url
        return
    import sqlalchemy as sa

    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    name = f"bench_trace_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def run(args, database_url: str | None) -> None:
    auth = test_auth_settings()
    writer = service_metadata(TENANT)
    reader = token_metadata(auth, TENANT, ("auditor",))
    with tempfile.TemporaryDirectory() as tmp, trace_service(auth, Path(tmp), database_url) as (runner, stub, svc):
        print(f"store: {svc.core.store.dialect}; record size {len(make_record('x').SerializeToString())} bytes")
        records = [make_record(f"b-{i:05d}") for i in range(args.records * 2)]

        def write(rec) -> float:
            started = time.perf_counter()
            stub.RecordTrace(pb.RecordTraceRequest(record=rec), timeout=30, metadata=writer)
            return time.perf_counter() - started

        summary("RecordTrace, 1 writer", [write(r) for r in records[:args.records]])
        started = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            concurrent = list(pool.map(write, records[args.records:]))
        elapsed = time.perf_counter() - started
        summary("RecordTrace, 4 writers", concurrent)
        print(f"{'  throughput, 4 writers':<34} {len(concurrent) / elapsed:.0f} records/s")
        summary("RecordTrace retry (idempotent)", [write(r) for r in records[:100]])
        summary("GetTrace", [_timed(lambda i=i: stub.GetTrace(pb.GetTraceRequest(trace_id=f"b-{i:05d}"),
                                                               timeout=30, metadata=reader)) for i in range(200)])
        summary("ListTraces page of 50", [_timed(lambda: stub.ListTraces(pb.ListTracesRequest(page_size=50),
                                                                          timeout=30, metadata=reader))
                                           for _ in range(50)])
        started = time.perf_counter()
        report = stub.VerifyChain(pb.VerifyChainRequest(), timeout=300, metadata=reader)
        took = time.perf_counter() - started
        assert report.ok, report.detail
        print(f"VerifyChain: {report.records_checked} records in {took:.2f} s "
              f"({report.records_checked / took:.0f} records/s)")
        outbox_drain(auth, runner.address, Path(tmp), args.records)


def outbox_drain(auth, target: str, tmp: Path, n: int) -> None:
    """Records submitted while the service is 'down' wait in the outbox; then one flush drains them."""
    from citetrace.kit.trace_client import TraceClient
    from citetrace.outbox import TraceOutbox, trace_deliverer

    deliver = trace_deliverer(TraceClient(target, caller="orchestrator", timeout=10))
    down = [True]

    def gated(record):
        if down[0]:
            raise ConnectionError("down")
        deliver(record)

    outbox = TraceOutbox(tmp / "outbox.db", gated)
    started = time.perf_counter()
    for i in range(n):
        outbox.submit(make_record(f"ob-{i:05d}"))
    queued = time.perf_counter() - started
    down[0] = False
    started = time.perf_counter()
    left = outbox.flush()
    drained = time.perf_counter() - started
    outbox.close()
    assert left == 0
    print(f"outbox: {n} records queued in {queued:.2f} s ({n / queued:.0f}/s, fsync per record), "
          f"drained in order in {drained:.2f} s ({n / drained:.0f}/s)")


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
