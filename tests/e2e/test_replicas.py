"""Replicas over shared stores (issue 21 point 3): two processes each of retrieval, trace and
orchestrator (tests/e2e/replicas.py) over one PostgreSQL and one OpenSearch index, every caller on a
round_robin channel over both replicas. Concurrent Asks (single questions and two-turn
conversations) and ingestion for the same tenants; one replica of each service is SIGKILLed
mid-run and restarted on its own data dir (the orchestrator's outbox drains from there). Just before
the kill both trace replicas hang for TRACE_PAUSE_SECONDS (SIGSTOP), so the killed orchestrator's
outbox holds records of answers it already gave (the test checks it did).

Afterwards: every answer has exactly one trace record, every tenant's hash chain verifies on both
trace replicas with no fork (sequences 1..N, each linked to the one before), every ingested version
is searchable from each retrieval replica (and the versions it superseded are not), every second
turn found its conversation, and both outboxes are empty (nothing pending, no dead letter).

What the clients do, and what the test therefore tolerates: a call that fails UNAVAILABLE (its
replica was killed, or its channel had not yet seen that) or ABORTED IDEMPOTENCY_KEY_IN_PROGRESS
(the key is reserved by an Ask on the killed orchestrator; the reservation is taken over after
IDEMPOTENCY_STALE_SECONDS) is retried with the SAME idempotency key / the same document version,
for up to RETRY_SECONDS. Every attempt that failed may leave one trace record of its own: the
killed orchestrator's outbox still delivers the record of the Ask it never answered, and an Ask
refused while its key is in use is recorded as refused. So per caller (each Ask has its own token
subject, recorded as the record's principal_ref) the test allows at most one extra record per
failed attempt it saw, and none for a caller that never saw a failure. No other error is tolerated,
and no answer may lack its record or have two."""

from __future__ import annotations

import dataclasses
import datetime as dt
import sqlite3
import threading
import time
import uuid
from collections import Counter

import grpc
import pytest
import sqlalchemy as sa
from citetrace.common.v1 import common_pb2 as c
from citetrace.kit import clients
from citetrace.kit import testing as kit_testing
from citetrace.kit.testing import token_metadata
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as orch_pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as orch_grpc
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from citetrace.trace.v1 import trace_service_pb2_grpc as trace_grpc
from retrieval.opensearch_fixtures import opensearch_url  # noqa: F401 - the node fixture

from apps.cli.ingest import collect, parse_file

from .conftest import CORPUS, SLOTS
from .replicas import replicated_stack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TENANTS = ("acme-health", "lakeside-health")
QUESTIONS = {
    "acme-health": ("When should I arrive for my appointment at Northside Family Clinic?",
                    "How much notice do I need to give to cancel an appointment?"),
    "lakeside-health": ("How much notice do I need to give to cancel an appointment?",
                        "When should I arrive for my appointment?"),
}
TWO_PART_Q = "Can I book cardiology tomorrow, and when should I arrive?"  # asks which clinic
RETRY_SECONDS = 45.0


def retried(err: grpc.RpcError) -> bool:
    """UNAVAILABLE, and ABORTED for a key still reserved by an Ask in flight (or on the killed replica)."""
    if err.code() == grpc.StatusCode.UNAVAILABLE:
        return True
    info = clients.error_info(err)
    return err.code() == grpc.StatusCode.ABORTED and info is not None and info.reason == "IDEMPOTENCY_KEY_IN_PROGRESS"

ASK_THREADS = 3
LOAD_BEFORE_KILL_SECONDS = 6.0
TRACE_PAUSE_SECONDS = 1.5
LOAD_WHILE_DOWN_SECONDS = 4.0
LOAD_AFTER_RESTART_SECONDS = 4.0


@dataclasses.dataclass
class Call:
    """One logical call (one idempotency key, or one document version) and its attempts."""

    tenant: str
    subject: str
    failed_attempts: list[str] = dataclasses.field(default_factory=list)
    reply: object = None
    error: str = ""


