"""citetrace passages show|approve ID...: read passages as a policy admin (their text, pages and
review state) and approve the ones an extraction marked for review, which makes them eligible as
answer evidence (retrieval.ApprovePassages)."""

from __future__ import annotations

import argparse
import sys

import grpc
from citetrace.common.v1 import common_pb2
from citetrace.identity import page_locator
from citetrace.kit.auth import bearer_metadata
from citetrace.kit.clients import error_info
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc

from apps.cli.common import add_data_dir, dev_token, grpc_channel, target


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("passages", help="show passages or approve those awaiting review")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, help_text in (("show", "print passages with their pages and review state"),
                            ("approve", "approve passages awaiting review (policy_admin)")):
        sub = actions.add_parser(name, help=help_text)
        sub.add_argument("passage_ids", nargs="+", metavar="PASSAGE_ID")
        sub.add_argument("--tenant", required=True, help="tenant of the policy_admin development token")
        sub.add_argument("--target", help="retrieval service address (default: the local stack's)")
        add_data_dir(sub)
        sub.set_defaults(func=run)


def describe(passage: common_pb2.Passage) -> list[str]:
    ident = passage.identity
    state = common_pb2.ReviewState.Name(passage.review_state).removeprefix("REVIEW_STATE_")
    pages = page_locator(ident.page_start, ident.page_end, ident.page_label_start, ident.page_label_end)
    lines = [f"{ident.passage_id} {ident.document_id} version {ident.version_id[:12]} "
             f"{pages + ' ' if pages else ''}chars {ident.start}-{ident.end} review {state}"
             + (f" ({passage.review_reason})" if passage.review_reason else "")]
    lines.extend(f"    {line}" for line in passage.text.splitlines())
    return lines


def run(args: argparse.Namespace) -> int:
    token = dev_token(args.data_dir, args.tenant, ["policy_admin"], subject="cli-passages")
    address = args.target or target(args.data_dir, "retrieval")
    with grpc_channel(address) as channel:
        stub = pb_grpc.RetrievalServiceStub(channel)
        try:
            if args.action == "approve":
                reply = stub.ApprovePassages(pb.ApprovePassagesRequest(passage_ids=args.passage_ids), timeout=20,
                                             metadata=bearer_metadata(token))
            else:
                reply = stub.GetPassages(pb.GetPassagesRequest(passage_ids=args.passage_ids), timeout=20,
                                         metadata=bearer_metadata(token))
        except grpc.RpcError as err:
            info = error_info(err)
            print(f"citetrace passages {args.action}: {err.code().name}"
                  f"{' ' + info.reason if info else ''}: {err.details()}", file=sys.stderr)
            return 1
    for passage in reply.passages:
        print("\n".join(describe(passage)))
    return 0
