"""Durable delivery: the outbox keeps records while the trace service is away, delivers them in
order per tenant, survives restarts of its own process, and a real trace service process killed
mid-run loses nothing and duplicates nothing."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from citetrace.kit.auth import bearer_metadata, mint_token
from citetrace.kit.testing import auth_env, install_dev_issuer
from citetrace.kit.trace_client import TraceClient
from citetrace.outbox import PermanentDeliveryError, TraceOutbox, trace_deliverer
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tracefixtures import OTHER_TENANT, TENANT, make_record

REPO = Path(__file__).resolve().parents[2]


class FlakyService:
    """A stand-in for the network: delivery fails while `down` is set, otherwise stores in order."""

    def __init__(self) -> None:
        self.down = False
        self.reject: set[str] = set()
        self.stored: list[tuple[str, str]] = []
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, record: pb.TraceRecord) -> None:
        with self.lock:
            self.calls += 1
            if record.trace_id in self.reject:
                raise PermanentDeliveryError("INVALID_ARGUMENT INVALID_TRACE_ID")
            if self.down:
                raise ConnectionError("trace service unavailable")
            self.stored.append((record.tenant_id, record.trace_id))


def test_direct_delivery_when_the_service_is_up(tmp_path):
    service = FlakyService()
    outbox = TraceOutbox(tmp_path / "outbox.db", service)
    assert outbox.submit(make_record("o-1"))
    assert service.stored == [(TENANT, "o-1")] and outbox.pending_count() == 0
    outbox.close()


def test_records_wait_keep_their_order_and_survive_a_restart_of_the_outbox(tmp_path):
    service = FlakyService()
    path = tmp_path / "outbox.db"
    outbox = TraceOutbox(path, service)
    service.down = True
    assert not outbox.submit(make_record("o-1"))
    service.down = False
    # The service is back, but o-1 is still waiting: o-2 must queue behind it to keep the order.
    assert not outbox.submit(make_record("o-2"))
    assert outbox.submit(make_record("b-1", tenant=OTHER_TENANT))  # another tenant is not held up
    service.down = True
    assert outbox.flush() == 2
    assert outbox.pending_count(TENANT) == 2 and outbox.pending_count(OTHER_TENANT) == 0
    outbox.close()  # the orchestrator process stops with records waiting

    service.down = False
    reopened = TraceOutbox(path, service)
    assert reopened.pending_count() == 2
    assert reopened.flush() == 0
    assert service.stored == [(OTHER_TENANT, "b-1"), (TENANT, "o-1"), (TENANT, "o-2")]
    reopened.close()


def test_background_deliverer_backs_off_and_delivers_when_the_service_returns(tmp_path):
    service = FlakyService()
    outbox = TraceOutbox(tmp_path / "outbox.db", service, min_backoff=0.05, max_backoff=0.4, poll_interval=0.1)
    outbox.start()
    service.down = True
    for i in range(5):
        assert not outbox.submit(make_record(f"o-{i}"))
    time.sleep(1.0)
    # Backoff: far fewer attempts than a busy loop would make in a second.
    assert service.calls < 15
    service.down = False
    assert outbox.wait_empty(5)
    assert [t for _, t in service.stored] == [f"o-{i}" for i in range(5)]
    outbox.close()


def test_a_permanently_rejected_record_is_kept_as_dead_letter_and_does_not_block(tmp_path):
    service = FlakyService()
    outbox = TraceOutbox(tmp_path / "outbox.db", service)
    service.down = True
    outbox.submit(make_record("o-1"))
    outbox.submit(make_record("o-bad"))
    outbox.submit(make_record("o-3"))
    service.down = False
    service.reject = {"o-bad"}
    assert outbox.flush() == 0
    assert [t for _, t in service.stored] == ["o-1", "o-3"]
    dead = outbox.dead_letters()
    assert [d.trace_id for d in dead] == ["o-bad"] and "INVALID_TRACE_ID" in dead[0].last_error
    assert not outbox.submit(make_record("o-bad"))  # rejected directly: also kept
    assert len(outbox.dead_letters()) == 2
    # After the cause is fixed, an operator requeues them and they are delivered.
    service.reject = set()
    assert outbox.requeue_dead() == 2 and outbox.flush() == 0
    assert [t for _, t in service.stored] == ["o-1", "o-3", "o-bad", "o-bad"]
    outbox.close()


def test_outbox_command_lists_pending_and_dead_letters_and_flushes(tmp_path, auth, capsys):
    from tracefixtures import trace_service

    from apps.cli.main import main

    service = FlakyService()
    path = tmp_path / "orchestrator" / "trace-outbox.sqlite"
    outbox = TraceOutbox(path, service)
    service.reject = {"o-2"}
    outbox.submit(make_record("o-2"))  # rejected: dead letter
    service.down = True
    outbox.submit(make_record("o-1"))  # service down: pending
    outbox.close()
    install_dev_issuer(auth, tmp_path)
    assert main(["trace", "outbox", "--data-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "1 pending" in out and "dead letter" in out and "o-2" in out and "INVALID_TRACE_ID" in out
    with trace_service(auth, tmp_path / "trace") as (runner, stub, _):
        assert main(["trace", "outbox", "--data-dir", str(tmp_path), "--flush", "--requeue-dead",
                     "--target", runner.address]) == 0
        out = capsys.readouterr().out
        assert "requeued 1 dead letter(s)" in out and "0 pending" in out
        listed = stub.ListTraces(pb.ListTracesRequest(), timeout=10,
                                 metadata=bearer_metadata(mint_token(auth, tenant_id=TENANT, subject="a", roles=["auditor"])))
        assert sorted(t.trace_id for t in listed.traces) == ["o-1", "o-2"]


# --- a real trace service process, killed mid-run --------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_service(port: int, data_dir: Path, auth, log: Path, database_url: str | None = None
                  ) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITETRACE_TRACE_", "CITETRACE_AUTH_"))}
    env.update({"CITETRACE_TRACE_PORT": str(port), "CITETRACE_TRACE_METRICS_PORT": "-1",
                "CITETRACE_TRACE_DATA_DIR": str(data_dir), **auth_env(auth, signing=False),
                "CITETRACE_TLS_MODE": "plaintext"})
    if database_url:
        env["CITETRACE_TRACE_DATABASE_URL"] = database_url
    proc = subprocess.Popen([sys.executable, "-m", "services.trace"], cwd=REPO, env=env,
                            stdout=log.open("ab"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            try:
                if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == health_pb2.HealthCheckResponse.SERVING:
                    return proc
            except grpc.RpcError:
                time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"trace service did not start: {log.read_text()}")


@pytest.mark.slow
def test_killing_the_trace_service_mid_run_loses_nothing_and_duplicates_nothing(tmp_path, auth, metadata_for,
                                                                               store_url):
    database_url = None if store_url.startswith("sqlite") else store_url  # SQLite: under the data dir
    port = free_port()
    target = f"127.0.0.1:{port}"
    log = tmp_path / "trace.log"
    proc = start_service(port, tmp_path / "data", auth, log, database_url)
    deliver = trace_deliverer(TraceClient(target, caller="orchestrator", timeout=2.0))
    outbox_path = tmp_path / "orchestrator" / "outbox.db"
    outbox = TraceOutbox(outbox_path, deliver, min_backoff=0.1, max_backoff=0.5, poll_interval=0.2)
    outbox.start()
    sent: dict[str, list[str]] = {TENANT: [], OTHER_TENANT: []}
    delivered_now = []

    def submit(i: int) -> None:
        tenant = TENANT if i % 3 else OTHER_TENANT
        trace_id = f"kill-{i:03d}"
        sent[tenant].append(trace_id)
        delivered_now.append(outbox.submit(make_record(trace_id, tenant=tenant)))

    try:
        for i in range(0, 20):
            submit(i)
        proc.send_signal(signal.SIGKILL)  # mid-run, no drain
        proc.wait(10)
        for i in range(20, 40):
            submit(i)
        assert outbox.pending_count() >= 20
        # The orchestrator restarts too while the trace service is down.
        outbox.close()
        outbox = TraceOutbox(outbox_path, deliver, min_backoff=0.1, max_backoff=0.5, poll_interval=0.2)
        outbox.start()
        for i in range(40, 50):
            submit(i)
        proc = start_service(port, tmp_path / "data", auth, log, database_url)
        for i in range(50, 60):
            submit(i)
        assert outbox.wait_empty(90), f"still pending: {outbox.pending_count()}"
        assert not outbox.dead_letters()
    finally:
        outbox.close()

    assert all(delivered_now[:20]) and not any(delivered_now[20:50])
    with grpc.insecure_channel(target) as ch:
        stub = pb_grpc.TraceServiceStub(ch)
        for tenant, ids in sent.items():
            reader = metadata_for(tenant, ("auditor",))
            listed, token = [], ""
            while True:
                page = stub.ListTraces(pb.ListTracesRequest(page_size=100, page_token=token), timeout=10,
                                       metadata=reader)
                listed += [t.trace_id for t in page.traces]
                if not (token := page.next_page_token):
                    break
            # Exactly once each, and stored in submission order (newest first in the listing).
            assert list(reversed(listed)) == ids
            report = stub.VerifyChain(pb.VerifyChainRequest(), timeout=10, metadata=reader)
            assert report.ok and report.records_checked == len(ids)
    proc.send_signal(signal.SIGTERM)
    proc.wait(15)


def test_enqueued_records_survive_the_process_being_killed(tmp_path):
    """enqueue() is what the orchestrator does on the answer path (synchronous=NORMAL in WAL):
    once it returned, a SIGKILL of the process loses nothing, and the next outbox delivers in order."""
    path = tmp_path / "outbox.db"
    script = (
        "import os, signal, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from citetrace.outbox import TraceOutbox\n"
        "from tracefixtures import make_record\n"
        f"outbox = TraceOutbox({str(path)!r}, lambda record: None)\n"
        "for i in range(5):\n"
        "    outbox.enqueue(make_record(f'k-{i}'))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    delivered: list[str] = []
    outbox = TraceOutbox(path, lambda record: delivered.append(record.trace_id))
    try:
        assert outbox.pending_count() == 5
        assert outbox.flush() == 0
    finally:
        outbox.close()
    assert delivered == [make_record(f"k-{i}").trace_id for i in range(5)]
