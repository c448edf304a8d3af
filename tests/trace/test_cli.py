"""citetrace trace show/export/list/verify/review against real services (trace, and retrieval for
the export's retrievability check), in-process over gRPC."""

from __future__ import annotations

import datetime as dt
import json

import grpc
import pytest
import sqlalchemy as sa
from citetrace.common.v1 import common_pb2 as c
from citetrace.kit.auth import mint_token
from citetrace.kit.testing import install_dev_issuer, service_metadata, serving
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from citetrace.trace.v1 import trace_service_pb2 as pb
from tracefixtures import CANCEL_RULE, MRI_RULE, TENANT, make_record, trace_service, ts

from apps.cli.main import main


@pytest.fixture
def stack(auth, tmp_path, metadata_for):
    data_dir = tmp_path / "cli"
    data_dir.mkdir()
    install_dev_issuer(auth, data_dir)  # what `citetrace up` creates
    with trace_service(auth, tmp_path / "trace") as (runner, stub, servicer):
        md = service_metadata(TENANT)
        stub.RecordTrace(pb.RecordTraceRequest(record=make_record("cli-1")), timeout=10, metadata=md)
        stub.RecordTrace(pb.RecordTraceRequest(record=make_record(
            "cli-2", cited=(CANCEL_RULE,), retrieved=(CANCEL_RULE,), outcome=c.PART_OUTCOME_PARTIALLY_ANSWERED,
            reasons=(c.FAILURE_REASON_UNSUPPORTED_CLAIM,))), timeout=10, metadata=md)
        yield {"target": runner.address, "data_dir": data_dir, "servicer": servicer, "stub": stub}


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def common(stack, roles="auditor"):
    return ["--tenant", TENANT, "--roles", roles, "--target", stack["target"], "--data-dir", str(stack["data_dir"])]


def test_show_prints_the_record_end_to_end(stack, capsys):
    code, out, _ = run(capsys, "trace", "show", "cli-1", *common(stack))
    assert code == 0
    assert "question: When should I arrive for my MRI?" in out
    assert "outcome ANSWERED" in out and "sequence 1" in out
    assert "retrieved set (2):" in out and "#1 S1 fused" in out and "#2 S2" in out
    assert "[cited]" in out
    i = MRI_RULE.identity
    assert f"-> {i.document_id} version {i.version_id} chars {i.start}-{i.end} sha256 {i.content_sha256}" in out
    assert "anchor 'Arrival > Imaging'" in out
    assert "c1 [ARRIVAL_RULE] SUPPORTED (0.90) shown" in out
    assert "offered: 2 passages" in out and "generator extractive/extractive-1" in out
    assert "timings: retrieval.search 4.2 ms" in out
    code, out, _ = run(capsys, "trace", "show", "cli-1", "--json", *common(stack))
    shown = json.loads(out)
    assert shown["record"]["trace_id"] == "cli-1"
    assert shown["record"]["parts"][0]["citations"][0]["passage_id"] == i.passage_id


def test_show_hides_query_text_from_staff_and_reports_not_found_for_other_tenants(stack, capsys):
    code, out, _ = run(capsys, "trace", "show", "cli-1", *common(stack, roles="staff"))
    assert code == 0 and "question: [hidden" in out and "MRI?" not in out
    with pytest.raises(SystemExit) as exited:
        main(["trace", "show", "cli-1", "--tenant", "cedar-care", "--roles", "auditor", "--target", stack["target"],
              "--data-dir", str(stack["data_dir"])])
    assert exited.value.code == 1
    assert "NOT_FOUND [TRACE_NOT_FOUND]" in capsys.readouterr().err


def test_list_with_filters(stack, capsys):
    code, out, _ = run(capsys, "trace", "list", *common(stack))
    assert code == 0 and out.index("cli-2") < out.index("cli-1")
    code, out, _ = run(capsys, "trace", "list", "--outcome", "partially_answered", *common(stack))
    assert "cli-2" in out and "cli-1" not in out
    code, out, _ = run(capsys, "trace", "list", "--reason", "UNSUPPORTED_CLAIM", "--json", *common(stack))
    assert [t["trace_id"] for t in json.loads(out)] == ["cli-2"]
    code, out, _ = run(capsys, "trace", "list", "--document", MRI_RULE.identity.document_id, *common(stack))
    assert "cli-1" in out and "cli-2" not in out
    code, out, _ = run(capsys, "trace", "list", "--since", "2000-01-01T00:00:00Z", "--until", "2000-01-02", *common(stack))
    assert "cli-" not in out
    code, out, _ = run(capsys, "trace", "list", "--limit", "1", *common(stack))
    assert out.count("cli-") == 1


def test_verify_reports_a_row_edited_behind_the_services_back(stack, capsys):
    code, out, _ = run(capsys, "trace", "verify", *common(stack))
    assert code == 0 and "chain ok: 2 item(s) verified" in out
    store = stack["servicer"].core.store
    with store.engine.begin() as conn:
        conn.exec_driver_sql("DROP TRIGGER trace_records_no_update")
        conn.execute(sa.text("UPDATE trace_records SET outcome = :o WHERE trace_id = 'cli-2'"),
                     {"o": c.PART_OUTCOME_ANSWERED})
    code, out, _ = run(capsys, "trace", "verify", *common(stack))
    assert code == 1
    assert "chain BROKEN at sequence 2 (trace cli-2)" in out and "indexed columns" in out


