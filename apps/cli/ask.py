"""citetrace ask "QUESTION": one question to the orchestrator of the local stack; prints each part's
answer with numbered citation markers and the sources under it (document, version, anchor), the
appointment and the proposal a change question prepared (its ID and how to confirm it), the
trace ID, or with --json the response in protobuf's JSON mapping."""

from __future__ import annotations

import argparse
import sys

import grpc
from citetrace.common.v1 import appointments_pb2 as ap_pb
from citetrace.common.v1 import common_pb2 as c_pb
from citetrace.common.v1 import route_pb2 as r_pb
from citetrace.identity import page_locator
from citetrace.kit.auth import bearer_metadata
from citetrace.kit.timestamps import from_timestamp, to_timestamp
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp

from apps.cli.common import (
    add_caller,
    add_data_dir,
    caller_token,
    grpc_channel,
    rpc_failure,
    target,
    time_arg,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("ask", help="ask the orchestrator one question and print the traced answer")
    parser.add_argument("question")
    add_caller(parser)
    parser.add_argument("--location", default="", help="location hint (a location ID of the tenant)")
    parser.add_argument("--as-of", dest="as_of", help="request time, ISO 8601 with offset (default: now)")
    parser.add_argument("--locale", default="", help="locale, e.g. en or nb-NO")
    parser.add_argument("--conversation", default="",
                        help="continue a conversation (the ID an earlier answer printed), e.g. to answer its "
                             "clarification question")
    parser.add_argument("--json", action="store_true", help="print the response in protobuf's JSON mapping")
    parser.add_argument("--target", help="orchestrator address (default: the local stack's)")
    parser.add_argument("--timeout", type=float, default=20.0, help="deadline in seconds (default 20)")
    add_data_dir(parser)
    parser.set_defaults(func=run)


def _as_of(value: str | None) -> Timestamp | None:
    if not value:
        return None
    return to_timestamp(time_arg(value, "--as-of"))


def run(args: argparse.Namespace) -> int:
    token = caller_token(args)
    request = pb.AskRequest(question=args.question, location_id=args.location, locale=args.locale,
                            conversation_id=args.conversation)
    stamp = _as_of(args.as_of)
    if stamp is not None:
        request.as_of.CopyFrom(stamp)
    address = args.target or target(args.data_dir, "orchestrator")
    with grpc_channel(address) as channel:
        try:
            response = pb_grpc.OrchestratorServiceStub(channel).Ask(
                request, timeout=args.timeout, metadata=bearer_metadata(token))
        except grpc.RpcError as err:
            print(f"citetrace: ask failed: {rpc_failure(err, 'orchestrator')}", file=sys.stderr)
            return 1
    if args.json:
        print(json_format.MessageToJson(response, indent=2))
    else:
        print(render(response))
    return 0


def _name(enum_type, value: int, prefix: str) -> str:
    return enum_type.Name(value).removeprefix(prefix)


def render(response: pb.AskResponse) -> str:
    """Human-readable answer: per part its outcome and text with [n] markers, then the sources."""
    lines: list[str] = []
    sources: dict[str, int] = {}
    listed: list[c_pb.Citation] = []

    def marker(citation: c_pb.Citation) -> str:
        if citation.passage_id not in sources:
            sources[citation.passage_id] = len(sources) + 1
            listed.append(citation)
        return f"[{sources[citation.passage_id]}]"

    for part in response.parts:
        kind = _name(r_pb.PartKind, part.kind, "PART_KIND_")
        outcome = _name(c_pb.PartOutcome, part.outcome, "PART_OUTCOME_")
        lines.append(f"[{part.part_id}] {kind}: {outcome}")
        if part.claims:
            for claim in part.claims:
                marks = "".join(marker(c) for c in claim.citations)
                lines.append(f"  {claim.text}{' ' + marks if marks else ''}")
        elif part.answer_text:
            lines.append(f"  {part.answer_text}")
        for conflict in part.conflicts:
            text = " ".join(conflict.text.split())
            lines.append(f"  - \"{text[:240]}\" {marker(conflict.citation)}")
        if part.withheld:
            reasons = sorted({_name(c_pb.FailureReason, r, "FAILURE_REASON_") for w in part.withheld for r in w.reasons})
            lines.append(f"  ({len(part.withheld)} claim(s) withheld: {', '.join(reasons) or 'not supported'})")
        if part.slots:
            lines.append(f"  {len(part.slots)} slot(s), as of {from_timestamp(part.slots_as_of):%Y-%m-%d %H:%M:%S} UTC")
        for appointment in part.appointments:
            lines.append(f"  appointment {appointment.appointment_id} (version {appointment.version}), "
                         f"{appointment.specialty} at {appointment.location_name or appointment.location_id}, "
                         f"{from_timestamp(appointment.start_time):%Y-%m-%d %H:%M} UTC")
        if part.proposal.proposal_id:
            proposal = part.proposal
            for consequence in proposal.consequences:
                marks = "".join(marker(c) for c in consequence.citations)
                kind = _name(ap_pb.ConsequenceKind, consequence.kind, "CONSEQUENCE_KIND_")
                lines.append(f"  {kind}: {consequence.text}{' ' + marks if marks else ''} ({consequence.explanation})")
            if proposal.review_required:
                lines.append(f"  proposal {proposal.proposal_id}: a staff review task (only staff may confirm it)")
            else:
                lines.append(f"  proposal {proposal.proposal_id}: confirm with `citetrace propose confirm "
                             f"{proposal.proposal_id}` or reject with `citetrace propose reject {proposal.proposal_id}`")
        if part.clarification_question and part.clarification_question != part.answer_text:
            lines.append(f"  ? {part.clarification_question}")
        if part.policy_link:
            lines.append(f"  policy: {part.policy_link}")
        action = _name(c_pb.NextAction, part.next_action, "NEXT_ACTION_")
        if action not in ("NONE", "UNSPECIFIED"):
            lines.append(f"  next: {action}")
    if listed:
        lines.append("")
        lines.append("Sources:")
        for citation in listed:
            anchor = f" > {citation.source_anchor}" if citation.source_anchor else ""
            lines.append(f"  [{sources[citation.passage_id]}] {citation.title or citation.document_id}{anchor}")
            pages = page_locator(citation.page_start, citation.page_end, citation.page_label_start,
                                 citation.page_label_end)
            lines.append(f"      document {citation.document_id}, version {citation.version_id[:12]}, "
                         f"{citation.source_class}, {pages + ', ' if pages else ''}chars {citation.start}-{citation.end}")
            lines.append(f"      {citation.link}")
    lines.append("")
    delivered = "recorded" if response.trace_delivered else "queued durably, delivered in the background"
    for proposal_id in response.proposal_ids:
        lines.append(f"proposal: {proposal_id}")
    if response.conversation_id:
        lines.append(f"conversation: {response.conversation_id} (continue with --conversation "
                     f"{response.conversation_id})")
    lines.append(f"trace: {response.trace_id} ({delivered})")
    return "\n".join(lines)
