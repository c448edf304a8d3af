"""citetrace: the command-line entry point. Each command lives in its own module with a
register(subparsers) function."""

from __future__ import annotations

import argparse
import importlib
import sys

# Commands whose module is not there yet (work in progress) are left out of the parser.
COMMAND_MODULES = (
    "apps.cli.stack",
    "apps.cli.token",
    "apps.cli.ingest",
    "apps.cli.passages",
    "apps.cli.slots",
    "apps.cli.appointments",
    "apps.cli.ask",
    "apps.cli.trace",
    "apps.cli.replay",
    "apps.cli.index",
    "apps.cli.keys",
    "apps.cli.judge",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="citetrace", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "data_dir", None) is not None:
        from citetrace.kit.clients import set_process_identity

        from apps.cli.common import CLI_IDENTITY, use_transport

        use_transport(args.data_dir)  # mutual TLS with the local stack's CLI certificate, when it has one
        set_process_identity(CLI_IDENTITY)  # who the CLI says it is over plaintext (development)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
