"""Markdown sources: the text is the document (already structured for the chunker)."""

from __future__ import annotations

from services.retrieval.chunker import normalize_text
from services.retrieval.extract.base import MARKDOWN, Extraction, SourceError


class MarkdownExtractor:
    """UTF-8 Markdown; line endings normalized, nothing else (exactly what the text field always got).
    Its version is empty: a Markdown version's extraction_version is the chunker's alone, as it
    was before other formats existed, so stored Markdown versions keep their identity."""

    media_type = MARKDOWN
    version = ""

    def warm_up(self) -> None:
        pass

    def extract(self, source: bytes, filename: str) -> Extraction:
        try:
            text = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError("INVALID_ENCODING", f"{filename}: not UTF-8 ({exc})"[:400]) from exc
        return Extraction(text=normalize_text(text), media_type=MARKDOWN)
