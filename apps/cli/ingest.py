"""citetrace ingest PATH...: Markdown, PDF and HTML sources -> retrieval.IngestDocument.

Each file is validated on its own; a bad file is reported (file and key) and nothing of it is
stored, the rest of the batch still goes in, and the command exits 1 if any file failed.

Metadata: a Markdown file carries it as YAML front matter; a PDF or HTML file (or a Markdown file
without front matter) in a sidecar named after it plus .meta.yaml (policy.pdf -> policy.pdf.meta.yaml)
with exactly the same keys. PDF and HTML are sent as they are: the retrieval service extracts their
text, page map and structure, and the result (pages, issues, passages awaiting review) is printed.

Metadata keys (unknown keys are errors, so a typo never goes unnoticed):
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

import yaml
from citetrace.common.v1 import common_pb2
from citetrace.kit.clients import invoke
from citetrace.kit.errors import Code, DomainError, Unauthenticated, Unavailable
from citetrace.kit.timestamps import NoOffset, parse_iso, to_timestamp
from citetrace.vocab import INTENT, INTENTS, VERSION_STATUS, VERSION_STATUSES

from apps.cli.common import add_data_dir, dev_token, grpc_channel, target

REQUIRED = ("tenant", "document_id", "source_class", "title", "valid_from", "roles", "intents", "locale")
OPTIONAL = ("status", "valid_to", "location_scope", "source_uri")
LISTS = ("roles", "intents", "location_scope")
SIDECAR_SUFFIX = ".meta.yaml"
MARKDOWN, PDF, HTML = "text/markdown", "application/pdf", "text/html"
MEDIA_TYPES = {".md": MARKDOWN, ".markdown": MARKDOWN, ".pdf": PDF, ".html": HTML, ".htm": HTML}
# The retrieval service's default CITETRACE_RETRIEVAL_MAX_SOURCE_BYTES: a larger file is refused
# here, before it is read.
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
# Which front-matter key a server-side rejection is about.
REASON_KEYS = {
    "MISSING_TENANT_ID": "tenant", "TENANT_MISMATCH": "tenant", "UNKNOWN_TENANT": "tenant",
    "MISSING_DOCUMENT_ID": "document_id", "INVALID_DOCUMENT_ID": "document_id",
    "UNKNOWN_SOURCE_CLASS": "source_class", "SOURCE_CLASS_CONFLICT": "source_class",
    "MISSING_TITLE": "title", "EMPTY_TEXT": "body", "TEXT_TOO_LONG": "body", "INVALID_TEXT": "body",
    "VERSION_TEXT_CONFLICT": "body", "INVALID_STATUS": "status", "MISSING_ROLES": "roles",
    "UNKNOWN_ROLE": "roles", "UNKNOWN_INTENT": "intents", "INVALID_LOCATION_ID": "location_scope",
    "INVALID_LOCALE": "locale", "INVALID_VALIDITY_WINDOW": "valid_to",
    "ENCRYPTED_SOURCE": "file", "CORRUPT_SOURCE": "file", "SOURCE_TOO_LARGE": "file", "ACTIVE_CONTENT": "file",
    "INVALID_ENCODING": "file", "NO_TEXT_LAYER": "file", "UNSUPPORTED_MEDIA_TYPE": "file",
    "CONTENT_AND_TEXT": "file",
}


class FrontMatterError(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


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
    body: str  # Markdown text ("" when content is sent)
    content: bytes = b""  # the original file (PDF, HTML)
    media_type: str = MARKDOWN

    def request(self):
        from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
        return pb.IngestDocumentRequest(
            document=common_pb2.Document(tenant_id=self.tenant, document_id=self.document_id,
                                         source_class=self.source_class, title=self.title,
                                         source_uri=self.source_uri),
            text=self.body, content=self.content, media_type=self.media_type if self.content else "",
            source_filename=self.path.name, status=VERSION_STATUS.number(self.status),
            valid_from=to_timestamp(self.valid_from), valid_to=to_timestamp(self.valid_to), roles=self.roles,
            location_scope=self.location_scope, intents=[INTENT.number(i) for i in self.intents],
            locale=self.locale)


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


class SidecarError(FrontMatterError):
    """The sidecar of a PDF/HTML file is missing or invalid: the message names both files."""

    def __init__(self, sidecar: Path, key: str, message: str) -> None:
        super().__init__(key, message)
        self.sidecar = sidecar

    def __str__(self) -> str:
        return f"{self.sidecar.name}: {self.key}: {self.message}"


def sidecar_of(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _metadata(meta) -> dict:
    """The validated metadata keys of front matter or a sidecar (raises FrontMatterError)."""
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
    source_uri = meta.get("source_uri") or ""
    if not isinstance(source_uri, str):
        raise FrontMatterError("source_uri", "must be a string")
    return dict(
        tenant=_string("tenant", meta["tenant"]), document_id=_string("document_id", meta["document_id"]),
        source_class=_string("source_class", meta["source_class"]), title=_string("title", meta["title"]),
        status=status, valid_from=valid_from, valid_to=valid_to, roles=roles,
        location_scope=_string_list("location_scope", meta.get("location_scope")), intents=intents,
        locale=_string("locale", meta["locale"]), source_uri=source_uri)


def _sidecar(path: Path) -> dict:
    sidecar = sidecar_of(path)
    if not sidecar.is_file():
        raise SidecarError(sidecar, "file", f"missing: {path.name} needs its metadata in {sidecar.name} (the keys "
                           "of the Markdown front matter)")
    try:
        meta = yaml.safe_load(sidecar.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise SidecarError(sidecar, "file", f"malformed YAML: {exc}") from exc
    try:
        return _metadata(meta if meta is not None else {})
    except FrontMatterError as err:
        raise SidecarError(sidecar, err.key, err.message) from err


def parse_file(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> SourceFile:
    """One source file with its metadata, validated (raises FrontMatterError / SidecarError)."""
    media_type = MEDIA_TYPES.get(path.suffix.lower())
    if media_type is None:
        raise FrontMatterError("file", f"unknown kind of file {path.suffix!r} (known: {', '.join(MEDIA_TYPES)})")
    size = path.stat().st_size
    if size > max_bytes:
        raise FrontMatterError("file", f"{size / 2**20:.1f} MiB ({size} bytes) is over the limit of one source, "
                               f"{max_bytes / 2**20:.0f} MiB (--max-bytes, the retrieval service's MAX_SOURCE_BYTES)")
    if media_type != MARKDOWN:
        meta = _sidecar(path)
        content = path.read_bytes()
        if not content.strip():
            raise FrontMatterError("file", "the file is empty")
        return SourceFile(path=path, body="", content=content, media_type=media_type, **meta)
    try:
        raw = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontMatterError("file", f"not UTF-8: {exc}") from exc
    if not raw.lstrip("\ufeff").startswith("---") and sidecar_of(path).is_file():
        meta, body = _sidecar(path), raw.lstrip("\ufeff")
    else:
        if sidecar_of(path).is_file():
            raise SidecarError(sidecar_of(path), "file", f"{path.name} has front matter too: keep the metadata in one "
                               "place")
        header, body = split_front_matter(raw)
        try:
            parsed = yaml.safe_load(header) or {}
        except yaml.YAMLError as exc:
            raise FrontMatterError("front matter", f"malformed YAML: {exc}") from exc
        meta = _metadata(parsed)
    if not body.strip():
        raise FrontMatterError("body", "the document text after the front matter is empty")
    return SourceFile(path=path, body=body, **meta)


def collect(paths: list[Path]) -> list[Path]:
    """Files named, and the sources (Markdown, PDF, HTML) under folders named, recursively."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in MEDIA_TYPES))
        else:
            files.append(path)
    return files


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ingest", help="ingest Markdown, PDF and HTML sources into the retrieval service",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders (*.md, *.pdf, *.html, recursive)")
    add_data_dir(parser)
    parser.add_argument("--target", help="retrieval service address (default: the local stack's)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per file (default 60)")
    parser.add_argument("--dry-run", action="store_true", help="validate the files only; send nothing")
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                        help=f"largest source file sent (default {DEFAULT_MAX_BYTES // 2**20} MiB)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc

    files = collect(args.paths)
    if not files:
        print("citetrace ingest: no Markdown, PDF or HTML files found", file=sys.stderr)
        return 1
    address = args.target or target(args.data_dir, "retrieval")
    failures = 0
    tokens: dict[str, str] = {}
    with grpc_channel(address) as channel:
        stub = pb_grpc.RetrievalServiceStub(channel)
        for path in files:
            try:
                source = parse_file(path, args.max_bytes)
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
                if err.code == Code.RESOURCE_EXHAUSTED:
                    print(f"{path}: FAILED file: the retrieval service refused a message this large ({err.message})")
                    continue
                print(f"{path}: FAILED {REASON_KEYS.get(err.reason, 'request')}: {err.reason}: {err.message}")
                continue
            state = "created" if reply.created else "unchanged"
            extra = f" superseded={','.join(v[:12] for v in reply.superseded_version_ids)}" \
                if reply.superseded_version_ids else ""
            print(f"{path}: {state} document={source.document_id} version={reply.version.version_id[:12]} "
                  f"passages={len(reply.passages)} status={source.status}{extra}")
            for line in report_lines(reply.extraction):
                print(f"    {line}")
    total = len(files)
    print(f"ingest: {total - failures} of {total} file(s) ok, {failures} failed", file=sys.stderr)
    return 1 if failures else 0


