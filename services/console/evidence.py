"""What the evidence panel and the version page show about a cited span, decided from what
retrieval served to this reader just now: the span inside its section (the heading above it down to
the next heading), the version's status and validity window, and the digest check."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from citetrace.common.v1 import common_pb2 as c
from citetrace.identity import sha256_hex

from services.console.answer import short_version

HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
CHARS = re.compile(r"^(\d{1,9})-(\d{1,9})$")


def parse_chars(value: str | None) -> tuple[int, int] | None:
    """`a-b` (end exclusive, a < b) or None."""
    match = CHARS.match(value or "")
    if not match:
        return None
    start, end = int(match.group(1)), int(match.group(2))
    return (start, end) if start < end else None


@dataclasses.dataclass(frozen=True)
class Segment:
    text: str
    cited: bool


@dataclasses.dataclass(frozen=True)
class Heading:
    level: int
    text: str
    start: int


def headings(text: str) -> list[Heading]:
    return [Heading(len(m.group(1)), m.group(2), m.start()) for m in HEADING.finditer(text)]


def section_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """From the last heading at or before `start` to the first heading after `end` (the span's
    section, headings included); the whole text when it has no headings."""
    lo, hi = 0, len(text)
    for heading in headings(text):
        if heading.start <= start:
            lo = heading.start
        elif heading.start >= end:
            hi = heading.start
            break
    return lo, hi


def context_segments(text: str, start: int, end: int, context_chars: int) -> tuple[list[Segment], bool, bool]:
    """The section around [start, end) as before / cited / after segments, cut to `context_chars`
    on each side at a word boundary; also whether something was cut before and after."""
    lo, hi = section_bounds(text, start, end)
    heading = HEADING.match(text, lo)
    if heading and heading.end() <= start:  # the heading itself is shown as the caption
        lo = heading.end()
        while lo < start and text[lo] in "\r\n":
            lo += 1
    cut_before = cut_after = False
    if start - lo > context_chars:
        lo = _word_start(text, start - context_chars, start)
        cut_before = True
    if hi - end > context_chars:
        hi = _word_end(text, end + context_chars, end)
        cut_after = True
    segments = [Segment(text[lo:start], False), Segment(text[start:end], True), Segment(text[end:hi].rstrip(), False)]
    return [s for s in segments if s.text], cut_before, cut_after


def _word_start(text: str, index: int, limit: int) -> int:
    """The start of the first whole word at or after `index` (never past `limit`)."""
    space = text.find(" ", index, limit)
    return index if space == -1 else space + 1


def _word_end(text: str, index: int, limit: int) -> int:
    """The end of the last whole word before `index` (never before `limit`)."""
    space = text.rfind(" ", limit, index)
    return index if space == -1 else space


def heading_path(text: str, start: int) -> list[str]:
    """The headings above `start`, outermost first (each level replaces the deeper ones)."""
    stack: list[Heading] = []
    for heading in headings(text):
        if heading.start > start:
            break
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
    return [h.text for h in stack]


@dataclasses.dataclass(frozen=True)
class DigestCheck:
    ok: bool
    summary: str
    served_sha256: str
    expected_sha256: str


def check_digest(served_text: str, served_identity: c.PassageIdentity, expected_sha256: str) -> DigestCheck:
    """Recomputes the sha256 of the text just served and compares it with the digest the store
    keeps and the digest the answer recorded when it was given."""
    served = sha256_hex(served_text)
    if served != served_identity.content_sha256:
        return DigestCheck(False, "Mismatch: the text served does not hash to the digest retrieval keeps for it.",
                           served, expected_sha256)
    if expected_sha256 and served != expected_sha256:
        return DigestCheck(False, "Mismatch: the text served now differs from the text the answer cited.",
                           served, expected_sha256)
    if not expected_sha256:
        return DigestCheck(True, "Verified against the store's digest (the link carried no recorded digest).",
                           served, expected_sha256)
    return DigestCheck(True, "Verified: the text served now hashes to the digest recorded in the answer.",
                       served, expected_sha256)


def _when(ts) -> dt.datetime | None:
    if not ts.seconds and not ts.nanos:
        return None
    return ts.ToDatetime(dt.UTC)


def _day(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else ""


@dataclasses.dataclass(frozen=True)
class VersionFacts:
    document_id: str
    title: str
    source_class: str
    version_id: str
    short_version: str
    status: str  # approved | draft | retired
    valid_from: str
    valid_to: str  # empty: open-ended
    validity: str
    superseded_by: str
    superseded: bool
    retired: bool
    not_yet_valid: bool
    extraction_version: str
    source_uri: str
    page_count: int  # viewer pages of a paged source (PDF); 0 otherwise

    @property
    def banner(self) -> str:
        """Why a reader should know this is not the current text, or empty."""
        if self.retired:
            return ("This version is retired: it is kept for audit and no longer used for answers. "
                    "You are reading the text that was cited.")
        if self.superseded:
            return ("This version has been superseded by a newer version. You are reading the text that was "
                    "cited, as it was.")
        if self.not_yet_valid:
            return "This version is not in effect yet."
        return ""


def version_facts(version: c.DocumentVersion, now: dt.datetime | None = None) -> VersionFacts:
    now = now or dt.datetime.now(dt.UTC)
    start, stop = _when(version.valid_from), _when(version.valid_to)
    status = c.VersionStatus.Name(version.status).removeprefix("VERSION_STATUS_").lower()
    retired = version.status == c.VERSION_STATUS_RETIRED
    superseded = not retired and (bool(version.superseded_by_version_id) or (stop is not None and stop <= now))
    validity = f"from {_day(start)}" + (f" until {_day(stop)}" if stop else ", open-ended")
    return VersionFacts(
        document_id=version.document.document_id, title=version.document.title or version.document.document_id,
        source_class=version.document.source_class, version_id=version.version_id,
        short_version=short_version(version.version_id), status=status, valid_from=_day(start),
        valid_to=_day(stop), validity=validity, superseded_by=version.superseded_by_version_id,
        superseded=superseded, retired=retired, not_yet_valid=start is not None and start > now,
        extraction_version=version.extraction_version, source_uri=version.document.source_uri,
        page_count=version.page_count)
