"""citetrace keys generate|show: Ed25519 key files for signed versions, chain links and
checkpoints (issue 16). The private key is written with mode 0600 and never overwritten; its
public half goes next to it as `<file>.pub` (give that to whoever verifies)."""

from __future__ import annotations

import argparse
from pathlib import Path

from apps.cli.common import fail


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("keys", help="generate and inspect Ed25519 signing keys")
    commands = parser.add_subparsers(dest="keys_command", required=True, metavar="SUBCOMMAND")
    generate = commands.add_parser("generate", help="write a new private key file (0600) and FILE.pub")
    generate.add_argument("file", type=Path, help="the private key file to create (must not exist)")
    generate.set_defaults(func=run_generate)
    show = commands.add_parser("show", help="print the key ID of a private or public key file")
    show.add_argument("file", type=Path)
    show.set_defaults(func=run_show)


def run_generate(args: argparse.Namespace) -> int:
    from citetrace.signing import generate_key_files, public_file_of

    if args.file.exists():
        fail(f"{args.file} exists; a key file is never overwritten (rotation: generate a new file)")
    key_id = generate_key_files(args.file)
    print(f"{key_id}: private key {args.file}, public key {public_file_of(args.file)}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from citetrace.signing import KeyFileError, key_id_of, load_public

    try:
        print(key_id_of(load_public(args.file)))
    except KeyFileError as exc:
        fail(str(exc))
    return 0
