"""citetrace appointments list/show and citetrace propose show/list/confirm/reject against a real
gateway over gRPC (the command-line path a patient and a desk use)."""

from __future__ import annotations

import grpc
import pytest
from citetrace.kit.testing import install_dev_issuer, serving

from apps.cli.main import main
from services.scheduler_gateway.bootstrap import build_spec
from services.scheduler_gateway.settings import Settings

from .conftest import NOW, FixedClock, load, world
from .workflow_fixtures import assistant_for, needs_review, reschedule


@pytest.fixture
def cli_gateway(auth, sqlite_url, tmp_path, monkeypatch):
    for key in list(__import__("os").environ):
        if key.startswith("CITETRACE_AUTH_"):
            monkeypatch.delenv(key)
    install_dev_issuer(auth, tmp_path)
    load(sqlite_url, world())
    spec = build_spec(Settings(port=0, metrics_port=-1, database_url=sqlite_url, expiry_sweep_seconds=0),
                      clock=FixedClock(NOW))
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc

        yield pb_grpc.SchedulerGatewayServiceStub(channel), ["--target", runner.address, "--data-dir", str(tmp_path)]


def run(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_patient_lists_and_confirms_from_the_command_line(auth, cli_gateway, capsys):
    stub, common = cli_gateway
    patient = ["--tenant", "acme-health", "--subject", "pat-1", *common]
    code, out, _ = run(capsys, "appointments", "list", *patient)
    assert code == 0
    assert out.splitlines()[0].startswith("appt-1  Wed 2026-12-02 10:00 EST  cardiology follow_up  "
                                          "Northside Family Clinic [acme-northside]")
    assert "1 appointment(s)" in out
    proposal = reschedule(stub, assistant_for(auth, "pat-1"))
    code, out, _ = run(capsys, "propose", "show", proposal.proposal_id, *patient)
    assert code == 0 and f"proposal {proposal.proposal_id} (reschedule) PENDING" in out
    assert "option 1: Tue 2026-12-01 09:00 EST" in out and f"citetrace propose confirm {proposal.proposal_id}" in out
    code, out, _ = run(capsys, "propose", "confirm", proposal.proposal_id, *patient)
    assert code == 0 and out.startswith("CONFIRMED: the change is done")
    code, out, _ = run(capsys, "appointments", "show", "appt-1", *patient)
    assert "Tue 2026-12-01 09:00 EST" in out and "v2" in out
    # Another patient gets NOT_FOUND, with the reason, and exit code 1.
    code, _, err = run(capsys, "appointments", "show", "appt-1", "--tenant", "acme-health", "--subject", "pat-2",
                       *common)
    assert code == 1 and "NOT_FOUND [APPOINTMENT_NOT_FOUND]" in err


def test_staff_work_the_review_queue(auth, cli_gateway, capsys):
    stub, common = cli_gateway
    task = reschedule(stub, assistant_for(auth, "pat-1"), consequences=[needs_review()])
    code, _, err = run(capsys, "propose", "confirm", task.proposal_id, "--tenant", "acme-health", "--subject", "pat-1",
                       *common)
    assert code == 1 and "REVIEW_BY_STAFF_REQUIRED" in err
    staff = ["--tenant", "acme-health", "--roles", "staff", "--subject", "desk-7", *common]
    code, out, _ = run(capsys, "propose", "list", "--review", *staff)
    assert code == 0 and task.proposal_id in out and "review task for staff" in out
    code, out, _ = run(capsys, "propose", "reject", task.proposal_id, "--note", "please call the desk", *staff)
    assert code == 0 and "REJECTED" in out and "decided by desk-7: please call the desk" in out
