"""PDF sources (text-based; OCR is out of scope).

pypdf reads the document structure (encryption, the page-label tree, the outline); pdfplumber
(pdfminer.six) reads each page's words with their positions and font sizes, and its tables.

The extraction rules (revision RULES_REVISION; changing one changes `version`):
1. Refused: an encrypted file (ENCRYPTED_SOURCE), one that does not parse (CORRUPT_SOURCE), one
   with more pages than the limit (SOURCE_TOO_LARGE), one where no page has a text layer
   (NO_TEXT_LAYER). A page without text that shows an image is reported (NO_TEXT_LAYER issue).
2. Margins: lines in the top or bottom 6% (MARGIN) of the page. A margin line that is a page
   number ("7", "iv", "A-3", "Page 7 of 20") is the page's printed label and is not body text;
   a margin line repeated (digits aside) on at least two pages and 40% of the pages is a running
   header or footer and is dropped. Other margin lines stay.
3. Columns: a page has two columns when at least 3 lines have a gap of >= 12 pt at the same x in
   the middle 30-70% of the page; a run of lines that do not cross that gutter is read left
   column first, then right; a line crossing it (a title, a full-width paragraph) ends the run.
4. Headings: a line that is an outline (bookmark) title on its page, at the outline's depth;
   otherwise a line whose font is at least 1.15 times the body size (the most common size) and
   which has at most 120 characters: the largest such size is level 1, the next level 2, ...
5. Footnotes: a line at most 0.85 times the body size, in the lower half of the page, starting with
   a marker (1-99, *, †, ‡, §), with its continuation lines. Its reference is the same marker set
   raised and smaller right after a word on the same page; the note is written under the block
   holding the reference (`[1] text`). A note without a reference goes at the end of its page and
   is marked for review (FOOTNOTE_WITHOUT_ANCHOR).
6. Lists: a line starting with a bullet (•, ◦, ▪, -, –, *) or an enumerator (1. 2) a)) opens an
   item; following lines indented past its marker continue it.
7. Paragraphs: a vertical gap larger than 1.5 times the page's usual line gap, a change of font
   size, or the top of the next column starts a new paragraph; lines are joined by spaces, a word hyphenated at a line end
   ("arri-" + "val") is joined. A paragraph that ends a page without final punctuation continues
   on the next page when that page starts with a lowercase word.
8. Tables (pdfplumber's ruled-table finder): the first row is the header when every cell has text
   and none is a bare number/amount/date. A table that opens a page, right after a table that ended
   the page before, with the same number of columns, continues it: a repeated header row is
   dropped and the rows go under the first header. Any other table without a header is marked for
   review (TABLE_HEADER_NOT_FOUND).
9. Page labels: the label tree's label when the PDF has one (/PageLabels; roman numerals,
   prefixes, unlabelled ranges), else the printed page number. Verified at ingestion: a tree label
   against the printed number (PAGE_LABEL_MISMATCH when they differ); a printed number against the
   offset (number - viewer index) that most pages numbered the same way (prefix, arabic or roman)
   share, when at least two do (PAGE_LABEL_OUT_OF_SEQUENCE when a page breaks it). A page without
   either has no label: it is cited by its viewer index.
"""

from __future__ import annotations

import dataclasses
import io
import re
import statistics
from collections import Counter

from services.retrieval.extract.base import (
    FOOTNOTE_WITHOUT_ANCHOR,
    LABEL_FROM_PAGE_TEXT,
    LABEL_FROM_TREE,
    LABEL_NONE,
    NO_TEXT_LAYER,
    PAGE_LABEL_MISMATCH,
    PAGE_LABEL_OUT_OF_SEQUENCE,
    PDF,
    TABLE_HEADER_NOT_FOUND,
    Extraction,
    ExtractionIssue,
    PageInfo,
    SourceError,
)
from services.retrieval.extract.writer import MarkdownWriter, clean_inline, footnote_marker, looks_like_header

RULES_REVISION = 1
MARGIN = 0.06
HEADING_RATIO = 1.15
FOOTNOTE_RATIO = 0.85
SUPERSCRIPT_RATIO = 0.8
GUTTER_MIN_PT = 12.0
MAX_HEADING_CHARS = 120

