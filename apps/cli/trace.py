"""citetrace trace show|export|list|verify|review|retention: read the evidence record of an answer.

Every subcommand authenticates with `--token TOKEN` (or $CITETRACE_TOKEN), or mints a development
token from the local stack's secret with `--tenant T --roles R1,R2` (default roles: auditor).
Reading query text needs reviewer or auditor; passage text needs a role that may read the source.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import grpc
from citetrace.common.v1 import appointments_pb2, common_pb2, route_pb2
from citetrace.kit.clients import call
from citetrace.kit.timestamps import from_timestamp, iso_z, to_timestamp
from citetrace.receipts import build_receipt, check_retrievable, cited_passage_ids, to_dict
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc
from citetrace.vocab import INTENT
from citetrace.vocab import enum_label as enum_name
from google.protobuf import json_format, timestamp_pb2

from apps.cli.common import (
    add_data_dir,
    dev_token,
    fail,
    grpc_channel,
    rpc_failure,
    split_list,
    target,
    time_arg,
)

# --- shared plumbing -------------------------------------------------------------------------------

def add_auth(parser: argparse.ArgumentParser, default_roles: str = "auditor") -> None:
    parser.add_argument("--tenant", help="tenant of the development token (with --roles)")
    parser.add_argument("--roles", default=default_roles, help=f"comma-separated roles (default: {default_roles})")
    parser.add_argument("--token", default=os.environ.get("CITETRACE_TOKEN"),
                        help="bearer token to use instead of a development token (or $CITETRACE_TOKEN)")
    parser.add_argument("--target", help="trace service address (default: the local stack's)")
    add_data_dir(parser)


def token_of(args: argparse.Namespace) -> str:
    if args.token:
        return args.token
    if not args.tenant:
        fail("give --tenant (and --roles) for a development token, or --token")
    return dev_token(args.data_dir, args.tenant, split_list(args.roles))


def trace_stub(args: argparse.Namespace) -> pb_grpc.TraceServiceStub:
    return pb_grpc.TraceServiceStub(grpc_channel(args.target or target(args.data_dir, "trace")))


def rpc(method, request, token: str, timeout: float = 30.0, not_found_patience: float = 0.0):
    """Calls a trace service method; a failure ends the command with its code and reason.
    `not_found_patience`: seconds during which NOT_FOUND is retried (a record just answered may
    still be in the orchestrator's outbox, delivered in the background within milliseconds)."""
    patience = time.monotonic() + not_found_patience
    while True:
        try:
            # kit.clients.call: the token, and over plaintext the CLI's claimed identity
            return call(method, request, timeout=timeout, token=token)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.NOT_FOUND and time.monotonic() < patience:
                time.sleep(0.1)
                continue
            fail(rpc_failure(err, "trace"), code=1)


def outcome_name(value: int) -> str:
    return enum_name(common_pb2.PartOutcome, value, "PART_OUTCOME_")


def when(ts: timestamp_pb2.Timestamp) -> str:
    if not ts.seconds and not ts.nanos:
        return "-"
    return iso_z(from_timestamp(ts))


def parse_time(value: str, flag: str = "time") -> timestamp_pb2.Timestamp:
    """A --since/--until style argument (without an offset it is UTC)."""
    return to_timestamp(time_arg(value, flag, naive_is_utc=True))


# --- registration ------------------------------------------------------------------------------------

def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("trace", help="read, export, list and verify evidence records")
    sub = parser.add_subparsers(dest="trace_command", required=True, metavar="SUBCOMMAND")

    show = sub.add_parser("show", help="print one record end to end")
    show.add_argument("trace_id")
    show.add_argument("--json", action="store_true", help="print the GetTrace response as JSON")
    add_auth(show)
    show.set_defaults(func=run_show)

    export = sub.add_parser("export", help="write a self-contained JSON receipt of one record")
    export.add_argument("trace_id")
    export.add_argument("--out", type=Path, help="file to write (default: stdout)")
    export.add_argument("--retrieval-target", help="retrieval service address (default: the local stack's)")
    add_auth(export)
    export.set_defaults(func=run_export)

    listing = sub.add_parser("list", help="list records, newest first, with filters")
    listing.add_argument("--outcome", help="e.g. ANSWERED, ABSTAINED_NO_EVIDENCE")
    listing.add_argument("--reason", help="failure reason, e.g. CITATION_GAP")
    listing.add_argument("--since", help="created at or after (ISO 8601)")
    listing.add_argument("--until", help="created before (ISO 8601)")
    listing.add_argument("--document", help="cited document ID")
    listing.add_argument("--version", help="cited version ID")
    listing.add_argument("--needs-review", action="store_true", help="only answers needing re-review")
    listing.add_argument("--limit", type=int, default=100, help="at most this many (default 100, 0 = all)")
    listing.add_argument("--json", action="store_true")
    add_auth(listing)
    listing.set_defaults(func=run_list)

    verify = sub.add_parser("verify", help="walk the tenant's hash chain and report the first broken link")
    add_auth(verify)
    verify.set_defaults(func=run_verify)
    checkpoint = sub.add_parser("checkpoint", help="verify the tenant's chain and write its head as a signed "
                                "checkpoint outside the trace database")
    add_auth(checkpoint)
    checkpoint.set_defaults(func=run_checkpoint)

    review = sub.add_parser("review", help="record a review decision on one record")
    review.add_argument("trace_id")
    review.add_argument("--decision", required=True, choices=("accepted", "rejected", "needs-change"))
    review.add_argument("--note", default="", help="rubric note")
    review.add_argument("--record-hash", default="", help="the answer version reviewed (default: as stored)")
    add_auth(review, default_roles="reviewer")
    review.set_defaults(func=run_review)

    event = sub.add_parser("version-event",
                           help="record that a version was superseded or retired (its answers need re-review)")
    event.add_argument("version_id")
    event.add_argument("--kind", required=True, choices=("superseded", "retired"))
    event.add_argument("--replaced-by", default="", help="the version that replaced it")
    add_auth(event, default_roles="policy_admin")
    event.set_defaults(func=run_version_event)

    outbox = sub.add_parser("outbox", help="inspect the orchestrator's durable trace outbox (and deliver it)")
    outbox.add_argument("--path", type=Path, help="outbox file (default: DATA_DIR/orchestrator/trace-outbox.sqlite)")
    outbox.add_argument("--requeue-dead", action="store_true", help="move dead letters back to pending")
    outbox.add_argument("--flush", action="store_true",
                        help="deliver pending records now (needs the signing key of the deployment or stack)")
    outbox.add_argument("--target", help="trace service address (default: the local stack's)")
    add_data_dir(outbox)
    outbox.set_defaults(func=run_outbox)

    retention = sub.add_parser("retention", help="redact query text older than the retention period")
    retention.add_argument("--days", type=int, default=0, help="override the configured period")
    add_auth(retention)
    retention.set_defaults(func=run_retention)


# --- show --------------------------------------------------------------------------------------------

def run_show(args: argparse.Namespace) -> int:
    reply = rpc(trace_stub(args).GetTrace, pb.GetTraceRequest(trace_id=args.trace_id), token_of(args),
                not_found_patience=3.0)
    if args.json:
        print(json_format.MessageToJson(reply, preserving_proto_field_name=True, indent=2))
    else:
        print(render(reply))
    return 0


def _short(value: str, n: int = 12) -> str:
    return value if len(value) <= n else value[:n] + "…"


def render(reply: pb.GetTraceResponse) -> str:
    rec = reply.record
    out: list[str] = []
    add = out.append
    add(f"trace {rec.trace_id}  tenant {rec.tenant_id}  created {when(rec.created_at)}  "
        f"outcome {outcome_name(rec.outcome)}")
    add(f"chain: sequence {rec.sequence}  record_hash {rec.record_hash}  previous_hash {rec.previous_hash}")
    add(f"needs re-review: {'yes' if rec.needs_review else 'no'}  source policy: {rec.source_policy_version or '-'}")
    add(f"principal: {rec.principal_ref or '-'}  roles: {','.join(rec.principal_roles) or '-'}  "
        f"as_of: {when(rec.as_of)}")
    if rec.query.redacted:
        add("question: [redacted by retention]")
    elif not rec.query.raw and not rec.query.normalized:
        add("question: [hidden: reading query text needs the reviewer or auditor role]")
    else:
        add(f"question: {rec.query.raw}")
        add(f"normalized: {rec.query.normalized}")
    route = rec.route
    add(f"route: in_scope={'yes' if route.in_scope else 'no'} ({route.scope_reason or '-'})  "
        f"router {route.router_version or '-'}  intents: "
        + (", ".join(enum_name(common_pb2.Intent, i, "INTENT_") for i in route.intents) or "-"))
    for entity in route.entities:
        add(f"  entity {entity.kind}: {entity.surface!r} -> {entity.value} ({entity.confidence:.2f}) "
            f"{entity.explanation}")
    for explanation in route.explanations:
        add(f"  why: {explanation}")
    for part in rec.parts:
        out.extend(render_part(part))
    if rec.timings:
        add("timings: " + ", ".join(f"{t.stage} {t.duration_ms:.1f} ms" for t in rec.timings))
    corpus = rec.corpus
    add(f"corpus: backend {corpus.backend or '-'}  index generation {corpus.index_generation or '-'}  "
        f"versions {', '.join(_short(v) for v in corpus.version_ids) or '-'}")
    for review in reply.reviews:
        add(f"review {review.review_id}: {enum_name(pb.ReviewDecision, review.decision, 'REVIEW_DECISION_')} "
            f"by {review.reviewer_ref} at {when(review.created_at)} on answer {_short(review.answer_record_hash)} "
            f"evidence {', '.join(_short(v) for v in review.evidence_version_ids) or '-'}"
            + (f" — {review.rubric_note}" if review.rubric_note else ""))
    for redaction in reply.redactions:
        add(f"redaction at {when(redaction.redacted_at)}: {redaction.reason}")
    for link in reply.links:
        out.extend(render_link(link))
    return "\n".join(out)


def render_link(link: pb.ChainLink) -> list[str]:
    """A chain link about this trace: a workflow action (proposal made, confirmed, ...)."""
    head = f"chain link {link.sequence} {link.kind} {link.link_id}  link_hash {_short(link.link_hash)}"
    if not link.HasField("action"):
        return [head]
    event, proposal = link.action, link.action.proposal
    kind = enum_name(pb.ActionEventKind, event.kind, "ACTION_EVENT_KIND_").lower()
    lines = [f"{head}\n  action {kind} of proposal {event.proposal_id or '-'} by {event.actor_ref or '-'} at "
             f"{when(event.occurred_at)}" + (f" [{proposal.outcome_reason}]" if proposal.outcome_reason else "")]
    if proposal.HasField("appointment"):
        lines.append(f"  appointment {proposal.appointment.appointment_id} v{proposal.appointment.version}")
    if event.HasField("appointment_after"):
        after = event.appointment_after
        lines.append(f"  appointment after: {after.appointment_id} v{after.version} slot {after.slot_id}")
    if proposal.options:
        lines.append("  offered: " + ", ".join(f"{o.slot_id} v{o.version}" for o in proposal.options))
    if event.HasField("slot"):
        lines.append(f"  slot: {event.slot.slot_id} v{event.slot.version}")
    for consequence in proposal.consequences:
        cited = ", ".join(render_citation(c) for c in consequence.citations) or "-"
        lines.append(f"  consequence {enum_name(appointments_pb2.ConsequenceKind, consequence.kind, 'CONSEQUENCE_KIND_')}: "
                     f"{consequence.text} [{cited}]")
    return lines


def render_part(part: pb.PartRecord) -> list[str]:
    out: list[str] = []
    add = out.append
    add("")
    add(f"part {part.part_id} {enum_name(route_pb2.PartKind, part.kind, 'PART_KIND_')} "
        f"intent {enum_name(common_pb2.Intent, part.intent, 'INTENT_')}: outcome {outcome_name(part.outcome)}  "
        f"next action {enum_name(common_pb2.NextAction, part.next_action, 'NEXT_ACTION_')}")
    cited_ids = {c.passage_id for c in part.citations}
    if part.HasField("retrieval"):
        s = part.retrieval.settings
        f = s.filters
        add(f"  retrieval: backend {s.backend or '-'} generation {s.index_generation or '-'} k={s.k} "
            f"candidates={s.candidate_k} fusion {s.fusion_method or '-'} rrf_k={s.rrf_k} "
            f"weights lexical={s.lexical_weight:g} vector={s.vector_weight:g} model {s.embedding_model_id or '-'}")
        add(f"  filters: roles={','.join(f.roles) or '-'} locations={','.join(f.location_ids) or 'all'} "
            f"intents={','.join(INTENT.name_or(i, str(i)) for i in f.intents) or '-'} locale={f.locale or '-'} "
            f"status={enum_name(common_pb2.VersionStatus, f.status, 'VERSION_STATUS_')} "
            f"effective_at={when(f.effective_at)}")
        add(f"  retrieved set ({len(part.retrieval.retrieved)}):")
        for hit in part.retrieval.retrieved:
            i = hit.passage.identity
            mark = "  [cited]" if i.passage_id in cited_ids else ""
            add(f"    #{hit.fused_rank} {hit.label or '-'} fused {hit.fused_score:.4f} "
                f"lexical {hit.lexical_score:.3f} (#{hit.lexical_rank}) vector {hit.vector_score:.3f} "
                f"(#{hit.vector_rank})  {i.document_id} @ {_short(i.version_id)} [{i.start},{i.end}) "
                f"{i.source_anchor!r} passage {_short(i.passage_id)}{mark}")
    if part.HasField("generation"):
        g = part.generation
        add(f"  offered: {g.passages_offered} passages, {g.chars_offered} chars, labels "
            f"{','.join(g.labels_offered) or '-'}; generator {g.generator.backend or '-'}/"
            f"{g.generator.model_id or '-'} prompt {g.generator.prompt_version or '-'} attempts {g.attempts}")
    if part.claims:
        add("  claims:")
    for claim_record in part.claims:
        claim, validation = claim_record.claim, claim_record.validation
        add(f"    {claim.claim_id} [{enum_name(common_pb2.ClaimType, claim.claim_type, 'CLAIM_TYPE_')}] "
            f"{enum_name(common_pb2.SupportVerdict, validation.support, 'SUPPORT_VERDICT_')} "
            f"({validation.support_score:.2f}) {'shown' if claim_record.shown else 'withheld'} "
            f"attempt {claim_record.attempt}: {claim.text!r} evidence {','.join(claim.evidence_labels) or '-'}")
        if validation.support_reason:
            add(f"       why: {validation.support_reason}")
        for finding in validation.findings:
            add(f"       finding: {json.dumps(to_dict(finding), sort_keys=True)}")
        for c in validation.citations:
            add("       " + render_citation(c))
    if part.citations:
        add("  citations used:")
        for c in part.citations:
            add("    " + render_citation(c))
    if part.reasons:
        add("  reasons: " + ", ".join(enum_name(common_pb2.FailureReason, r, "FAILURE_REASON_") for r in part.reasons))
    for slot in part.slots:
        add(f"  slot {slot.slot_id} v{slot.version} {slot.location_id} {slot.specialty} {slot.appointment_type} "
            f"{when(slot.start_time)} as of {when(slot.as_of)}")
    if part.HasField("slots_as_of"):
        add(f"  slots as of {when(part.slots_as_of)}")
    if part.answer_text:
        add(f"  answer: {part.answer_text}")
    if part.error:
        add(f"  error: {part.error}")
    return out


def render_citation(c: common_pb2.Citation) -> str:
    return (f"cite {c.label or '-'} -> {c.document_id} version {c.version_id} chars {c.start}-{c.end} "
            f"sha256 {c.content_sha256} anchor {c.source_anchor!r} ({c.source_class or '-'}) {c.link}")


# --- export --------------------------------------------------------------------------------------------

def run_export(args: argparse.Namespace) -> int:
    token = token_of(args)
    reply = rpc(trace_stub(args).GetTrace, pb.GetTraceRequest(trace_id=args.trace_id), token,
                not_found_patience=3.0)
    from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc

    retrieval = ret_grpc.RetrievalServiceStub(
        grpc_channel(args.retrieval_target or target(args.data_dir, "retrieval")))
    availability, error = check_retrievable(retrieval, token, cited_passage_ids(reply))
    receipt = build_receipt(reply, availability, error)
    text = json.dumps(receipt, indent=2, sort_keys=True, ensure_ascii=False)
    if args.out:
        args.out.write_text(text + "\n")
        missing = receipt["retrievability"]["not_retrievable"]
        print(f"wrote {args.out}: {len(receipt['citations'])} citations, {len(missing)} no longer retrievable"
              + (f" (retrievability not checked: {error})" if error else ""))
    else:
        print(text)
    if error:
        print(f"citetrace: warning: could not check retrievability: {error}", file=sys.stderr)
    return 0


# --- list, verify, review, retention ---------------------------------------------------------------------

def run_list(args: argparse.Namespace) -> int:
    request = pb.ListTracesRequest(needs_review=args.needs_review, document_id=args.document or "",
                                   version_id=args.version or "")
    if args.outcome:
        try:
            request.outcome = common_pb2.PartOutcome.Value("PART_OUTCOME_" + args.outcome.upper())
        except ValueError:
            fail(f"unknown outcome {args.outcome!r}")
    if args.reason:
        try:
            request.failure_reason = common_pb2.FailureReason.Value("FAILURE_REASON_" + args.reason.upper())
        except ValueError:
            fail(f"unknown failure reason {args.reason!r}")
    if args.since:
        request.created_after.CopyFrom(parse_time(args.since, "--since"))
    if args.until:
        request.created_before.CopyFrom(parse_time(args.until, "--until"))
    stub, token = trace_stub(args), token_of(args)
    found: list[pb.TraceSummary] = []
    while True:
        request.page_size = 500 if not args.limit else min(500, args.limit - len(found))
        page = rpc(stub.ListTraces, request, token)
        found.extend(page.traces)
        if not page.next_page_token or (args.limit and len(found) >= args.limit):
            break
        request.page_token = page.next_page_token
    if args.json:
        print(json.dumps([to_dict(t) for t in found], indent=2))
        return 0
    for t in found:
        print(f"{t.trace_id}  {when(t.created_at)}  {outcome_name(t.outcome):<22} "
              f"{'NEEDS-REVIEW ' if t.needs_review else ''}cited {','.join(_short(v) for v in t.cited_version_ids) or '-'}")
    print(f"{len(found)} trace(s)", file=sys.stderr)
    return 0


def run_verify(args: argparse.Namespace) -> int:
    reply = rpc(trace_stub(args).VerifyChain, pb.VerifyChainRequest(tenant_id=args.tenant or ""), token_of(args))
    against = (f"checked against {reply.checkpoint_detail}" if reply.checkpoint_sequence
               else f"no signed checkpoint yet ({reply.checkpoint_detail})")
    if reply.ok:
        print(f"chain ok: {reply.records_checked} item(s) verified, signatures included; {against}")
        return 0
    print(f"chain BROKEN at sequence {reply.first_broken_sequence}"
          f"{' (trace ' + reply.first_broken_trace_id + ')' if reply.first_broken_trace_id else ''}: "
          f"{reply.detail}; {reply.records_checked} item(s) read; {against}")
    return 1


def run_checkpoint(args: argparse.Namespace) -> int:
    reply = rpc(trace_stub(args).CheckpointChain, pb.CheckpointChainRequest(), token_of(args))
    print(f"checkpoint: sequence {reply.sequence} head {reply.head_hash} signed by {reply.key_id} -> {reply.location}")
    return 0


DECISIONS = {"accepted": pb.REVIEW_DECISION_ACCEPTED, "rejected": pb.REVIEW_DECISION_REJECTED,
             "needs-change": pb.REVIEW_DECISION_NEEDS_CHANGE}


def run_review(args: argparse.Namespace) -> int:
    reply = rpc(trace_stub(args).RecordReview, pb.RecordReviewRequest(
        trace_id=args.trace_id, decision=DECISIONS[args.decision], rubric_note=args.note,
        answer_record_hash=args.record_hash), token_of(args))
    print(json.dumps(to_dict(reply.review), indent=2))
    return 0


def run_retention(args: argparse.Namespace) -> int:
    reply = rpc(trace_stub(args).ApplyRetention, pb.ApplyRetentionRequest(retention_days=args.days), token_of(args))
    print(f"redacted query text of {reply.redacted} record(s)")
    return 0


def run_version_event(args: argparse.Namespace) -> int:
    kind = pb.VERSION_EVENT_KIND_SUPERSEDED if args.kind == "superseded" else pb.VERSION_EVENT_KIND_RETIRED
    reply = rpc(trace_stub(args).RecordVersionEvent, pb.RecordVersionEventRequest(
        version_id=args.version_id, kind=kind, replaced_by_version_id=args.replaced_by), token_of(args))
    print(f"{reply.affected_traces} answer(s) cited {args.version_id} and now need re-review")
    return 0


def run_outbox(args: argparse.Namespace) -> int:
    from citetrace.kit.trace_client import TraceClient
    from citetrace.outbox import TraceOutbox, trace_deliverer

    from apps.cli.common import use_transport

    path = args.path or args.data_dir / "orchestrator" / "trace-outbox.sqlite"
    if not path.exists():
        fail(f"no outbox at {path}")

    def not_now(_record) -> None:
        raise RuntimeError("inspection only")

    if args.flush:
        # The records are the orchestrator's: they are delivered as the orchestrator, with its
        # certificate from the local stack's CA (only it may call RecordTrace).
        use_transport(args.data_dir, identity="orchestrator")
    deliver = trace_deliverer(TraceClient(args.target or target(args.data_dir, "trace"),
                                          caller="orchestrator")) if args.flush else not_now
    outbox = TraceOutbox(path, deliver)
    try:
        if args.requeue_dead:
            print(f"requeued {outbox.requeue_dead()} dead letter(s)")
        if args.flush:
            outbox.flush()
        print(f"{path}: {outbox.pending_count()} pending")
        dead = outbox.dead_letters()
        for letter in dead:
            print(f"dead letter {letter.id}: tenant {letter.tenant_id} trace {letter.trace_id} "
                  f"after {letter.attempts} attempt(s): {letter.last_error}")
    finally:
        outbox.close()
    return 1 if dead else 0
