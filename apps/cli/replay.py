"""citetrace replay: re-run stored questions through the current pipeline with their original as_of
and report per trace what changed (services/trace/replay.py does the comparison).

For each stored record (newest `--limit`, optionally `--since`/`--until`, or the given `--trace-id`s)
it reads the record (a reviewer or auditor token is needed to read the question), asks the
orchestrator the same question with the record's `as_of` and locale, on behalf of a principal with
the record's tenant and roles (a token minted with the local stack's or the deployment's signing
key; with only `--token`, that token is used for the Ask too), then reads the new record back from
the trace service. When the new record is not readable (not delivered yet), the answer envelope is
compared instead, without the retrieved set.

Replays are asked as subject `replay:<original trace ID>`, so their own records say where they came
from; records of earlier replays are skipped unless `--include-replays` (or named by `--trace-id`).

Exit status: 0 nothing regressed; 1 at least one regression (a supported answer became unsupported
or an abstention became an answer); 3 no regression, but some traces could not be replayed.
Replayed questions are new answers and get their own trace records.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import grpc
from citetrace.kit.auth import AUTH_PREFIX, AuthSettings, bearer_metadata, mint_token
from citetrace.kit.settings import load_settings
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as orch_pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as orch_grpc
from citetrace.trace.v1 import trace_service_pb2 as pb

from apps.cli.common import dev_issuer, grpc_channel, rpc_failure, target
from apps.cli.trace import add_auth, parse_time, rpc, token_of, trace_stub

REPLAY_SUBJECT = "replay:"
EXIT_REGRESSED = 1
EXIT_INCOMPLETE = 3


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("replay", help="re-run stored questions and report what changed")
    parser.add_argument("--since", help="only records created at or after this time (ISO 8601)")
    parser.add_argument("--until", help="only records created before this time (ISO 8601)")
    parser.add_argument("--trace-id", action="append", default=[], help="replay this record (repeatable)")
    parser.add_argument("--limit", type=int, default=100, help="at most this many records (default 100)")
    parser.add_argument("--orchestrator-target", help="orchestrator address (default: the local stack's)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per Ask (default 60)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--include-replays", action="store_true", help="also replay records of earlier replays")
    add_auth(parser)
    parser.set_defaults(func=run)


def signing_settings(args: argparse.Namespace) -> AuthSettings | None:
    if any(key.startswith(AUTH_PREFIX) for key in os.environ):
        return load_settings(AuthSettings, AUTH_PREFIX)
    issuer = dev_issuer(args.data_dir)
    return AuthSettings(rs256_public_key_file=issuer[1], rs256_private_key_file=issuer[0]) if issuer else None


def _replay_roles(roles) -> list[str]:
    """The asker's roles plus auditor: an as_of further back than the orchestrator's clock-skew
    tolerance is a replay, which only reviewer and auditor may ask for (issue 17 §5)."""
    out = list(roles)
    return out if {"reviewer", "auditor"} & set(out) else [*out, "auditor"]


def ask_token(signing: AuthSettings | None, fallback: str, old: pb.TraceRecord) -> str:
    """A token for the original asker's tenant and roles, or the caller's token without a key."""
    if signing is None:
        return fallback
    try:
        return mint_token(signing, tenant_id=old.tenant_id, subject=f"{REPLAY_SUBJECT}{old.trace_id}",
                          roles=_replay_roles(old.principal_roles), ttl_seconds=600)
    except Exception:  # noqa: BLE001 - no private key (RS256 verify-only): fall back
        return fallback


def locale_of(old: pb.TraceRecord) -> str:
    for part in old.parts:
        if part.retrieval.settings.filters.locale:
            return part.retrieval.settings.filters.locale
    return ""


def run(args: argparse.Namespace) -> int:
    from services.trace.replay import record_from_answer, render, replay

    token = token_of(args)
    traces = trace_stub(args)
    orchestrator = orch_grpc.OrchestratorServiceStub(
        grpc_channel(args.orchestrator_target or target(args.data_dir, "orchestrator")))
    signing = signing_settings(args)

    ids = list(args.trace_id)
    if not ids:
        request = pb.ListTracesRequest(page_size=min(500, args.limit or 500))
        if args.since:
            request.created_after.CopyFrom(parse_time(args.since, "--since"))
        if args.until:
            request.created_before.CopyFrom(parse_time(args.until, "--until"))
        while True:
            page = rpc(traces.ListTraces, request, token)
            ids += [t.trace_id for t in page.traces]
            if not page.next_page_token or (args.limit and len(ids) >= args.limit):
                break
            request.page_token = page.next_page_token
        ids = list(reversed(ids[:args.limit] if args.limit else ids))  # oldest first

    named = bool(args.trace_id)

    def records():
        for trace_id in ids:
            record = rpc(traces.GetTrace, pb.GetTraceRequest(trace_id=trace_id), token).record
            if named or args.include_replays or not record.principal_ref.startswith(REPLAY_SUBJECT):
                yield record

    def ask(old: pb.TraceRecord):
        request = orch_pb.AskRequest(question=old.query.raw, locale=locale_of(old))
        request.as_of.CopyFrom(old.as_of if old.HasField("as_of") else old.created_at)
        try:
            answer = orchestrator.Ask(request, timeout=args.timeout,
                                      metadata=bearer_metadata(ask_token(signing, token, old)))
        except grpc.RpcError as err:
            raise RuntimeError(f"Ask failed: {rpc_failure(err, 'orchestrator')}") from err
        if answer.trace_id:
            # The orchestrator delivers the record from its durable outbox in the background
            # (trace_delivered False): give it a few seconds before falling back to the answer.
            patience = time.monotonic() + (30 if answer.trace_delivered else 5)
            while True:
                try:
                    new = traces.GetTrace(pb.GetTraceRequest(trace_id=answer.trace_id), timeout=30,
                                          metadata=bearer_metadata(token)).record
                    return new, True
                except grpc.RpcError as err:
                    if err.code() != grpc.StatusCode.NOT_FOUND or time.monotonic() > patience:
                        break
                    time.sleep(0.05)
        return record_from_answer(answer), False

    results = replay(records(), ask)
    regressed = [r for r in results if r.diff is not None and r.diff.regressed]
    incomplete = [r for r in results if r.error or r.skipped]
    if args.json:
        print(json.dumps([_as_json(r) for r in results], indent=2))
    else:
        for result in results:
            print("\n".join(render(result)))
        changed = sum(1 for r in results if r.diff is not None and r.diff.changed)
        print(f"replayed {len(results)} trace(s): {changed} changed, {len(regressed)} regressed, "
              f"{len(incomplete)} not replayed", file=sys.stderr)
    if regressed:
        return EXIT_REGRESSED
    return EXIT_INCOMPLETE if incomplete else 0


def _as_json(result) -> dict:
    out = {"trace_id": result.trace_id, "error": result.error, "skipped": result.skipped}
    if result.diff is not None:
        out["diff"] = dataclasses.asdict(result.diff)
        out["diff"]["regressed"] = result.diff.regressed
        out["diff"]["changed"] = result.diff.changed
    return out

