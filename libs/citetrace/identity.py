"""The identity formulas of evidence (DESIGN.md §2), shared by every service so a passage ID, a
digest or a pinned link is computed the same way wherever it is made or checked."""

from __future__ import annotations

import hashlib
import urllib.parse


def sha256_hex(data: str | bytes) -> str:
    """Hex SHA-256 of bytes, or of a text's UTF-8 encoding."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def version_id_of(normalized_text: str) -> str:
    return sha256_hex(normalized_text)


def passage_id_of(tenant_id: str, document_id: str, version_id: str, start: int, end: int) -> str:
    """passage_id = sha256("tenant:document:version:start:end")."""
    return sha256_hex(f"{tenant_id}:{document_id}:{version_id}:{start}:{end}")


def pinned_link(document_id: str, version_id: str, start: int | None = None, end: int | None = None) -> str:
    """/documents/{document_id}/versions/{version_id}[#chars={start}-{end}]; the document ID is
    percent-encoded because source IDs may contain '/'."""
    base = f"/documents/{urllib.parse.quote(document_id, safe='-_.~')}/versions/{version_id}"
    return base if start is None else f"{base}#chars={start}-{end}"
