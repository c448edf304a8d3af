"""citetrace replay end to end: the six real services in-process over gRPC, the sample corpus
ingested, questions asked through the orchestrator (which records their traces through the outbox),
then replayed: unchanged when nothing changed; after the cited sources are retired, the replay names
the passages that left the retrieved set and fails when an answer lost its support."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from pathlib import Path

import grpc
import pytest
from citetrace.common.v1 import common_pb2 as c
from citetrace.kit.auth import bearer_metadata, mint_token
from citetrace.kit.testing import install_dev_issuer, serving
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as orch_pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as orch_grpc
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc

from apps.cli.main import main

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "deploy" / "samples" / "corpus" / "acme-health"
TENANT = "acme-health"
QUESTIONS = ("How late can I cancel an appointment without paying a fee?",
             "Can I reschedule my follow-up visit?")


def _spec(name: str, data_dir: Path, auth, **extra):
    import importlib
    import importlib.util

    settings_mod = importlib.import_module(f"services.{name}.settings")
    # A service's assembly point: its bootstrap where it has one (issue 13), else its servicer module.
    assembly = "bootstrap" if importlib.util.find_spec(f"services.{name}.bootstrap") else "servicer"
    servicer = importlib.import_module(f"services.{name}.{assembly}")
    fields = {"port": 0, "metrics_port": -1, **extra}
    if "data_dir" in settings_mod.Settings.__dataclass_fields__:
        fields["data_dir"] = data_dir / name
        (data_dir / name).mkdir(parents=True, exist_ok=True)
    settings = settings_mod.Settings(**fields)
    if name == "orchestrator":
        return importlib.import_module("services.orchestrator.bootstrap").build_spec(settings, auth)
    return servicer.build_spec(settings)


@pytest.fixture(scope="module")
def world(tmp_path_factory, auth):
    # The session's issuer key: the CLI's replay mints the askers' tokens with it.
    data_dir = tmp_path_factory.mktemp("replay-e2e")
    install_dev_issuer(auth, data_dir)
    with contextlib.ExitStack() as stack:
        addresses = {}
        for name in ("retrieval", "scheduler_gateway", "generation"):
            addresses[name] = stack.enter_context(serving(_spec(name, data_dir, auth), auth)).address
        addresses["trace"] = stack.enter_context(serving(_spec(
            "trace", data_dir, auth, retrieval_target=addresses["retrieval"]), auth)).address
        addresses["citation_validator"] = stack.enter_context(serving(_spec(
            "citation_validator", data_dir, auth, retrieval_target=addresses["retrieval"]), auth)).address
        addresses["orchestrator"] = stack.enter_context(serving(_spec(
            "orchestrator", data_dir, auth, **{f"{n}_target": a for n, a in addresses.items()}), auth)).address
        (data_dir / "stack.json").write_text(json.dumps(
            {"services": {n: {"port": int(a.rsplit(":", 1)[1])} for n, a in addresses.items()}}))
        assert main(["ingest", "--data-dir", str(data_dir), str(CORPUS)]) == 0
        channels = {n: stack.enter_context(grpc.insecure_channel(a)) for n, a in addresses.items()}
        yield {"auth": auth, "data_dir": data_dir, "channels": channels}


def token(auth, roles, tenant=TENANT):
    return bearer_metadata(mint_token(auth, tenant_id=tenant, subject="e2e-replay", roles=list(roles)))


def replay(world, capsys, *extra):
    code = main(["replay", "--tenant", TENANT, "--roles", "auditor", "--data-dir", str(world["data_dir"]), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_replay_reports_unchanged_then_retired_sources_and_regressions(world, capsys):
    auth, channels = world["auth"], world["channels"]
    orchestrator = orch_grpc.OrchestratorServiceStub(channels["orchestrator"])
    traces = pb_grpc.TraceServiceStub(channels["trace"])
    as_of = dt.datetime.now(dt.UTC).replace(microsecond=0)
    asked = []
    for question in QUESTIONS:
        request = orch_pb.AskRequest(question=question)
        request.as_of.FromDatetime(as_of)
        answer = orchestrator.Ask(request, timeout=60, metadata=token(auth, ("patient",)))
        assert answer.trace_id  # its record is delivered from the outbox in the background
        asked.append(answer.trace_id)
    since = (as_of - dt.timedelta(seconds=1)).isoformat()

    code, out, err = replay(world, capsys, "--since", since)
    assert code == 0, out + err
    for trace_id in asked:
        assert f"{trace_id} -> " in out and "unchanged" in out.split(trace_id + " -> ")[1].splitlines()[0]
    assert "replayed 2 trace(s): 0 changed, 0 regressed, 0 not replayed" in err

    # The replays' own records name their origin and are not replayed again by default.
    replayed = json.loads(replay(world, capsys, "--since", since, "--json")[1])
    new_ids = {r["diff"]["new_trace_id"] for r in replayed}
    assert len(replayed) == 2 and not new_ids & set(asked)
    origin = traces.GetTrace(pb.GetTraceRequest(trace_id=replayed[0]["diff"]["new_trace_id"]), timeout=10,
                             metadata=token(auth, ("auditor",))).record
    assert origin.principal_ref == f"replay:{replayed[0]['trace_id']}"
    # The asker's roles, plus auditor: a past as_of is a replay, for reviewer/auditor only (issue 17 §5).
    assert sorted(origin.principal_roles) == ["auditor", "patient"]
    code, out, _ = replay(world, capsys, "--since", since, "--include-replays", "--json")
    assert len(json.loads(out)) > 2

    # Retire every version the first answer retrieved: the replay must see them leave.
    old = traces.GetTrace(pb.GetTraceRequest(trace_id=asked[0]), timeout=10,
                          metadata=token(auth, ("auditor",))).record
    retrieved = {h.passage.identity.passage_id: h.passage.identity.version_id
                 for p in old.parts for h in p.retrieval.retrieved}
    assert retrieved, "the policy part retrieved nothing"
    retrieval = ret_grpc.RetrievalServiceStub(channels["retrieval"])
    for version_id in set(retrieved.values()):
        retrieval.SetVersionStatus(ret_pb.SetVersionStatusRequest(version_id=version_id,
                                                                  status=c.VERSION_STATUS_RETIRED),
                                   timeout=10, metadata=token(auth, ("policy_admin",)))
    code, out, err = replay(world, capsys, "--trace-id", asked[0], "--json")
    [result] = json.loads(out)
    assert result["error"] == "" and result["diff"]["changed"]
    removed = {pid for part in result["diff"]["parts"] for pid in part["retrieved_removed"]}
    assert removed == set(retrieved)
    answered = {c.PART_OUTCOME_ANSWERED, c.PART_OUTCOME_PARTIALLY_ANSWERED}
    if any(p.outcome in answered for p in old.parts):
        assert code == 1 and result["diff"]["regressed"]
        assert any("supported answer became unsupported" in r for r in result["diff"]["regressions"])
    else:  # the validator could not confirm the original answer: nothing to lose
        assert code == 0
    # The original record was not rewritten by any of this.
    again = traces.GetTrace(pb.GetTraceRequest(trace_id=asked[0]), timeout=10, metadata=token(auth, ("auditor",)))
    assert again.record.record_hash == old.record_hash