def with_retries(call: Call, attempt) -> None:
    """attempt() until it answers; UNAVAILABLE / ABORTED are retried (same key), anything else ends it."""
    deadline = time.monotonic() + RETRY_SECONDS
    while True:
        try:
            call.reply = attempt()
            return
        except grpc.RpcError as err:
            if not retried(err) or time.monotonic() > deadline:
                call.error = f"{err.code().name}: {err.details()}"
                return
            call.failed_attempts.append(f"{err.code().name}: {err.details()}")
            time.sleep(0.2)


class Workload:
    """Ask threads, one conversation thread and one ingestion thread, until stop()."""

    def __init__(self, stack) -> None:
        self.stack = stack
        self.asks: list[Call] = []
        self.turns: list[tuple[Call, Call]] = []
        self.ingests: list[Call] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._ask_loop, args=(n,), daemon=True) for n in range(ASK_THREADS)]
        self._threads += [threading.Thread(target=self._conversation_loop, daemon=True),
                          threading.Thread(target=self._ingest_loop, daemon=True)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=RETRY_SECONDS + 30)
        assert not any(t.is_alive() for t in self._threads), "a workload thread did not finish"

    def _ask(self, tenant: str, subject: str, question: str, conversation_id: str = "") -> Call:
        call = Call(tenant, subject)
        key = uuid.uuid4().hex
        metadata = token_metadata(self.stack.auth, tenant, ("patient",), (), subject)
        stub = clients.stub(orch_grpc.OrchestratorServiceStub, self.stack.target("orchestrator"))
        request = orch_pb.AskRequest(question=question, conversation_id=conversation_id, idempotency_key=key)
        with_retries(call, lambda: stub.Ask(request, timeout=10, metadata=metadata))
        return call

    def _ask_loop(self, worker: int) -> None:
        n = 0
        while not self._stop.is_set():
            tenant = TENANTS[(worker + n) % len(TENANTS)]
            question = QUESTIONS[tenant][n % len(QUESTIONS[tenant])]
            self.asks.append(self._ask(tenant, f"replicas-{uuid.uuid4().hex[:16]}", question))
            n += 1

    def _conversation_loop(self) -> None:
        while not self._stop.is_set():
            subject = f"replicas-conv-{uuid.uuid4().hex[:12]}"
            first = self._ask("acme-health", subject, TWO_PART_Q)
            second = Call("acme-health", subject, error="no first turn")
            if first.reply is not None and first.reply.conversation_id:
                second = self._ask("acme-health", subject, "Northside", first.reply.conversation_id)
            self.turns.append((first, second))

    def _ingest_loop(self) -> None:
        template = parse_file(CORPUS / "acme-health" / "clinic-hours.md")
        stub = clients.stub(ret_grpc.RetrievalServiceStub, self.stack.target("retrieval"))
        n = 0
        while not self._stop.is_set():
            tenant = TENANTS[(n // 2) % len(TENANTS)]
            document = f"replicas-bulletin-{n // 2}"  # two versions per document: the second supersedes
            marker = f"bulletinmarker{uuid.uuid4().hex[:10]}"
            source = dataclasses.replace(
                template, tenant=tenant, document_id=document, title=f"Bulletin {n // 2}",
                valid_from=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5) + dt.timedelta(seconds=n % 2),
                body=f"# Bulletin\n\nFront desk notice {marker}: the waiting room opens at seven on weekdays.\n")
            call = Call(tenant, marker)
            metadata = token_metadata(self.stack.auth, tenant, ("policy_admin",), (), "replicas-ingest")
            with_retries(call, lambda s=source, m=metadata: stub.IngestDocument(s.request(), timeout=30, metadata=m))
            self.ingests.append(call)
            n += 1


def _ingest_corpus(stack) -> None:
    stub = clients.stub(ret_grpc.RetrievalServiceStub, stack.target("retrieval"))
    for path in collect([CORPUS / tenant for tenant in TENANTS]):
        source = parse_file(path)
        metadata = token_metadata(stack.auth, source.tenant, ("policy_admin",), (), "replicas-setup")
        stub.IngestDocument(source.request(), timeout=120, metadata=metadata)


def _outbox_rows(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]


def _wait_outboxes_empty(stack, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        rows = [_outbox_rows(stack.outbox_path(i)) for i in range(len(stack.replicas["orchestrator"]))]
        if not any(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def _query(stack, sql: str, tenant: str) -> list[sa.Row]:
    engine = sa.create_engine(stack.database_urls["trace"])
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.text(sql), {"tenant": tenant}))
    finally:
        engine.dispose()


def _records(stack, tenant: str) -> list[sa.Row]:
    """The tenant's Ask records, straight from the shared trace database."""
    return _query(stack, "SELECT trace_id, sequence, principal_ref FROM trace_records WHERE tenant_id = :tenant "
                         "ORDER BY sequence", tenant)


def _chain(stack, tenant: str) -> list[sa.Row]:
    """Every item of the tenant's one chain: Ask records and links (version events, actions), which
    share the sequence."""
    return _query(stack, "SELECT sequence, previous_hash, record_hash AS item_hash FROM trace_records "
                         "WHERE tenant_id = :tenant UNION ALL SELECT sequence, previous_hash, link_hash FROM "
                         "trace_chain_links WHERE tenant_id = :tenant ORDER BY sequence", tenant)


def _searchable_versions(address: str, stack, call: Call) -> set[str]:
    """The version IDs a search for the call's marker finds on one retrieval replica (its own channel)."""
    with grpc.insecure_channel(address) as channel:
        reply = ret_grpc.RetrievalServiceStub(channel).Search(
            ret_pb.SearchRequest(query=call.subject, k=5, mode=ret_pb.SEARCH_MODE_LEXICAL), timeout=10,
            metadata=token_metadata(stack.auth, call.tenant, ("patient",), (), "replicas-check"))
    return {hit.passage.identity.version_id for hit in reply.hits}


def _check_answers_traced(stack, calls: list[Call]) -> dict[str, int]:
    """Every answer's record exactly once; extra records only for callers that saw failures."""
    by_tenant: dict[str, list[sa.Row]] = {tenant: _records(stack, tenant) for tenant in TENANTS}
    counts = {"answers": 0, "extra_records": 0, "failed_attempts": 0}
    for tenant, rows in by_tenant.items():
        mine = [call for call in calls if call.tenant == tenant]
        by_subject: dict[str, list[Call]] = {}
        for call in mine:
            by_subject.setdefault(call.subject, []).append(call)
        records_of: dict[str, list[str]] = {}
        for row in rows:
            records_of.setdefault(row.principal_ref, []).append(row.trace_id)
        for subject, subject_calls in by_subject.items():
            traced = records_of.get(subject, [])
            answers = [call.reply.trace_id for call in subject_calls]
            for trace_id in answers:
                assert traced.count(trace_id) == 1, f"{tenant}: answer {trace_id} has {traced.count(trace_id)} records"
            extra = len(traced) - len(answers)
            failed = sum(len(call.failed_attempts) for call in subject_calls)
            assert 0 <= extra <= failed, (f"{tenant}/{subject}: {extra} records beyond its {len(answers)} answers, "
                                          f"but only {failed} failed attempts: {traced}")
            counts["answers"] += len(answers)
            counts["extra_records"] += extra
            counts["failed_attempts"] += failed
    return counts


def _check_chains(stack) -> dict[str, int]:
    sizes = {}
    for tenant in TENANTS:
        rows = _chain(stack, tenant)
        assert [row.sequence for row in rows] == list(range(1, len(rows) + 1)), f"{tenant}: gap or fork"
        for before, after in zip(rows, rows[1:], strict=False):
            assert after.previous_hash == before.item_hash, f"{tenant}: fork at sequence {after.sequence}"
        metadata = token_metadata(stack.auth, tenant, ("auditor",), (), "replicas-audit")
        for replica in stack.replicas["trace"]:  # each replica verifies the one chain
            with grpc.insecure_channel(replica.address) as channel:
                report = trace_grpc.TraceServiceStub(channel).VerifyChain(
                    trace_pb.VerifyChainRequest(), timeout=60, metadata=metadata)
            assert report.ok, f"{tenant} on trace-{replica.index}: {report.detail}"
            assert report.records_checked == len(rows), (report.records_checked, len(rows))
        sizes[tenant] = len(rows)
    return sizes


def _check_conversations(stack, turns: list[tuple[Call, Call]]) -> None:
    stub = clients.stub(trace_grpc.TraceServiceStub, stack.target("trace"))
    for first, second in turns:
        assert first.reply is not None, first.error
        assert [p.outcome for p in first.reply.parts][0] == c.PART_OUTCOME_NEEDS_CLARIFICATION
        assert second.reply is not None, f"the reply turn failed (conversation lost?): {second.error}"
        assert second.reply.conversation_id == first.reply.conversation_id
        metadata = token_metadata(stack.auth, second.tenant, ("auditor",), (), "replicas-audit")
        record = stub.GetTrace(trace_pb.GetTraceRequest(trace_id=second.reply.trace_id), timeout=10,
                               metadata=metadata).record
        assert record.previous_turn_trace_id == first.reply.trace_id
        assert record.conversation_id == first.reply.conversation_id


def test_two_replicas_of_each_survive_a_kill_with_no_lost_or_duplicated_evidence(tmp_path, opensearch_url, postgres_admin_url):  # noqa: F811
    auth = kit_testing.test_auth_settings()
    started = time.monotonic()
    with replicated_stack(tmp_path / "stack", auth, postgres_admin_url, opensearch_url, replicas=2,
                          slots_file=SLOTS) as stack:
        up_seconds = time.monotonic() - started
        _ingest_corpus(stack)
        work = Workload(stack)
        work.start()
        time.sleep(LOAD_BEFORE_KILL_SECONDS)
        # Both trace replicas hang for a moment first, so the orchestrators keep answering with their
        # records waiting in the outboxes (background delivery): the killed orchestrator's outbox
        # holds records of answers already given, which only its restart on the same dir delivers.
        traces = stack.replicas["trace"]
        for replica in traces:
            replica.pause()
        time.sleep(TRACE_PAUSE_SECONDS)
        killed = [stack.replica(service, 0) for service in ("trace", "orchestrator", "retrieval")]
        for replica in killed:
            replica.kill()
        pending_at_kill = _outbox_rows(stack.outbox_path(0))
        for replica in traces[1:]:
            replica.resume()
        time.sleep(LOAD_WHILE_DOWN_SECONDS)
        restart_started = time.monotonic()
        stack.restart(*killed)
        restart_seconds = time.monotonic() - restart_started
        time.sleep(LOAD_AFTER_RESTART_SECONDS)
        work.stop()

        failures = [call.error for call in (*work.asks, *work.ingests, *(t for pair in work.turns for t in pair))
                    if call.error]
        assert not failures, failures
        assert len(work.asks) >= 10 and len(work.ingests) >= 4 and len(work.turns) >= 2, \
            (len(work.asks), len(work.ingests), len(work.turns))
        assert pending_at_kill > 0, "the killed orchestrator's outbox should have held undelivered records"
        assert _wait_outboxes_empty(stack) == [0, 0], "an outbox kept records (pending or dead letters)"

        all_asks = [*work.asks, *(t for pair in work.turns for t in pair)]
        counts = _check_answers_traced(stack, all_asks)
        sizes = _check_chains(stack)
        _check_conversations(stack, work.turns)

        latest: dict[tuple[str, str], str] = {}
        for call in work.ingests:
            version = call.reply.version
            latest[(version.document.tenant_id, version.document.document_id)] = version.version_id
        for replica in stack.replicas["retrieval"]:
            for call in work.ingests:
                version = call.reply.version
                found = _searchable_versions(replica.address, stack, call)
                if latest[(version.document.tenant_id, version.document.document_id)] == version.version_id:
                    assert version.version_id in found, f"retrieval-{replica.index} cannot find {call.subject}"
                else:
                    assert version.version_id not in found, f"retrieval-{replica.index} still finds superseded {call.subject}"
        asks_seen = Counter(a.split(":")[0] for call in all_asks for a in call.failed_attempts)
        ingests_seen = Counter(a.split(":")[0] for call in work.ingests for a in call.failed_attempts)
        print(f"failed attempts (retried): asks {dict(asks_seen)}, ingests {dict(ingests_seen)}")
        print(f"asks={len(work.asks)} conversations={len(work.turns)} ingests={len(work.ingests)} {counts} "
              f"chains={sizes} outbox_pending_at_kill={pending_at_kill} up={up_seconds:.1f}s "
              f"restart={restart_seconds:.1f}s")