def report_lines(report) -> list[str]:
    """The extraction report of a PDF/HTML ingest: pages, what could not be captured, and the
    passages that wait for a policy admin (`citetrace passages approve`)."""
    if not report.media_type or report.media_type == MARKDOWN:
        return []
    from citetrace.retrieval.v1 import retrieval_service_pb2 as pb

    lines = [f"{report.media_type}, source sha256 {report.source_sha256[:12]}, extraction {report.extraction_version}"]
    if report.pages:
        unverified = [str(p.viewer_page) for p in report.pages if not p.verified]
        lines.append(f"{len(report.pages)} page(s); labels "
                     + ", ".join(f"{p.viewer_page}:{p.page_label or '-'}" for p in report.pages)
                     + (f"; not verified on viewer page(s) {', '.join(unverified)}" if unverified else ""))
    for issue in report.issues:
        kind = pb.ExtractionIssueKind.Name(issue.kind).removeprefix("EXTRACTION_ISSUE_KIND_")
        lines.append(f"{kind}: {issue.message}")
    if report.passages_needing_review:
        lines.append(f"{len(report.passages_needing_review)} passage(s) await review and are not evidence until "
                     "approved: citetrace passages approve --tenant TENANT "
                     + " ".join(report.passages_needing_review))
    return lines
