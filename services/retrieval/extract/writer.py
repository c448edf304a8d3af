"""Writes extracted structure as the Markdown the chunker reads, keeping every block's offsets.

Shared by the PDF and the HTML extractor so both produce the same shapes:
- a heading: `#`..`######` and its text on one line;
- a paragraph: one line (its source lines joined by spaces), footnotes it references on the
  lines right under it (`[n] text`), so the chunker keeps them in the same block;
- a list: `- item` / `1. item`, nested items indented by two spaces per level;
- a table: `| a | b |` rows, a `| --- |` separator under the header row;
blocks separated by one blank line.
"""

from __future__ import annotations

import dataclasses
import re

from services.retrieval.extract.base import ReviewSpan

_SPACE = re.compile(r"\s+")
# A cell that is a value rather than a column name: a number, amount, percentage, time or date.
_VALUE_CELL = re.compile(
    r"^[\s$€£¥₹kr.,:%+\-–/()0-9]*\d[\s$€£¥₹kr.,:%+\-–/()0-9]*(?:[a-zA-Z]{1,4})?$")


def clean_inline(text: str) -> str:
    """Whitespace runs (newlines included) become one space; trimmed."""
    return _SPACE.sub(" ", text).strip()


def looks_like_header(row: list[str]) -> bool:
    """The stated header rule: a row is a table header when every cell has text and no cell is a
    bare value (number, amount, percentage, time, date)."""
    cells = [clean_inline(c) for c in row]
    return bool(cells) and all(cells) and not any(_VALUE_CELL.match(c) for c in cells)


def _cell(text: str) -> str:
    return clean_inline(text).replace("|", "\\|")


def table_row(cells: list[str]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def separator_row(columns: int) -> str:
    return "| " + " | ".join("---" for _ in range(columns)) + " |"


@dataclasses.dataclass
class Block:
    """[start, end) of a written block in the text."""

    kind: str
    start: int
    end: int


class MarkdownWriter:
    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.blocks: list[Block] = []
        self.review_spans: list[ReviewSpan] = []

    @property
    def offset(self) -> int:
        return self._length

    def text(self) -> str:
        return "".join(self._parts)

    def _write(self, piece: str) -> None:
        self._parts.append(piece)
        self._length += len(piece)

    def _open_block(self) -> int:
        if self._length:
            self._write("\n\n")
        return self._length

    def _close_block(self, kind: str, start: int) -> Block:
        block = Block(kind, start, self._length)
        self.blocks.append(block)
        return block

    def heading(self, level: int, text: str) -> Block | None:
        text = clean_inline(text)
        if not text:
            return None
        start = self._open_block()
        self._write("#" * max(1, min(6, level)) + " " + text)
        return self._close_block("heading", start)

    def paragraph(self, text: str) -> Block | None:
        text = clean_inline(text)
        if not text:
            return None
        start = self._open_block()
        self._write(text)
        return self._close_block("paragraph", start)

    def continue_paragraph(self, text: str) -> bool:
        """Appends to the last block when it is a paragraph (a sentence running over a page
        break); False when there is no such paragraph."""
        text = clean_inline(text)
        if not text or not self.blocks or self.blocks[-1].kind != "paragraph" or self.blocks[-1].end != self._length:
            return False
        self._write(" " + text)
        self.blocks[-1].end = self._length
        return True

    def code(self, text: str) -> Block | None:
        """A preformatted block, fenced (a fence inside it is broken up so it cannot close early)."""
        body = text.strip("\n")
        if not body.strip():
            return None
        start = self._open_block()
        self._write("```\n" + body.replace("```", "` ` `") + "\n```")
        return self._close_block("code", start)

    def list_items(self, items: list[tuple[int, str, str]]) -> Block | None:
        """items: (depth, marker, text); marker is "-" or an enumerator like "1.", "a)"."""
        items = [(d, m, clean_inline(t)) for d, m, t in items if clean_inline(t)]
        if not items:
            return None
        start = self._open_block()
        lines = [("  " * depth) + (marker if marker and marker[0].isalnum() else "-") + " " + text
                 for depth, marker, text in items]
        self._write("\n".join(lines))
        return self._close_block("list", start)

    def table(self, header: list[str] | None, rows: list[list[str]], review_reason: str = "") -> Block | None:
        """A table; `header` None means none was found: the first row is written in the header
        position (Markdown needs one) and the table is marked for review with `review_reason`."""
        rows = [r for r in rows if any(clean_inline(c) for c in r)]
        if header is None and not rows:
            return None
        start = self._open_block()
        head, body = (header, rows) if header is not None else (rows[0], rows[1:])
        columns = max([len(head)] + [len(r) for r in body])
        lines = [table_row(_pad(head, columns)), separator_row(columns)]
        lines.extend(table_row(_pad(r, columns)) for r in body)
        self._write("\n".join(lines))
        block = self._close_block("table", start)
        if header is None:
            self.review_spans.append(ReviewSpan(start, self._length, review_reason or "table header not found"))
        return block

    def extend_table(self, rows: list[list[str]], columns: int) -> bool:
        """Appends rows to the last block when it is a table (a table running over a page break)."""
        rows = [r for r in rows if any(clean_inline(c) for c in r)]
        if not self.blocks or self.blocks[-1].kind != "table" or self.blocks[-1].end != self._length:
            return False
        if rows:
            self._write("\n" + "\n".join(table_row(_pad(r, columns)) for r in rows))
            self.blocks[-1].end = self._length
        return True

    def footnote_lines(self, notes: list[tuple[str, str]]) -> None:
        """Footnotes (marker, text) on the lines right under the last block, so they stay in it
        (a table's footnote becomes the paragraph the chunker attaches to the table)."""
        for marker, text in notes:
            self._write(f"\n{footnote_marker(marker)} {clean_inline(text)}")
        if self.blocks:
            self.blocks[-1].end = self._length

    def footnote_block(self, marker: str, text: str, review_reason: str) -> Block | None:
        """A footnote nothing references: its own paragraph, marked for review."""
        start = self._open_block()
        self._write(f"{footnote_marker(marker)} {clean_inline(text)}")
        block = self._close_block("paragraph", start)
        self.review_spans.append(ReviewSpan(start, self._length, review_reason))
        return block


def footnote_marker(marker: str) -> str:
    """How a footnote marker is written, at the reference and before the note: a number as [n]
    (never mistaken for a list item or a quantity), a symbol (*, †, ‡, §) as itself."""
    return f"[{marker}]" if marker.isdigit() else marker


def _pad(row: list[str], columns: int) -> list[str]:
    return list(row) + [""] * (columns - len(row))
