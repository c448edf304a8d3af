"""The identity formulas of evidence (DESIGN.md §2), shared by every service so a passage ID, a
digest or a pinned link is computed the same way wherever it is made or checked."""

from __future__ import annotations

import hashlib
import urllib.parse
from pathlib import Path


def sha256_hex(data: str | bytes) -> str:
    """Hex SHA-256 of bytes, or of a text's UTF-8 encoding."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks (pinned model and data files)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def version_id_of(normalized_text: str) -> str:
    return sha256_hex(normalized_text)


def passage_id_of(tenant_id: str, document_id: str, version_id: str, start: int, end: int) -> str:
    """passage_id = sha256("tenant:document:version:start:end")."""
    return sha256_hex(f"{tenant_id}:{document_id}:{version_id}:{start}:{end}")


def pinned_link(document_id: str, version_id: str, start: int | None = None, end: int | None = None,
                page: int = 0) -> str:
    """/documents/{document_id}/versions/{version_id}[#[page={page}&]chars={start}-{end}]; the
    document ID is percent-encoded because source IDs may contain '/'. `page` (a viewer index, 0 =
    none) comes first in the fragment, as PDF viewers read `#page=N`."""
    base = f"/documents/{urllib.parse.quote(document_id, safe='-_.~')}/versions/{version_id}"
    if start is None:
        return f"{base}#page={page}" if page > 0 else base
    return f"{base}#page={page}&chars={start}-{end}" if page > 0 else f"{base}#chars={start}-{end}"


def page_locator(page_start: int, page_end: int, label_start: str, label_end: str) -> str:
    """How a passage's pages are shown to people (CLI, console): the printed label with the viewer
    index when they differ — "p. 3 (viewer page 9)", "pp. 3-4 (viewer pages 9-10)" — the viewer
    index alone for a page without a label, "" for a source without pages."""
    if page_start <= 0:
        return ""
    page_end = max(page_end, page_start)
    one = page_end == page_start
    viewer = f"viewer page {page_start}" if one else f"viewer pages {page_start}-{page_end}"
    if not label_start or (not one and not label_end):
        return viewer
    printed = f"p. {label_start}" if one else f"pp. {label_start}-{label_end}"
    same = label_start == str(page_start) and (one or label_end == str(page_end))
    return printed if same else f"{printed} ({viewer})"