_PAGE_NUMBER = re.compile(
    r"^(?:(?:page|p\.|side|s\.)\s*)?[-–—]?\s*((?:[A-Z]{1,3}[-.])?(?:\d{1,4}|[ivxlcdm]{1,7}|[IVXLCDM]{1,7}))"
    r"\s*[-–—]?\s*(?:(?:of|/|av)\s*\d{1,4})?$", re.IGNORECASE)
_NOTE_MARKER = re.compile(r"^(\d{1,2}|[*†‡§])(?:\s+|(?=[A-Z]))(.*)$")
_REF_MARKER = re.compile(r"^(?:\d{1,2}|[*†‡§])$")
_TRAILING = re.compile(r"^[.,;:!?)\]]+$")
_LIST_ITEM = re.compile(r"^([•◦▪‣∙●○■□–\-*]|\d{1,3}[.)]|[a-z][.)])\s+(.*)$")
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
_FINAL_PUNCTUATION = (".", "!", "?", ":", ";", "\u3002")


def _parse_error(filename: str, exc: Exception) -> SourceError:
    return SourceError("CORRUPT_SOURCE", f"{filename}: not a readable PDF ({type(exc).__name__}: {exc})"[:500])


@dataclasses.dataclass
class _Line:
    words: list[dict]
    top: float
    bottom: float
    x0: float
    x1: float
    size: float = 0.0
    text: str = ""
    margin: bool = False  # in the top or bottom margin zone
    refs: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Table:
    top: float
    rows: list[list[str]]
    bbox: tuple[float, float, float, float]
    refs: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Element:
    kind: str  # heading | paragraph | list | table
    top: float
    text: str = ""
    level: int = 0
    size: float = 0.0
    items: list[tuple[int, str, str]] = dataclasses.field(default_factory=list)
    rows: list[list[str]] = dataclasses.field(default_factory=list)
    refs: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Page:
    index: int
    width: float
    height: float
    lines: list[_Line]  # in reading order; page numbers and running headers removed by _strip_margins
    tables: list[_Table]
    has_text: bool
    has_images: bool
    printed_label: str = ""
    elements: list[_Element] = dataclasses.field(default_factory=list)
    footnotes: list[tuple[str, str]] = dataclasses.field(default_factory=list)


class PdfExtractor:
    media_type = PDF

    def __init__(self, max_pages: int = 2000, rules_revision: int = RULES_REVISION) -> None:
        self.max_pages = max_pages
        self.rules_revision = rules_revision

    @property
    def version(self) -> str:
        import pdfplumber
        import pypdf

        return f"pdf-rules/{self.rules_revision};pypdf/{pypdf.__version__};pdfplumber/{pdfplumber.__version__}"

    def warm_up(self) -> None:
        """Imports the parsers (a few hundred ms) before the first request needs them."""
        import pdfplumber  # noqa: F401
        import pypdf  # noqa: F401

    # --- the pipeline ---------------------------------------------------------------------------

    def extract(self, source: bytes, filename: str) -> Extraction:
        tree_labels, outline, count = self._structure(source, filename)
        pages = self._read_pages(source, filename, count)
        if not any(p.has_text for p in pages):
            raise SourceError("NO_TEXT_LAYER", f"{filename}: none of its {count} page(s) has a text layer "
                              "(a scanned document?); OCR is out of scope: ingest a text-based PDF")
        body_size = _body_size(pages)
        _strip_margins(pages)
        heading_levels = _heading_levels(pages, body_size)
        for page in pages:
            _elements(page, body_size, outline.get(page.index, []), heading_levels)
        return _assemble(pages, tree_labels)

    def _structure(self, source: bytes, filename: str) -> tuple[list[str] | None, dict[int, list], int]:
        """Page count, page-label tree and outline from pypdf; refuses encrypted or unreadable files."""
        import pypdf

        if b"%PDF-" not in source[:1024]:
            raise SourceError("CORRUPT_SOURCE", f"{filename}: not a PDF (no %PDF- header in its first 1024 bytes)")
        try:
            reader = pypdf.PdfReader(io.BytesIO(source), strict=False)
            encrypted = reader.is_encrypted
        except Exception as exc:  # a parser boundary: any failure to parse is a corrupt file
            raise _parse_error(filename, exc) from exc
        if encrypted:
            raise SourceError("ENCRYPTED_SOURCE", f"{filename}: the PDF is encrypted; the store of record keeps "
                              "sources it can re-extract without a key: ingest a decrypted copy")
        try:
            count = len(reader.pages)
            tree = list(reader.page_labels) if "/PageLabels" in reader.root_object else None
            outline = _outline(reader)
        except Exception as exc:
            raise _parse_error(filename, exc) from exc
        if count == 0:
            raise SourceError("CORRUPT_SOURCE", f"{filename}: the PDF has no pages")
        if count > self.max_pages:
            raise SourceError("SOURCE_TOO_LARGE", f"{filename}: {count} pages; the limit is {self.max_pages}")
        return tree, outline, count

    def _read_pages(self, source: bytes, filename: str, count: int) -> list[_Page]:
        import pdfplumber

        try:
            with pdfplumber.open(io.BytesIO(source)) as pdf:
                if len(pdf.pages) != count:
                    raise ValueError(f"pdfplumber sees {len(pdf.pages)} pages, pypdf {count}")
                return [_read_page(i, page) for i, page in enumerate(pdf.pages)]
        except SourceError:
            raise
        except Exception as exc:
            raise _parse_error(filename, exc) from exc


