"""Issue 16: a writer of the trace database cannot forge the record. Each attack of the issue on
SQLite and PostgreSQL, done the way an attacker with database access does it (the append-only
triggers switched off first): edit a review, redact a question without a redaction event, rewrite
the last record with a recomputed hash, delete the last N records (and rewind the chain head),
drop one record in the middle; plus an edited version event, a forged checkpoint file and the
on-demand checkpoint through `citetrace trace checkpoint` / `verify`. Each is detected with the
exact reason and sequence."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import grpc
import pytest
import sqlalchemy as sa
from citetrace.kit.auth import Principal
from citetrace.kit.errors import FailedPrecondition
from citetrace.kit.metrics import CHECKPOINT_MISMATCHES, SIGNATURE_FAILURES
from citetrace.kit.testing import install_dev_issuer, service_metadata
from citetrace.signing import generate_key_files
from citetrace.trace.v1 import trace_service_pb2 as pb
from test_store import _bypass
from tracefixtures import TENANT, core_on, make_record, trace_service

from services.trace import canonical as C
from services.trace.sealing import ChainSealer, Checkpoint, DirectoryCheckpointSink, build_sealer
from services.trace.store import open_store

WRITER = Principal(TENANT, "service:orchestrator", ("service",))
AUDITOR = Principal(TENANT, "auditor-1", ("auditor",))
REVIEWER = Principal(TENANT, "rev-1", ("reviewer",))
ALL_TABLES = ("trace_facets", "trace_queries", "trace_reviews", "trace_redactions", "trace_version_events",
              "trace_chain_links", "trace_records")


@pytest.fixture
def store(store_url):
    s = open_store(store_url)
    yield s
    s.close()


@pytest.fixture
def core(store, tmp_path):
    return core_on(store, data_dir=tmp_path / "trace-authority")


def fill(core, n: int) -> None:
    for i in range(1, n + 1):
        core.record_trace(WRITER, make_record(f"t-{i}"))


def counter(metric, **labels) -> float:
    return metric.labels(**labels)._value.get()


def bypass_all(conn, dialect: str) -> None:
    for table in ALL_TABLES:
        _bypass(conn, dialect, table)


def test_an_intact_chain_with_every_event_kind_verifies_against_its_checkpoint(core):
    fill(core, 2)
    core.record_review(REVIEWER, "t-1", pb.REVIEW_DECISION_ACCEPTED, "matches S1")
    core.record_version_event(WRITER, "v" + "1" * 63, pb.VERSION_EVENT_KIND_SUPERSEDED, "v" + "3" * 63)
    checkpoint, where = core.checkpoint(AUDITOR)
    assert checkpoint.sequence == 4 and where.endswith(".json")
    report = core.verify_tenant(TENANT)
    assert report.ok, report.detail
    assert report.records_checked == 4 and report.checkpoint_sequence == 4
    kinds = [link.kind for link in core.store.links(TENANT)]
    assert kinds == [C.LINK_REVIEW, C.LINK_VERSION_EVENT]


def test_an_edited_review_is_reported_at_its_link(core, store):
    fill(core, 2)
    review = core.record_review(REVIEWER, "t-1", pb.REVIEW_DECISION_REJECTED, "wrong arrival time")
    with store.engine.begin() as conn:
        _bypass(conn, store.dialect, "trace_reviews")
        conn.execute(sa.text("UPDATE trace_reviews SET decision = :d, rubric_note = 'fine' WHERE review_id = :r"),
                     {"d": pb.REVIEW_DECISION_ACCEPTED, "r": review.review_id})
    report = core.verify_tenant(TENANT)
    assert not report.ok
    assert report.first_broken_sequence == 3 and report.first_broken_trace_id == "t-1"
    assert report.detail == (f"chain link {review.review_id} (review): its row in trace_reviews differs from the "
                             "chained event (edited behind the service)")


def test_a_review_added_behind_the_service_is_reported(core, store):
    fill(core, 2)
    with store.engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO trace_reviews (review_id, tenant_id, trace_id, decision, reviewer_ref, rubric_note, "
            "answer_record_hash, evidence_version_ids, source_policy_version, created_at) VALUES "
            "('forged-review', :t, 't-2', 1, 'rev-x', '', '', '[]', '', :now)"),
            {"t": TENANT, "now": dt.datetime(2026, 12, 1)})
    report = core.verify_tenant(TENANT)
    assert not report.ok and report.first_broken_sequence == 2 and report.first_broken_trace_id == "t-2"
    assert report.detail == "review forged-review is not a link of the chain (written behind the service)"


REDACTED = "UPDATE trace_queries SET raw = '', normalized = '', nonce = NULL, redacted = :yes WHERE trace_id = 't-2'"


def test_the_database_refuses_a_redaction_without_its_event(core, store):
    fill(core, 3)
    with pytest.raises(sa.exc.DatabaseError) as caught, store.engine.begin() as conn:
        conn.execute(sa.text(REDACTED), {"yes": True})
    assert "only allowed as a redaction with its redaction event" in str(caught.value)
    assert core.verify_tenant(TENANT).ok


def test_a_redaction_without_an_event_is_reported_when_the_trigger_is_bypassed(core, store):
    fill(core, 3)
    with store.engine.begin() as conn:
        _bypass(conn, store.dialect, "trace_queries")
        conn.execute(sa.text(REDACTED), {"yes": True})
    report = core.verify_tenant(TENANT)
    assert not report.ok and report.first_broken_sequence == 2 and report.first_broken_trace_id == "t-2"
    assert report.detail == "record t-2: question redacted without a redaction event in the chain"


def test_a_retention_redaction_is_a_chained_event_and_an_edited_one_is_reported(core, store):
    old = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(days=100)
    core.record_trace(WRITER, make_record("t-old", created_at=old))
    assert core.apply_retention(AUDITOR, 30) == 1
    (link,) = store.links(TENANT)
    assert link.kind == C.LINK_REDACTION and link.subject_trace_id == "t-old" and link.sequence == 2
    assert core.verify_tenant(TENANT).ok
    with store.engine.begin() as conn:
        _bypass(conn, store.dialect, "trace_redactions")
        conn.execute(sa.text("UPDATE trace_redactions SET reason = 'court order' WHERE trace_id = 't-old'"))
    report = core.verify_tenant(TENANT)
    assert not report.ok and report.first_broken_sequence == 2
    assert "its row in trace_redactions differs from the chained event" in report.detail


def test_an_edited_version_event_is_reported(core, store):
    fill(core, 1)
    core.record_version_event(WRITER, "v" + "1" * 63, pb.VERSION_EVENT_KIND_RETIRED)
    with store.engine.begin() as conn:
        _bypass(conn, store.dialect, "trace_version_events")
        conn.execute(sa.text("UPDATE trace_version_events SET created_at = :t"), {"t": dt.datetime(2030, 1, 1)})
    report = core.verify_tenant(TENANT)
    assert not report.ok and report.first_broken_sequence == 2
    assert "its row in trace_version_events differs from the chained event" in report.detail


def test_rewriting_the_last_record_with_a_recomputed_hash_is_reported(core, store):
    fill(core, 3)
    target = store.get(TENANT, "t-3")
    forged = make_record("t-3", created_at=target.created_at)
    forged.parts[0].answer_text = "Arrive 5 minutes early [S1]."
    body = C.body_bytes(forged)
    new_hash = C.record_hash(tenant_id=TENANT, trace_id="t-3", sequence=3, previous_hash=target.previous_hash,
                             query_digest=target.query_digest, body=body)
    before = counter(SIGNATURE_FAILURES, service="trace", kind="trace_link")
    with store.engine.begin() as conn:
        bypass_all(conn, store.dialect)
        conn.execute(sa.text("UPDATE trace_records SET body = :b, record_hash = :h WHERE trace_id = 't-3'"),
                     {"b": body, "h": new_hash})
        conn.execute(sa.text("UPDATE trace_chain_heads SET record_hash = :h"), {"h": new_hash})
    report = core.verify_tenant(TENANT)
    assert not report.ok and report.first_broken_sequence == 3 and report.first_broken_trace_id == "t-3"
    assert report.detail.startswith("signature INVALID: the signature by key ed25519:")
    assert counter(SIGNATURE_FAILURES, service="trace", kind="trace_link") == before + 1


def test_a_record_signed_with_another_key_is_reported(core, store, tmp_path):
    fill(core, 2)
    generate_key_files(tmp_path / "attacker.pem")
    attacker = build_sealer(provider="file", key_file=tmp_path / "attacker.pem", verify_key_files=(),
                            create=False)
    rogue = core_on(store, sealer=attacker, data_dir=tmp_path / "elsewhere")
    rogue.record_trace(WRITER, make_record("t-3"))
    report = core.verify_tenant(TENANT)
    assert not report.ok and report.first_broken_sequence == 3
    assert report.detail.startswith("signature UNKNOWN_KEY: signed by key ")


@pytest.mark.parametrize("n", [1, 2])
def test_deleting_the_last_records_is_reported_against_the_checkpoint(core, store, n):
    fill(core, 5)
    core.checkpoint(AUDITOR)
    keep = 5 - n
    with store.engine.begin() as conn:
        bypass_all(conn, store.dialect)
        doomed = {"doomed": [f"t-{i}" for i in range(keep + 1, 6)]}
        for table in ("trace_facets", "trace_queries", "trace_records"):
            conn.execute(sa.text(f"DELETE FROM {table} WHERE trace_id IN :doomed")
                         .bindparams(sa.bindparam("doomed", expanding=True)), doomed)
        # A careful attacker also rewinds the head row so it names the new last record.
        last = conn.execute(sa.text("SELECT record_hash FROM trace_records WHERE trace_id = :t"),
                            {"t": f"t-{keep}"}).scalar_one()
        conn.execute(sa.text("UPDATE trace_chain_heads SET sequence = :s, record_hash = :h"), {"s": keep, "h": last})
    before = counter(CHECKPOINT_MISMATCHES, service="trace")
    report = core.verify_tenant(TENANT)
    assert not report.ok and report.first_broken_sequence == keep + 1
    assert report.detail.startswith(f"records missing at the end: the chain ends at sequence {keep} but the "
                                    "signed checkpoint ")
    assert report.detail.endswith(f"first missing sequence {keep + 1}")
    assert counter(CHECKPOINT_MISMATCHES, service="trace") == before + 1
    # A broken chain is not checkpointed over.
    with pytest.raises(FailedPrecondition) as refused:
        core.checkpoint(AUDITOR)
    assert refused.value.reason == "CHAIN_BROKEN"


def test_dropping_a_record_in_the_middle_is_reported(core, store):
    fill(core, 5)
    with store.engine.begin() as conn:
        bypass_all(conn, store.dialect)
        for table in ("trace_facets", "trace_queries", "trace_records"):
            conn.execute(sa.text(f"DELETE FROM {table} WHERE trace_id = 't-3'"))
    report = core.verify_tenant(TENANT)
    assert not report.ok and report.first_broken_sequence == 3 and report.first_broken_trace_id == "t-4"
    assert report.detail == "sequence gap: expected record 3, found 4 (sequence 3 is missing)"


def test_a_forged_checkpoint_file_is_reported(core, tmp_path):
    fill(core, 2)
    core.checkpoint(AUDITOR)
    generate_key_files(tmp_path / "attacker.pem")
    attacker = build_sealer(provider="file", key_file=tmp_path / "attacker.pem", verify_key_files=(), create=False)
    forged = attacker.checkpoint(TENANT, 9, "f" * 64, dt.datetime(2026, 12, 2, 12))
    core.checkpoints.write(forged)
    report = core.verify_tenant(TENANT)
    assert not report.ok and report.first_broken_sequence == 9
    assert "signature UNKNOWN_KEY" in report.detail


def test_checkpoint_files_are_never_rewritten(tmp_path):
    sink = DirectoryCheckpointSink(tmp_path / "cp")
    generate_key_files(tmp_path / "k.pem")
    sealer: ChainSealer = build_sealer(provider="file", key_file=tmp_path / "k.pem", verify_key_files=(),
                                       create=False)
    cp = sealer.checkpoint(TENANT, 3, "a" * 64, dt.datetime(2026, 12, 2, 12))
    where = sink.write(cp)
    with pytest.raises(FileExistsError):
        sink.write(cp)
    latest, found = sink.latest(TENANT)
    assert latest == cp and found == where
    assert Checkpoint.from_json(Path(where).read_bytes()) == cp
    sealer.verify_checkpoint(latest)


def test_rotation_old_links_keep_verifying_with_the_old_public_key(store, tmp_path):
    old_dir = tmp_path / "old"
    first = core_on(store, data_dir=old_dir)
    fill(first, 2)
    # Rotation: a new signing key (generated first), the old public key among the verify keys.
    generate_key_files(tmp_path / "new" / "keys" / "trace-signing.pem")
    rotated = core_on(store, data_dir=tmp_path / "new",
                      verify_key_files=(str(old_dir / "keys" / "trace-signing.pem.pub"),))
    rotated.checkpoints = first.checkpoints
    rotated.record_trace(WRITER, make_record("t-3"))
    assert rotated.verify_tenant(TENANT).ok
    assert {r.key_id for r in store.chain(TENANT)} == {first.sealer.signer.key_id, rotated.sealer.signer.key_id}
    # Without the old public key the old records no longer verify.
    unrotated = core_on(store, data_dir=tmp_path / "new")
    report = unrotated.verify_tenant(TENANT)
    assert not report.ok and report.first_broken_sequence == 1 and "UNKNOWN_KEY" in report.detail


def test_cli_checkpoint_then_verify_reports_a_truncated_tail(auth, tmp_path, metadata_for, capsys):
    from apps.cli.main import main

    data_dir = tmp_path / "cli"
    data_dir.mkdir()
    install_dev_issuer(auth, data_dir)
    with trace_service(auth, tmp_path / "trace") as (runner, stub, servicer):
        md = service_metadata(TENANT)
        for i in (1, 2, 3):
            stub.RecordTrace(pb.RecordTraceRequest(record=make_record(f"cli-{i}")), timeout=10, metadata=md)
        args = ["--tenant", TENANT, "--roles", "auditor", "--target", runner.address, "--data-dir", str(data_dir)]
        assert main(["trace", "checkpoint", *args]) == 0
        out = capsys.readouterr().out
        assert out.startswith("checkpoint: sequence 3 head ") and str(tmp_path / "trace" / "checkpoints") in out
        assert main(["trace", "verify", *args]) == 0
        assert "chain ok: 3 item(s) verified, signatures included; checked against checkpoint" in \
            capsys.readouterr().out
        store = servicer.core.store
        with store.engine.begin() as conn:
            bypass_all(conn, store.dialect)
            for table in ("trace_facets", "trace_queries", "trace_records"):
                conn.execute(sa.text(f"DELETE FROM {table} WHERE trace_id = 'cli-3'"))
            last = conn.execute(sa.text("SELECT record_hash FROM trace_records WHERE trace_id = 'cli-2'")).scalar_one()
            conn.execute(sa.text("UPDATE trace_chain_heads SET sequence = 2, record_hash = :h"), {"h": last})
        assert main(["trace", "verify", *args]) == 1
        out = capsys.readouterr().out
        assert "chain BROKEN at sequence 3: records missing at the end" in out
        assert "first missing sequence 3" in out


def test_the_scheduled_pass_verifies_every_tenant_and_checkpoints_moved_heads(core, store):
    fill(core, 2)
    assert core.checkpoint_all() == {TENANT: 2}
    assert core.checkpoint_all() == {}, "an unmoved head is not checkpointed again"
    assert core.checkpoint_age() is not None and core.checkpoint_age() < 60
    target = store.get(TENANT, "t-1")
    with store.engine.begin() as conn:
        _bypass(conn, store.dialect, "trace_records")
        conn.execute(sa.text("UPDATE trace_records SET signature = :s WHERE trace_id = 't-1'"),
                     {"s": target.signature[:-4] + "AAA="})
    before = counter(SIGNATURE_FAILURES, service="trace", kind="trace_link")
    core.record_trace(WRITER, make_record("t-3"))
    assert core.checkpoint_all() == {}, "a chain that no longer verifies is not checkpointed"
    assert counter(SIGNATURE_FAILURES, service="trace", kind="trace_link") == before + 1
    assert core.checkpoints.latest(TENANT)[0].sequence == 2


def test_the_review_backlog_counts_answers_waiting_for_re_review(core):
    from citetrace.kit.metrics import REVIEW_BACKLOG

    fill(core, 2)
    core.record_version_event(WRITER, "v" + "1" * 63, pb.VERSION_EVENT_KIND_SUPERSEDED, "v" + "3" * 63)
    assert core.review_backlog(dt.timedelta(days=1)) == 0, "not waiting longer than the setting yet"
    assert core.review_backlog(dt.timedelta(0)) == 2
    assert REVIEW_BACKLOG.labels(service="trace")._value.get() == 2
    core.record_review(REVIEWER, "t-1", pb.REVIEW_DECISION_ACCEPTED)
    assert core.review_backlog(dt.timedelta(0)) == 1


# --- never served: GetTrace over real gRPC refuses what does not verify (DATA_LOSS, exact reason) ---

def _get(stub, metadata_for, trace_id):
    from citetrace.kit.clients import error_info

    with pytest.raises(grpc.RpcError) as caught:
        stub.GetTrace(pb.GetTraceRequest(trace_id=trace_id), timeout=10,
                      metadata=metadata_for(TENANT, ("auditor",)))
    info = error_info(caught.value)
    return caught.value.code(), info.reason, caught.value.details()


@pytest.mark.parametrize("attack", ["rehashed record", "edited review", "redaction without event"])
def test_get_trace_never_serves_a_forged_record(trace, metadata_for, attack):
    _, stub, servicer = trace
    core = servicer.core
    store = core.store
    fill(core, 3)
    review = core.record_review(REVIEWER, "t-2", pb.REVIEW_DECISION_REJECTED, "wrong time")
    assert stub.GetTrace(pb.GetTraceRequest(trace_id="t-2"), timeout=10,
                         metadata=metadata_for(TENANT, ("auditor",))).record.trace_id == "t-2"
    target = store.get(TENANT, "t-2")
    with store.engine.begin() as conn:
        bypass_all(conn, store.dialect)
        if attack == "rehashed record":
            forged = make_record("t-2", created_at=target.created_at)
            forged.parts[0].answer_text = "No need to arrive early [S1]."
            body = C.body_bytes(forged)
            new_hash = C.record_hash(tenant_id=TENANT, trace_id="t-2", sequence=2, previous_hash=target.previous_hash,
                                     query_digest=target.query_digest, body=body)
            conn.execute(sa.text("UPDATE trace_records SET body = :b, record_hash = :h WHERE trace_id = 't-2'"),
                         {"b": body, "h": new_hash})
        elif attack == "edited review":
            conn.execute(sa.text("UPDATE trace_reviews SET decision = :d WHERE review_id = :r"),
                         {"d": pb.REVIEW_DECISION_ACCEPTED, "r": review.review_id})
        else:
            conn.execute(sa.text(REDACTED), {"yes": True})
    code, reason, details = _get(stub, metadata_for, "t-2")
    assert code == grpc.StatusCode.DATA_LOSS
    assert (reason, details.split(": ", 1)[1]) == {
        "rehashed record": ("TRACE_RECORD_TAMPERED", f"signature INVALID: the signature by key {core.sealer.signer.key_id} "
                            "does not match the signed content (rewritten behind the service: the hash was recomputed "
                            "without the trace signing key); it is not served (run `citetrace trace verify`)"),
        "edited review": ("TRACE_EVENT_TAMPERED", f"the review {review.review_id} differs from its chain link or has "
                          "none; it is not served (run `citetrace trace verify`)"),
        "redaction without event": ("TRACE_REDACTION_WITHOUT_EVENT", "its question is marked redacted without a "
                                    "redaction event; it is not served (run `citetrace trace verify`)"),
    }[attack]
    assert details.startswith("trace t-2 (sequence 2): ")
    # The untouched records are still served.
    assert stub.GetTrace(pb.GetTraceRequest(trace_id="t-1"), timeout=10,
                         metadata=metadata_for(TENANT, ("auditor",))).record.trace_id == "t-1"


def test_a_missing_key_is_not_replaced_while_the_store_holds_signed_items(store, tmp_path):
    from citetrace.signing import KeyFileError

    first = core_on(store, data_dir=tmp_path / "authority")
    fill(first, 1)
    (tmp_path / "authority" / "keys" / "trace-signing.pem").unlink()
    with pytest.raises(KeyFileError) as refused:
        core_on(store, data_dir=tmp_path / "authority")
    assert "is missing but the store holds records signed by " + first.sealer.signer.key_id in str(refused.value)
    assert not (tmp_path / "authority" / "keys" / "trace-signing.pem").exists()


def test_a_served_trace_service_checkpoints_periodically(auth, tmp_path, metadata_for):
    import time

    with trace_service(auth, tmp_path / "svc", checkpoint_interval_seconds=0.2) as (runner, stub, servicer):
        for i in (1, 2):
            stub.RecordTrace(pb.RecordTraceRequest(record=make_record(f"p-{i}")), timeout=10,
                             metadata=service_metadata(TENANT))
        deadline = time.monotonic() + 15
        latest = None
        while time.monotonic() < deadline:
            latest, _ = servicer.core.checkpoints.latest(TENANT)
            if latest is not None and latest.sequence == 2:
                break
            time.sleep(0.1)
        assert latest is not None and latest.sequence == 2
        assert (tmp_path / "svc" / "checkpoints" / TENANT).is_dir()
        report = stub.VerifyChain(pb.VerifyChainRequest(), timeout=10, metadata=metadata_for(TENANT, ("auditor",)))
        assert report.ok and report.checkpoint_sequence == 2
