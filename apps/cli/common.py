"""What every CLI command shares: the data directory, the local stack's development token issuer
(an Ed25519 keypair) and state file, and authenticated stubs to the local stack."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import secrets
import sys
from pathlib import Path

import grpc
from citetrace.kit import clients
from citetrace.kit.auth import AUTH_PREFIX, AuthSettings, mint_token
from citetrace.kit.clients import domain_error
from citetrace.kit.settings import load_settings
from citetrace.kit.stack import BY_NAME
from citetrace.kit.timestamps import NoOffset, parse_iso
from citetrace.kit.tls import (
    PLAINTEXT,
    TLS_PREFIX,
    LocalCA,
    TransportSettings,
    open_channel,
    transport_from_environment,
)

DEFAULT_DATA_DIR = Path(".citetrace")
SECRET_FILE = "dev-secret"
# The local stack's token issuer: an Ed25519 private key (0600) that only the CLI (`citetrace token`,
# the commands that mint a development token) and the console's development sign-in read, and its
# public half, which is all the services get (CITETRACE_AUTH_RS256_PUBLIC_KEY_FILE).
ISSUER_KEY_FILE = "issuer-key.pem"
ISSUER_PUBLIC_KEY_FILE = "issuer-key.pub.pem"
STATE_FILE = "stack.json"
# The local stack's certificate authority and one certificate per service, and one for the CLI.
TLS_DIR = "tls"
CLI_IDENTITY = "cli"


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("CITETRACE_DATA_DIR", DEFAULT_DATA_DIR)),
        help="where the local stack keeps its data, logs and state (default ./.citetrace)",
    )


def dev_secret(data_dir: Path, create: bool = False, name: str = SECRET_FILE) -> str | None:
    """A secret of the local stack (by default the HS256 development secret), created once with
    mode 0600."""
    path = data_dir / name
    if path.exists():
        return path.read_text().strip()
    if not create:
        return None
    data_dir.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_urlsafe(48)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secret + "\n")
    return secret


def dev_issuer(data_dir: Path, create: bool = False) -> tuple[Path, Path] | None:
    """The local stack's token issuer keypair (private key file, public key file), created once
    (the private key with mode 0600, never overwritten); None when absent and not `create`."""
    from citetrace.signing import generate_key_files

    private, public = data_dir / ISSUER_KEY_FILE, data_dir / ISSUER_PUBLIC_KEY_FILE
    if private.exists() and public.exists():
        return private, public
    if not create:
        return None
    data_dir.mkdir(parents=True, exist_ok=True)
    if not private.exists():
        generate_key_files(private, public)
    return private, public


def auth_settings(data_dir: Path) -> AuthSettings:
    """Deployment key material when configured (CITETRACE_AUTH_*), else the local stack's development
    issuer keypair (EdDSA tokens)."""
    if any(key.startswith(AUTH_PREFIX) for key in os.environ):
        return load_settings(AuthSettings, AUTH_PREFIX)
    issuer = dev_issuer(data_dir)
    if issuer is None:
        fail(f"no development token issuer in {data_dir}: start the stack with `citetrace up` first "
             "or set CITETRACE_AUTH_RS256_PRIVATE_KEY_FILE and CITETRACE_AUTH_RS256_PUBLIC_KEY_FILE")
    private, public = issuer
    return AuthSettings(rs256_public_key_file=public, rs256_private_key_file=private)


def dev_token(data_dir: Path, tenant: str, roles: list[str], locations: list[str] | None = None,
              subject: str = "cli-user", ttl_seconds: int = 3600, patient_ref: str = "") -> str:
    return mint_token(auth_settings(data_dir), tenant_id=tenant, subject=subject, roles=roles,
                      location_ids=locations or [], ttl_seconds=ttl_seconds, patient_ref=patient_ref)


def add_caller(parser: argparse.ArgumentParser, default_roles: str = "patient") -> None:
    """--tenant/--roles/--locations/--subject/--patient-ref for a development token, or --token."""
    who = parser.add_argument_group("caller (a development token is minted unless --token is given)")
    who.add_argument("--tenant", help="tenant of the development token")
    who.add_argument("--roles", default=default_roles, help=f"comma-separated roles (default: {default_roles})")
    who.add_argument("--locations", default="", help="comma-separated permitted location IDs (default: all)")
    who.add_argument("--subject", default="cli-user",
                     help="pseudonymous subject; a patient token's subject is its patient reference (default cli-user)")
    who.add_argument("--patient-ref", default="", help="patient reference claim, when it differs from --subject")
    who.add_argument("--token", help="a bearer token instead of --tenant/--roles")


def caller_token(args: argparse.Namespace) -> str:
    if getattr(args, "token", None):
        return args.token
    if not getattr(args, "tenant", None):
        fail("give --tenant (and --roles) to mint a development token, or --token")
    return dev_token(args.data_dir, args.tenant, split_list(args.roles), split_list(args.locations),
                     subject=args.subject, patient_ref=args.patient_ref)


def local_ca(data_dir: Path) -> LocalCA:
    """The local stack's CA (created on first use)."""
    return LocalCA(data_dir / TLS_DIR, common_name="citetrace local stack CA")


def cli_transport(data_dir: Path, identity: str = CLI_IDENTITY) -> TransportSettings:
    """How the CLI reaches the local stack: CITETRACE_TLS_* when set; plaintext when the running stack
    was started so (or there are no stack certificates); else mutual TLS with the certificate of
    `identity` (the CLI's own, unless a command acts as a service, e.g. flushing the orchestrator's
    trace outbox)."""
    if any(key.startswith(TLS_PREFIX) for key in os.environ):
        return transport_from_environment()
    folder = data_dir / TLS_DIR
    if read_state(data_dir).get("tls") == "plaintext" or not (folder / f"{identity}.pem").exists():
        return PLAINTEXT
    return local_ca(data_dir).issue(identity).settings()


def use_transport(data_dir: Path, identity: str = CLI_IDENTITY) -> None:
    """Every channel this process opens (kit.clients and `grpc_channel`) uses `cli_transport`."""
    clients.configure_transport(cli_transport(data_dir, identity))


def grpc_channel(address: str):
    """A channel of its own (close it) to `address` with this process's transport settings."""
    return open_channel(address, clients.transport())


def read_state(data_dir: Path) -> dict:
    path = data_dir / STATE_FILE
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def target(data_dir: Path, service: str) -> str:
    """Where a service of the local stack listens (the state file, else the default port)."""
    state = read_state(data_dir)
    entry = state.get("services", {}).get(service)
    return f"127.0.0.1:{entry['port']}" if entry else BY_NAME[service].target


def split_list(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def rpc_failure(err: grpc.RpcError, service: str) -> str:
    """A failed call as the CLI prints it: `CODE [REASON]: message` (kit.clients.domain_error)."""
    error = domain_error(err, service)
    return f"{error.code.value} [{error.reason}]: {error.message}"


def time_arg(value: str, flag: str, *, naive_is_utc: bool = False) -> dt.datetime:
    """A time given on the command line (ISO 8601; an offset is required unless `naive_is_utc`)."""
    try:
        return parse_iso(value, naive_is_utc=naive_is_utc)
    except NoOffset:
        fail(f"{flag} {value!r} has no UTC offset (add Z or e.g. -05:00)")
    except ValueError:
        fail(f"{flag} {value!r} is not ISO 8601 (e.g. 2026-12-01T09:00:00-05:00)")


def fail(message: str, code: int = 2) -> None:
    print(f"citetrace: error: {message}", file=sys.stderr)
    raise SystemExit(code)