def test_review_from_the_command_line(stack, capsys):
    code, out, _ = run(capsys, "trace", "review", "cli-1", "--decision", "accepted", "--note", "matches S1",
                       *common(stack, roles="reviewer"))
    assert code == 0
    review = json.loads(out)
    assert review["decision"] == "REVIEW_DECISION_ACCEPTED" and review["rubric_note"] == "matches S1"
    code, out, _ = run(capsys, "trace", "show", "cli-1", *common(stack))
    assert "review " in out and "ACCEPTED by cli-user" in out
    assert "needs re-review: no" in out


def test_version_event_flags_answers_for_re_review(stack, capsys):
    version = MRI_RULE.identity.version_id
    code, out, _ = run(capsys, "trace", "version-event", version, "--kind", "retired",
                       *common(stack, roles="policy_admin"))
    assert code == 0 and f"1 answer(s) cited {version}" in out
    code, out, _ = run(capsys, "trace", "list", "--needs-review", *common(stack))
    assert "cli-1" in out and "NEEDS-REVIEW" in out and "cli-2" not in out


@pytest.mark.slow
def test_export_writes_a_receipt_and_names_sources_no_longer_retrievable(stack, auth, tmp_path, capsys):
    from services.retrieval.bootstrap import build_spec
    from services.retrieval.settings import Settings

    spec = build_spec(Settings(port=0, metrics_port=-1, data_dir=tmp_path / "retrieval"))
    admin = (("authorization", "Bearer " + mint_token(auth, tenant_id=TENANT, subject="admin",
                                                       roles=["policy_admin"])),)
    with serving(spec, auth) as retrieval, grpc.insecure_channel(retrieval.address) as channel:
        rstub = ret_grpc.RetrievalServiceStub(channel)

        def ingest(doc_id: str, text: str):
            return rstub.IngestDocument(ret_pb.IngestDocumentRequest(
                document=c.Document(tenant_id=TENANT, document_id=doc_id, source_class="preparation_instructions",
                                    title=f"{doc_id} (synthetic)"),
                text=text, status=c.VERSION_STATUS_APPROVED, valid_from=ts(dt.datetime(2025, 1, 1)),
                roles=["patient", "staff"], intents=[c.INTENT_ARRIVAL_PREPARATION], locale="en"), timeout=60, metadata=admin)

        kept = ingest("acme-export-kept", "# Arrival\n\nArrive 30 minutes before an MRI appointment (synthetic).\n")
        gone = ingest("acme-export-gone", "# Fees\n\nA late cancellation fee applies (synthetic).\n")
        rstub.SetVersionStatus(ret_pb.SetVersionStatusRequest(version_id=gone.version.version_id,
                                                              status=c.VERSION_STATUS_RETIRED),
                               timeout=10, metadata=admin)

        def as_passage(identity):
            return c.Passage(identity=identity, text="(synthetic)", title="t")

        live, retired = as_passage(kept.passages[0]), as_passage(gone.passages[0])
        unknown = c.Passage(identity=c.PassageIdentity(passage_id="f" * 64, tenant_id=TENANT, document_id="acme-x",
                                                       version_id="e" * 64, start=0, end=5))
        record = make_record("cli-export", cited=(live, retired, unknown), retrieved=(live, retired, unknown))
        stack["stub"].RecordTrace(pb.RecordTraceRequest(record=record), timeout=10,
                                  metadata=service_metadata(TENANT))
        out_file = tmp_path / "receipt.json"
        code, out, err = run(capsys, "trace", "export", "cli-export", "--out", str(out_file),
                             "--retrieval-target", retrieval.address, *common(stack))
    assert code == 0, err
    assert "3 citations, 2 no longer retrievable" in out
    receipt = json.loads(out_file.read_text())
    assert receipt["receipt_version"] == "citetrace.receipt.v1"
    assert receipt["retrievability"]["checked"] is True
    missing = {m["passage_id"]: m["reason"] for m in receipt["retrievability"]["not_retrievable"]}
    assert missing == {retired.identity.passage_id: "RETIRED", "f" * 64: "NOT_FOUND"}
    by_pid = {e["passage_id"]: e for e in receipt["citations"]}
    assert by_pid[live.identity.passage_id]["retrievable_now"] is True
    assert by_pid[live.identity.passage_id]["content_sha256"] == live.identity.content_sha256
    assert by_pid[live.identity.passage_id]["claim_ids"] == ["c1"]
    assert receipt["chain"]["record_hash"] == receipt["record"]["record_hash"]
    # Every identity of the record survives in the receipt.
    assert receipt["record"]["parts"][0]["retrieval"]["retrieved"][1]["passage"]["identity"]["version_id"] == \
        gone.version.version_id


def test_export_without_retrieval_says_it_could_not_check(stack, tmp_path, capsys):
    out_file = tmp_path / "receipt.json"
    code, out, err = run(capsys, "trace", "export", "cli-1", "--out", str(out_file),
                         "--retrieval-target", "127.0.0.1:1", *common(stack))
    assert code == 0
    receipt = json.loads(out_file.read_text())
    assert receipt["retrievability"]["checked"] is False and "UNAVAILABLE" in receipt["retrievability"]["error"]
    assert "could not check retrievability" in err