# --- structure (pypdf) ----------------------------------------------------------------------------

def _outline(reader) -> dict[int, list[tuple[int, str]]]:
    """page index -> [(level, title)] from the outline (bookmarks), levels from 1."""
    out: dict[int, list[tuple[int, str]]] = {}

    def walk(items, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # an outline entry pointing nowhere is not a heading
                continue
            title = clean_inline(str(getattr(item, "title", "") or ""))
            if page is not None and page >= 0 and title:
                out.setdefault(page, []).append((level, title))

    walk(reader.outline, 1)
    return out


# --- page content (pdfplumber) -------------------------------------------------------------------

def _read_page(index: int, page) -> _Page:
    tables = []
    for found in page.find_tables():
        rows = [[clean_inline(c or "") for c in row] for row in found.extract()]
        rows = [r for r in rows if any(r)]
        if rows:
            tables.append(_Table(top=found.bbox[1], rows=rows, bbox=found.bbox))
    words = page.extract_words(extra_attrs=["size"], keep_blank_chars=False, x_tolerance=1.5, y_tolerance=2)
    has_text = bool(words) or bool(tables)
    for table in tables:
        inside = [w for w in words if _inside(w, table.bbox)]
        table.refs = _table_refs(table, inside)
    words = [w for w in words if not any(_inside(w, t.bbox) for t in tables)]
    lines = _order_columns(_group_lines(words), page.width)
    height = page.height
    for line in lines:
        line.margin = line.top < MARGIN * height or line.bottom > (1 - MARGIN) * height
    return _Page(index=index, width=page.width, height=height, lines=lines, tables=tables, has_text=has_text,
                 has_images=bool(page.images))


def _table_refs(table: _Table, words: list[dict]) -> list[str]:
    """Footnote references in a table: small raised numbers among its words, symbols ending a cell."""
    refs: list[str] = []
    if words:
        usual = statistics.median(w["size"] for w in words)
        refs.extend(w["text"] for w in words
                    if w["size"] <= SUPERSCRIPT_RATIO * usual and _REF_MARKER.match(w["text"]))
    for row in table.rows:
        for cell in row:
            if cell[-1:] in ("*", "†", "‡", "§") and len(cell) > 1:
                refs.append(cell[-1])
    return list(dict.fromkeys(refs))


def _inside(word: dict, box) -> bool:
    x0, top, x1, bottom = box
    cx, cy = (word["x0"] + word["x1"]) / 2, (word["top"] + word["bottom"]) / 2
    return x0 <= cx <= x1 and top <= cy <= bottom


def _group_lines(words: list[dict]) -> list[_Line]:
    """Words -> lines by vertical overlap (a raised superscript overlaps its line)."""
    lines: list[_Line] = []
    for word in sorted(words, key=lambda w: (w["top"], w["x0"])):
        for line in reversed(lines[-3:]):
            overlap = min(line.bottom, word["bottom"]) - max(line.top, word["top"])
            if overlap >= 0.5 * min(line.bottom - line.top, word["bottom"] - word["top"]):
                line.words.append(word)
                line.top, line.bottom = min(line.top, word["top"]), max(line.bottom, word["bottom"])
                line.x0, line.x1 = min(line.x0, word["x0"]), max(line.x1, word["x1"])
                break
        else:
            lines.append(_Line([word], word["top"], word["bottom"], word["x0"], word["x1"]))
    for line in lines:
        line.words.sort(key=lambda w: w["x0"])
    lines.sort(key=lambda ln: ln.top)
    return lines


def _gutter(lines: list[_Line], width: float) -> float | None:
    """The x of a column gutter (rule 3), or None for a single-column page."""
    votes: Counter[int] = Counter()
    for line in lines:
        for a, b in zip(line.words, line.words[1:], strict=False):
            if b["x0"] - a["x1"] >= GUTTER_MIN_PT:
                for x in range(int(a["x1"]) + 1, int(b["x0"])):
                    if 0.3 * width <= x <= 0.7 * width:
                        votes[x] += 1
    if not votes:
        return None
    x, count = max(votes.items(), key=lambda kv: (kv[1], -abs(kv[0] - width / 2)))
    return float(x) if count >= 3 else None


def _split(line: _Line, x: float) -> tuple[_Line | None, _Line | None] | None:
    """(left, right) parts of a line at gutter x, or None when a word crosses it."""
    if any(w["x0"] < x < w["x1"] for w in line.words):
        return None
    left = [w for w in line.words if w["x1"] <= x]
    right = [w for w in line.words if w["x0"] >= x]

    def part(words):
        if not words:
            return None
        return _Line(words, min(w["top"] for w in words), max(w["bottom"] for w in words),
                     min(w["x0"] for w in words), max(w["x1"] for w in words))

    return part(left), part(right)


def _order_columns(lines: list[_Line], width: float) -> list[_Line]:
    gutter = _gutter(lines, width)
    if gutter is None:
        return lines
    out: list[_Line] = []
    left: list[_Line] = []
    right: list[_Line] = []
    for line in lines:
        parts = _split(line, gutter)
        if parts is None:  # full width: ends the two-column run
            out.extend(left + right)
            left, right = [], []
            out.append(line)
            continue
        if parts[0] is not None:
            left.append(parts[0])
        if parts[1] is not None:
            right.append(parts[1])
    out.extend(left + right)
    return out


def _line_text(line: _Line) -> None:
    """Sets the line's size (of its regular words) and text, with raised small markers after a
    word written as footnote references ([1], *)."""
    sizes = Counter()
    for w in line.words:
        sizes[round(w["size"], 1)] += len(w["text"])
    line.size = max(sizes.items(), key=lambda kv: (kv[1], kv[0]))[0]
    parts: list[str] = []
    previous = None
    for w in line.words:
        raised = w["size"] <= SUPERSCRIPT_RATIO * line.size and w["bottom"] < line.bottom - 0.15 * line.size
        if raised and previous is not None and _REF_MARKER.match(w["text"]) and w["x0"] - previous["x1"] < 2.0:
            parts[-1] += footnote_marker(w["text"])
            line.refs.append(w["text"])
        elif previous is not None and parts and w["x0"] - previous["x1"] < 0.5 and _TRAILING.match(w["text"]):
            parts[-1] += w["text"]  # punctuation set right after a marker ("spots¹.") is not a word
        else:
            parts.append(w["text"])
        previous = w
    line.text = " ".join(parts)


# --- document-level rules -----------------------------------------------------------------------

def _body_size(pages: list[_Page]) -> float:
    sizes: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            for w in line.words if not line.margin else ():
                sizes[round(w["size"], 1)] += len(w["text"])
    return max(sizes.items(), key=lambda kv: (kv[1], -kv[0]))[0] if sizes else 10.0


def _strip_margins(pages: list[_Page]) -> None:
    """Rule 2: printed page numbers become labels; running headers/footers are dropped; every other
    line keeps its place in the reading order."""
    def key(text: str) -> str:
        return re.sub(r"\d+", "#", text.casefold())

    counts: Counter[str] = Counter()
    for page in pages:
        for line in page.lines:
            _line_text(line)
        counts.update({key(line.text) for line in page.lines if line.margin})
    running = {k for k, n in counts.items() if n >= 2 and n >= 0.4 * len(pages)}
    for page in pages:
        dropped: set[int] = set()
        # The bottom margin first: a page number there is the usual place.
        for i in sorted((i for i, ln in enumerate(page.lines) if ln.margin), key=lambda i: -page.lines[i].top):
            line = page.lines[i]
            match = _PAGE_NUMBER.match(line.text.strip())
            if match and not page.printed_label:
                page.printed_label = match.group(1)
                dropped.add(i)
            elif key(line.text) in running:
                dropped.add(i)
        page.lines = [ln for i, ln in enumerate(page.lines) if i not in dropped]


def _heading_levels(pages: list[_Page], body_size: float) -> dict[float, int]:
    """Font size -> heading level (rule 4): the largest heading size is level 1, and so on."""
    sizes = sorted({line.size for page in pages for line in page.lines
                    if line.size >= HEADING_RATIO * body_size and len(line.text) <= MAX_HEADING_CHARS},
                   reverse=True)
    return {size: min(6, rank + 1) for rank, size in enumerate(sizes)}


def _elements(page: _Page, body_size: float, outline: list[tuple[int, str]], levels: dict[float, int]) -> None:
    """Rules 4-8 on one page: its lines and tables -> headings, paragraphs, lists, tables, notes."""
    titles = {title.casefold(): level for level, title in outline}
    body: list[_Line] = []
    notes: list[tuple[str, list[str]]] = []
    for line in page.lines:
        note = _NOTE_MARKER.match(line.text)
        small = line.size <= FOOTNOTE_RATIO * body_size and line.top > page.height / 2
        if small and note:
            notes.append((note.group(1), [note.group(2)]))
        elif small and notes and not _LIST_ITEM.match(line.text):
            notes[-1][1].append(line.text)
        else:
            body.append(line)
    page.footnotes = [(marker, " ".join(parts)) for marker, parts in notes]
    gaps = [b.top - a.bottom for a, b in zip(body, body[1:], strict=False) if b.top >= a.bottom]
    usual_gap = statistics.median(gaps) if len(gaps) >= 3 else 0.6 * body_size
    tables = sorted(page.tables, key=lambda t: t.top)
    elements: list[_Element] = []
    previous: _Line | None = None
    for line in body:
        while tables and tables[0].top < line.top:
            table = tables.pop(0)
            elements.append(_Element("table", table.top, rows=table.rows, refs=list(table.refs)))
            previous = None
        text = line.text.strip()
        title_level = titles.get(clean_inline(text).casefold())
        if title_level is not None or (line.size in levels and len(text) <= MAX_HEADING_CHARS):
            level = title_level or levels[line.size]
            last = elements[-1] if elements else None
            if (last is not None and last.kind == "heading" and previous is not None and last.size == line.size
                    and line.top - previous.bottom <= usual_gap * 1.5 + 2):
                last.text += " " + text  # a heading over two lines
            else:
                elements.append(_Element("heading", line.top, text=text, level=level, size=line.size))
            elements[-1].refs.extend(line.refs)
            previous = line
            continue
        item = _LIST_ITEM.match(text)
        gap = line.top - previous.bottom if previous is not None else 0.0
        # A line above the one before it is the top of the next column: a new block.
        new_block = (previous is None or gap > usual_gap * 1.5 + 2 or line.top < previous.top
                     or abs(line.size - previous.size) > 0.5)
        last = elements[-1] if elements else None
        if item:
            if last is None or last.kind != "list" or gap > usual_gap * 1.5 + 2:
                elements.append(_Element("list", line.top, size=line.size))
                last = elements[-1]
                last.level = int(line.x0)  # x of the list's first marker
            depth = max(0, int((line.x0 - last.level) // 10))
            last.items.append((depth, item.group(1), item.group(2)))
            last.refs.extend(line.refs)
        elif last is not None and last.kind == "list" and not new_block and line.x0 > last.level + 2:
            depth, marker, body_text = last.items[-1]
            last.items[-1] = (depth, marker, _join(body_text, text))
            last.refs.extend(line.refs)
        elif last is not None and last.kind == "paragraph" and not new_block:
            last.text = _join(last.text, text)
            last.refs.extend(line.refs)
        else:
            elements.append(_Element("paragraph", line.top, text=text, size=line.size, refs=list(line.refs)))
        previous = line
    elements.extend(_Element("table", t.top, rows=t.rows, refs=list(t.refs)) for t in tables)
    page.elements = elements


def _join(left: str, right: str) -> str:
    """Lines of one block: joined by a space; a word hyphenated at the line end is rejoined."""
    if re.search(r"[A-Za-zÀ-ÿ]-$", left) and right[:1].islower():
        return left[:-1] + right
    return f"{left} {right}"


# --- assembly ------------------------------------------------------------------------------------

def _assemble(pages: list[_Page], tree: list[str] | None) -> Extraction:
    writer = MarkdownWriter()
    issues: list[ExtractionIssue] = []
    starts: list[int | None] = []
    last_table: tuple[list[str], int] | None = None  # (header, columns) of a table that ends the text
    pending: list[tuple[str, str]] = []  # notes of the last block, written once that block is complete
    for page in pages:
        page_start: int | None = None
        notes = dict(page.footnotes)
        used: set[str] = set()
        for i, element in enumerate(page.elements):
            continued, start = _continue(writer, element, last_table) if i == 0 else (False, 0)
            if not continued:
                if pending:
                    writer.footnote_lines(pending)
                    pending = []
                start = _write(writer, element, page, issues)
            if page_start is None:
                page_start = start
            if element.kind != "table":
                last_table = None
            elif not continued:
                last_table = (element.rows[0], len(element.rows[0]))
            for marker in element.refs:
                if marker in notes and marker not in used:
                    pending.append((marker, notes[marker]))
                    used.add(marker)
        unanchored = [(m, t) for m, t in page.footnotes if m not in used]
        if pending and (unanchored or not _may_continue(writer, page)):
            writer.footnote_lines(pending)
            pending = []
        for marker, text in unanchored:
            reason = f"footnote {marker} on viewer page {page.index + 1} has no reference in the text"
            block = writer.footnote_block(marker, text, reason)
            issues.append(ExtractionIssue(FOOTNOTE_WITHOUT_ANCHOR, reason, page.index + 1, block.start, block.end))
            last_table = None
            if page_start is None:
                page_start = block.start
        starts.append(page_start)
        if not page.has_text and page.has_images:
            issues.append(ExtractionIssue(
                NO_TEXT_LAYER, f"viewer page {page.index + 1} has no text layer (an image only: scanned?); its "
                "content is not in any passage (OCR is out of scope)", page.index + 1))
    if pending:
        writer.footnote_lines(pending)
    text = writer.text()
    infos, label_issues = _page_map(pages, tree, _ranges(text, starts))
    return Extraction(text=text, media_type=PDF, pages=tuple(infos), issues=tuple(issues + label_issues),
                      review_spans=tuple(writer.review_spans))


def _may_continue(writer: MarkdownWriter, page: _Page) -> bool:
    """Whether the page's last block may go on on the next page (a table, or a paragraph without
    final punctuation): its footnotes wait until it is complete."""
    if not page.elements or not writer.blocks:
        return False
    last = writer.blocks[-1]
    if last.kind == "table":
        return True
    return last.kind == "paragraph" and not writer.text()[last.start:last.end].rstrip().endswith(_FINAL_PUNCTUATION)


def _ranges(text: str, starts: list[int | None]) -> list[tuple[int, int]]:
    """[start, end) of each page's text: up to where the next page with text starts (trailing
    blank lines excluded); a page without text gets an empty range where it would be."""
    out: list[tuple[int, int]] = []
    position = 0
    for i, start in enumerate(starts):
        if start is None:
            out.append((position, position))
            continue
        following = next((s for s in starts[i + 1:] if s is not None), len(text))
        end = max(start, following)
        while end > start and text[end - 1].isspace():
            end -= 1
        start = min(start, end)
        out.append((start, end))
        position = end
    return out


def _continue(writer: MarkdownWriter, element: _Element, last_table) -> tuple[bool, int]:
    """Rule 7 and 8: the first element of a page may continue the last block of the page before."""
    start = writer.offset + 1
    if element.kind == "table" and last_table is not None and len(element.rows[0]) == last_table[1]:
        rows = element.rows
        if [c.casefold() for c in rows[0]] == [c.casefold() for c in last_table[0]]:
            rows = rows[1:]  # the header repeated on the new page
        return writer.extend_table(rows, last_table[1]), start
    last = writer.blocks[-1] if writer.blocks else None
    if (element.kind == "paragraph" and last is not None and last.kind == "paragraph"
            and not writer.text()[last.start:last.end].rstrip().endswith(_FINAL_PUNCTUATION)
            and element.text[:1].islower()):
        return writer.continue_paragraph(element.text), start
    return False, start


def _write(writer: MarkdownWriter, element: _Element, page: _Page, issues: list[ExtractionIssue]) -> int:
    if element.kind == "heading":
        block = writer.heading(element.level, element.text)
    elif element.kind == "list":
        block = writer.list_items(element.items)
    elif element.kind == "table":
        header = element.rows[0] if looks_like_header(element.rows[0]) else None
        reason = f"a table on viewer page {page.index + 1} has no header row that could be found"
        block = writer.table(header, element.rows[1:] if header is not None else element.rows, reason)
        if header is None and block is not None:
            issues.append(ExtractionIssue(TABLE_HEADER_NOT_FOUND, reason, page.index + 1, block.start, block.end))
    else:
        block = writer.paragraph(element.text)
    return block.start if block is not None else writer.offset


def _roman_value(text: str) -> int | None:
    text = text.lower()
    if not text or any(ch not in _ROMAN for ch in text):
        return None
    total = 0
    for ch, nxt in zip(text, text[1:] + " ", strict=True):
        value = _ROMAN[ch]
        total += -value if nxt in _ROMAN and _ROMAN[nxt] > value else value
    return total


def _format_number(value: int, system: str) -> str:
    if system == "D" or value <= 0:
        return str(value)
    out = ""
    for number, letters in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"),
                            (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):
        while value >= number:
            out += letters
            value -= number
    return out.upper() if system == "R" else out


def _label_parts(label: str) -> tuple[str, str, int] | None:
    """("A-", "D", 3) for "A-3"; ("", "r", 4) for "iv"; None when not a page number."""
    match = re.match(r"^(.*?)(\d+|[ivxlcdm]+|[IVXLCDM]+)$", label)
    if not match:
        return None
    prefix, number = match.groups()
    if number.isdigit():
        return prefix, "D", int(number)
    value = _roman_value(number)
    return (prefix, "r" if number.islower() else "R", value) if value else None


def _expected_offsets(printed: list[str]) -> dict[tuple[str, str], int]:
    """For each numbering (prefix, system) of the printed labels, the offset number - viewer index
    that at least two pages share and most pages have: the document's verified fixed offset."""
    offsets: dict[tuple[str, str], Counter[int]] = {}
    for i, label in enumerate(printed):
        parts = _label_parts(label) if label else None
        if parts is not None:
            offsets.setdefault(parts[:2], Counter())[parts[2] - (i + 1)] += 1
    out = {}
    for numbering, counts in offsets.items():
        offset, count = max(counts.items(), key=lambda kv: (kv[1], -abs(kv[0])))
        if count >= 2:
            out[numbering] = offset
    return out


def _page_map(pages: list[_Page], tree: list[str] | None, ranges: list[tuple[int, int]]
              ) -> tuple[list[PageInfo], list[ExtractionIssue]]:
    """Rule 9: each page's label, its source, and whether it was verified."""
    issues: list[ExtractionIssue] = []
    printed = [p.printed_label for p in pages]
    offsets = _expected_offsets(printed)
    infos: list[PageInfo] = []
    for i, page in enumerate(pages):
        viewer = i + 1
        tree_label = tree[i] if tree is not None and i < len(tree) else None
        mine = printed[i]
        if tree_label:
            label, source = tree_label, LABEL_FROM_TREE
            verified = bool(mine) and mine.casefold() == tree_label.casefold()
            if mine and not verified:
                issues.append(ExtractionIssue(
                    PAGE_LABEL_MISMATCH, f"viewer page {viewer}: the page-label tree says {tree_label!r} but the page "
                    f"prints {mine!r}; citations use {tree_label!r}", viewer))
        elif mine:
            label, source = mine, LABEL_FROM_PAGE_TEXT
            parts = _label_parts(mine)
            expected = offsets.get(parts[:2]) if parts is not None else None
            verified = expected is not None and parts[2] - viewer == expected
            if expected is not None and not verified:
                issues.append(ExtractionIssue(
                    PAGE_LABEL_OUT_OF_SEQUENCE, f"viewer page {viewer} prints {mine!r}; the other pages numbered "
                    f"this way put it at {parts[0]}{_format_number(viewer + expected, parts[1])}", viewer))
        else:
            label, source, verified = "", LABEL_NONE, False
        start, end = ranges[i]
        infos.append(PageInfo(viewer_page=viewer, start=start, end=end, label=label, label_source=source,
                              tree_label=tree_label, printed_label=mine, verified=verified,
                              has_text_layer=page.has_text))
    return infos, issues
