"""citetrace ingest PATH...: Markdown files with YAML front matter -> retrieval.IngestDocument.

Each file is validated on its own; a bad file is reported (file and key) and nothing of it is
stored, the rest of the batch still goes in, and the command exits 1 if any file failed.

Front matter keys (unknown keys are errors, so a typo never goes unnoticed):
  tenant, document_id, source_class, title, valid_from, roles (list), intents (list), locale  required
  status (draft|approved|retired, default approved), valid_to, location_scope (list, empty = every
  location of the tenant), source_uri                                                      optional
Timestamps: ISO 8601 with a UTC offset (2025-01-01T00:00:00+01:00) or a date (midnight UTC).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import sys
from pathlib import Path

import grpc
import yaml
from citetrace.common.v1 import common_pb2
from citetrace.kit.clients import invoke
from citetrace.kit.errors import DomainError, Unauthenticated, Unavailable
from citetrace.kit.timestamps import NoOffset, parse_iso, to_timestamp
from citetrace.vocab import INTENT, INTENTS, VERSION_STATUS, VERSION_STATUSES

from apps.cli.common import add_data_dir, dev_token, target

REQUIRED = ("tenant", "document_id", "source_class", "title", "valid_from", "roles", "intents", "locale")
OPTIONAL = ("status", "valid_to", "location_scope", "source_uri")
LISTS = ("roles", "intents", "location_scope")
# Which front-matter key a server-side rejection is about.
REASON_KEYS = {
    "MISSING_TENANT_ID": "tenant", "TENANT_MISMATCH": "tenant", "UNKNOWN_TENANT": "tenant",
    "MISSING_DOCUMENT_ID": "document_id", "INVALID_DOCUMENT_ID": "document_id",
    "UNKNOWN_SOURCE_CLASS": "source_class", "SOURCE_CLASS_CONFLICT": "source_class",
    "MISSING_TITLE": "title", "EMPTY_TEXT": "body", "TEXT_TOO_LONG": "body", "INVALID_TEXT": "body",
    "VERSION_TEXT_CONFLICT": "body", "INVALID_STATUS": "status", "MISSING_ROLES": "roles",
    "UNKNOWN_ROLE": "roles", "UNKNOWN_INTENT": "intents", "INVALID_LOCATION_ID": "location_scope",
    "INVALID_LOCALE": "locale", "INVALID_VALIDITY_WINDOW": "valid_to",
}


class FrontMatterError(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


@dataclasses.dataclass(frozen=True)
class SourceFile:
    path: Path
    tenant: str
    document_id: str
    source_class: str
    title: str
    status: str
    valid_from: dt.datetime
    valid_to: dt.datetime | None
    roles: list[str]
    location_scope: list[str]
    intents: list[str]
    locale: str
    source_uri: str
    body: str

    def request(self):
        from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
        return pb.IngestDocumentRequest(
            document=common_pb2.Document(tenant_id=self.tenant, document_id=self.document_id,
                                         source_class=self.source_class, title=self.title,
                                         source_uri=self.source_uri),
            text=self.body, status=VERSION_STATUS.number(self.status), valid_from=to_timestamp(self.valid_from),
            valid_to=to_timestamp(self.valid_to), roles=self.roles, location_scope=self.location_scope,
            intents=[INTENT.number(i) for i in self.intents], locale=self.locale)


def split_front_matter(raw: str) -> tuple[str, str]:
    """(front matter YAML, body). The body keeps its bytes exactly (line endings included)."""
    text = raw[1:] if raw.startswith("\ufeff") else raw
    first, sep, rest = text.partition("\n")
    if first.rstrip("\r") != "---" or not sep:
        raise FrontMatterError("front matter", "the file must start with a '---' line")
    pos = 0
    while True:
        line_end = rest.find("\n", pos)
        line = rest[pos:] if line_end < 0 else rest[pos:line_end]
        if line.rstrip("\r") in ("---", "..."):
            body = "" if line_end < 0 else rest[line_end + 1:]
            return rest[:pos], body
        if line_end < 0:
            raise FrontMatterError("front matter", "no closing '---' line")
        pos = line_end + 1


def _timestamp(key: str, value) -> dt.datetime:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise FrontMatterError(key, f"{value.isoformat()} has no UTC offset (write e.g. +00:00 or Z)")
        return value.astimezone(dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    if isinstance(value, str):
        try:
            return parse_iso(value, naive_is_utc=False)
        except NoOffset as exc:
            raise FrontMatterError(key, f"{value.strip()} has no UTC offset (write e.g. +00:00 or Z)") from exc
        except ValueError as exc:
            raise FrontMatterError(key, f"{value!r} is not an ISO 8601 timestamp") from exc
    raise FrontMatterError(key, f"expected a timestamp, got {type(value).__name__}")


def _string(key: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FrontMatterError(key, "must be a non-empty string")
    return value.strip()


def _string_list(key: str, value) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise FrontMatterError(key, "must be a list of non-empty strings")
    return [v.strip() for v in value]


def parse_file(path: Path) -> SourceFile:
    try:
        raw = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontMatterError("file", f"not UTF-8: {exc}") from exc
    header, body = split_front_matter(raw)
    try:
        meta = yaml.safe_load(header) or {}
    except yaml.YAMLError as exc:
        raise FrontMatterError("front matter", f"malformed YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise FrontMatterError("front matter", "must be a mapping of keys to values")
    unknown = sorted(str(k) for k in meta if k not in REQUIRED + OPTIONAL)
    if unknown:
        raise FrontMatterError(unknown[0], f"unknown key (known: {', '.join(REQUIRED + OPTIONAL)})")
    for key in REQUIRED:
        if key not in meta or meta[key] is None:
            raise FrontMatterError(key, "missing")
    roles = _string_list("roles", meta["roles"])
    if not roles:
        raise FrontMatterError("roles", "must name at least one audience role")
    intents = _string_list("intents", meta["intents"])
    unknown_intents = [i for i in intents if i not in INTENTS]
    if unknown_intents:
        raise FrontMatterError("intents", f"{unknown_intents[0]!r} is not one of {', '.join(INTENTS)}")
    status = _string("status", meta.get("status", "approved")).lower()
    if status not in VERSION_STATUSES:
        raise FrontMatterError("status", f"{status!r} is not one of {', '.join(VERSION_STATUSES)}")
    valid_from = _timestamp("valid_from", meta["valid_from"])
    valid_to = _timestamp("valid_to", meta["valid_to"]) if meta.get("valid_to") is not None else None
    if valid_to is not None and valid_to <= valid_from:
        raise FrontMatterError("valid_to", "must be after valid_from")
    if not body.strip():
        raise FrontMatterError("body", "the document text after the front matter is empty")
    source_uri = meta.get("source_uri") or ""
    if not isinstance(source_uri, str):
        raise FrontMatterError("source_uri", "must be a string")
    return SourceFile(
        path=path, tenant=_string("tenant", meta["tenant"]), document_id=str(_string("document_id",
                                                                                        meta["document_id"])),
        source_class=_string("source_class", meta["source_class"]), title=_string("title", meta["title"]),
        status=status, valid_from=valid_from, valid_to=valid_to, roles=roles,
        location_scope=_string_list("location_scope", meta.get("location_scope")), intents=intents,
        locale=_string("locale", meta["locale"]), source_uri=source_uri, body=body)


def collect(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.md") if p.is_file()))
        else:
            files.append(path)
    return files


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ingest", help="ingest Markdown files with YAML front matter into the retrieval service",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders (*.md, recursive)")
    add_data_dir(parser)
    parser.add_argument("--target", help="retrieval service address (default: the local stack's)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per file (default 60)")
    parser.add_argument("--dry-run", action="store_true", help="validate the files only; send nothing")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc

    files = collect(args.paths)
    if not files:
        print("citetrace ingest: no Markdown files found", file=sys.stderr)
        return 1
    address = args.target or target(args.data_dir, "retrieval")
    failures = 0
    tokens: dict[str, str] = {}
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.RetrievalServiceStub(channel)
        for path in files:
            try:
                source = parse_file(path)
            except FrontMatterError as err:
                failures += 1
                print(f"{path}: FAILED {err}")
                continue
            except OSError as err:
                failures += 1
                print(f"{path}: FAILED file: {err}")
                continue
            if args.dry_run:
                print(f"{path}: valid (document {source.document_id}, tenant {source.tenant})")
                continue
            if source.tenant not in tokens:
                tokens[source.tenant] = dev_token(args.data_dir, source.tenant, ["policy_admin"],
                                                  subject="cli-ingest")
            try:
                reply = invoke(stub.IngestDocument, source.request(), "retrieval", timeout=args.timeout,
                               token=tokens[source.tenant])
            except (Unavailable, Unauthenticated) as err:
                # Not about this file: the service is unreachable or rejects our key. Stop.
                print(f"citetrace ingest: retrieval service at {address}: {err.code.value}: {err.message} "
                      "(is the stack up? `citetrace up`; same data dir?)", file=sys.stderr)
                return 2
            except DomainError as err:
                failures += 1
                print(f"{path}: FAILED {REASON_KEYS.get(err.reason, 'request')}: {err.reason}: {err.message}")
                continue
            state = "created" if reply.created else "unchanged"
            extra = f" superseded={','.join(v[:12] for v in reply.superseded_version_ids)}" \
                if reply.superseded_version_ids else ""
            print(f"{path}: {state} document={source.document_id} version={reply.version.version_id[:12]} "
                  f"passages={len(reply.passages)} status={source.status}{extra}")
    total = len(files)
    print(f"ingest: {total - failures} of {total} file(s) ok, {failures} failed", file=sys.stderr)
    return 1 if failures else 0
