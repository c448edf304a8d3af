"""citetrace token: mint a development bearer token from the local stack's secret."""

from __future__ import annotations

import argparse

from apps.cli.common import add_data_dir, dev_token, split_list


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("token", help="mint a development bearer token for the local stack")
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--roles", default="patient", help="comma-separated roles (default: patient)")
    parser.add_argument("--locations", default="", help="comma-separated permitted location IDs (default: all)")
    parser.add_argument("--subject", default="cli-user",
                        help="pseudonymous subject (a patient token's subject is its patient reference)")
    parser.add_argument("--patient-ref", default="", help="patient reference claim, when it differs from --subject")
    parser.add_argument("--ttl", type=int, default=3600, help="lifetime in seconds")
    add_data_dir(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print(dev_token(args.data_dir, args.tenant, split_list(args.roles), split_list(args.locations),
                    subject=args.subject, ttl_seconds=args.ttl, patient_ref=args.patient_ref))
    return 0
