"""HTML sources (a saved, static web page), parsed with lxml (libxml2's HTML parser).

The extraction rules (revision RULES_REVISION; changing one changes `version`):
1. Encoding: a byte-order mark, else the <meta charset> / http-equiv of the first 4 KB, else UTF-8;
   bytes that do not decode are refused (INVALID_ENCODING).
2. Active content is refused (ACTIVE_CONTENT): a <script> that would run (no type, a JavaScript
   type or "module"), an on* event-handler attribute, a javascript: URL. Text that a script shows
   cannot be checked against the stored source, and script text must never become evidence. Data
   blocks (<script type="application/ld+json"> and other non-JavaScript types) are dropped.
3. Boilerplate is dropped: <nav>, <aside>, <form>, <button>, <noscript>, <template>, <style>,
   <iframe>, <object>, <embed>, <svg>, <canvas>, <dialog>; <header> and <footer> outside <main>
   and <article> (the page's banner and footer, not an article's own header); elements whose ARIA
   role is navigation, banner, contentinfo, search, complementary, menu, menubar or toolbar; and
   hidden elements (the hidden attribute, aria-hidden="true", style display:none). The content is
   then the page's <main> (or role=main) when it has one, else its single <article>, else <body>.
4. Headings: <h1>..<h6> at their level. Lists: <ul>/<ol> items ("- ", "1. "), nested lists
   indented. Paragraphs: every other block element's text, whitespace collapsed, <br> a space.
   <pre> is kept as a fenced block. <dl> terms and definitions become "term: definition" lines.
5. Tables: the header is the <thead> rows, else a first row of <th> cells, else the first row when
   every cell has text and none is a bare number/amount/date; otherwise the table is marked for
   review (TABLE_HEADER_NOT_FOUND). colspan repeats a cell across its columns, rowspan down its
   rows; several header rows are joined per column with " / "; a <caption> becomes the
   paragraph "Table: caption" above the table.
6. Footnotes: a note reference is a link to "#id" inside <sup> or with role doc-noteref; the element
   with that id is the note: its text (backlinks such as "↩" removed) is written under the block
   that holds the reference as "[n] text". A note that nothing references (role doc-footnote, or
   an item of a role doc-endnotes / class "footnotes" list) is written at the end and marked for
   review (FOOTNOTE_WITHOUT_ANCHOR).
"""

from __future__ import annotations

import codecs
import dataclasses
import re

from services.retrieval.chunker import normalize_text
from services.retrieval.extract.base import (
    FOOTNOTE_WITHOUT_ANCHOR,
    HTML,
    TABLE_HEADER_NOT_FOUND,
    Extraction,
    ExtractionIssue,
    SourceError,
)
from services.retrieval.extract.writer import MarkdownWriter, clean_inline, footnote_marker, looks_like_header

RULES_REVISION = 1

_DROPPED_TAGS = frozenset({"nav", "aside", "form", "button", "noscript", "template", "style", "iframe", "object",
                           "embed", "svg", "canvas", "dialog", "select", "input", "textarea", "head", "title",
                           "meta", "link", "script"})
_PAGE_FRAME_TAGS = frozenset({"header", "footer"})
_DROPPED_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary", "menu", "menubar",
                            "toolbar"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset({"p", "div", "section", "article", "main", "blockquote", "header", "footer", "figure",
                     "figcaption", "address", "details", "summary", "fieldset", "center", "body", "li", "dd",
                     "dt", "hgroup", "search", "picture"})
_JS_TYPES = re.compile(r"^(?:|text/javascript|application/javascript|application/x-javascript|text/ecmascript|"
                       r"application/ecmascript|module|text/jscript|text/livescript)$", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9_:.-]+)", re.IGNORECASE)
_BACKLINK = re.compile(r"[↩↑⤴]\ufe0e?")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)


def _tag(el) -> str:
    tag = el.tag
    return tag.lower() if isinstance(tag, str) else ""


@dataclasses.dataclass
class _Inline:
    text: str = ""
    refs: list[str] = dataclasses.field(default_factory=list)


class HtmlExtractor:
    media_type = HTML

    def __init__(self, rules_revision: int = RULES_REVISION) -> None:
        self.rules_revision = rules_revision

    @property
    def version(self) -> str:
        import lxml.etree

        return f"html-rules/{self.rules_revision};lxml/{'.'.join(map(str, lxml.etree.LXML_VERSION[:3]))}"

    def warm_up(self) -> None:
        import lxml.html  # noqa: F401

    def extract(self, source: bytes, filename: str) -> Extraction:
        import lxml.html

        encoding = _encoding(source)
        try:
            decoded = source.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise SourceError("INVALID_ENCODING", f"{filename}: not valid {encoding} ({exc})"[:400]) from exc
        if not decoded.strip():
            raise SourceError("EMPTY_TEXT", f"{filename}: the file is empty")
        try:  # libxml2 gets UTF-8 whatever the page declared: the decoding above is the one that counts
            parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
            document = lxml.html.document_fromstring(decoded.lstrip("\ufeff").encode("utf-8"), parser=parser)
        except Exception as exc:  # a parser boundary: lxml raises ParserError, ValueError, ...
            raise SourceError("CORRUPT_SOURCE", f"{filename}: not a readable HTML document ({exc})"[:400]) from exc
        _refuse_active_content(document, filename)
        return _Walker(document).run()


def _encoding(source: bytes) -> str:
    for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                      (codecs.BOM_UTF16_BE, "utf-16")):
        if source.startswith(bom):
            return name
    match = _META_CHARSET.search(source[:4096])
    if match:
        name = match.group(1).decode("ascii", "replace").lower()
        try:
            return codecs.lookup(name).name
        except LookupError:
            return "utf-8"
    return "utf-8"


def _refuse_active_content(document, filename: str) -> None:
    """Rule 2."""
    found: list[str] = []
    for el in document.iter():
        tag = _tag(el)
        if tag == "script" and _JS_TYPES.match((el.get("type") or "").strip()):
            found.append("a <script> element" + (f" (line {el.sourceline})" if el.sourceline else ""))
        for name, value in el.attrib.items():
            if name.lower().startswith("on"):
                found.append(f"an {name} event handler on <{tag}>")
            elif name.lower() in ("href", "src", "action", "formaction") and \
                    value.strip().lower().startswith("javascript:"):
                found.append(f"a javascript: URL in <{tag} {name}>")
        if len(found) >= 3:
            break
    if found:
        raise SourceError("ACTIVE_CONTENT", f"{filename}: HTML with scripts is not ingested ({'; '.join(found)}): "
                          "text a script shows cannot be checked against the stored source; save the page "
                          "without scripts")


def _hidden(el) -> bool:
    return (el.get("hidden") is not None or (el.get("aria-hidden") or "").lower() == "true"
            or bool(_HIDDEN_STYLE.search(el.get("style") or "")))


class _Walker:
    """Rules 3-6 over the parsed document."""

    def __init__(self, document) -> None:
        self.document = document
        self.writer = MarkdownWriter()
        self.issues: list[ExtractionIssue] = []
        self.notes: dict[str, tuple[str, object]] = {}  # id -> (marker, element)
        self.used: set[str] = set()

    def run(self) -> Extraction:
        self._find_notes()
        root = self._content_root()
        self._blocks(root, inside_content=_tag(root) in ("main", "article"))
        self._unreferenced_notes()
        text = normalize_text(self.writer.text())
        return Extraction(text=text, media_type=HTML, issues=tuple(self.issues),
                          review_spans=tuple(self.writer.review_spans))

    # --- rule 3 ---------------------------------------------------------------------------------

    def _content_root(self):
        body = self.document.find("body")
        if body is None:
            body = self.document
        mains = [el for el in body.iter() if _tag(el) == "main" or (el.get("role") or "").lower() == "main"]
        if mains:
            return mains[0]
        articles = [el for el in body.iter() if _tag(el) == "article"]
        return articles[0] if len(articles) == 1 else body

    def _dropped(self, el, inside_content: bool) -> bool:
        tag = _tag(el)
        if not tag:
            return True
        if el in self._note_elements:
            return True  # written under its reference instead
        if tag in _DROPPED_TAGS or _hidden(el):
            return True
        if (el.get("role") or "").lower() in _DROPPED_ROLES:
            return True
        return tag in _PAGE_FRAME_TAGS and not inside_content

    # --- rule 6: notes --------------------------------------------------------------------------

    def _find_notes(self) -> None:
        # Elements are dict keys and set members (lxml keeps one proxy per node while it is referenced).
        ids = {el.get("id"): el for el in self.document.iter() if isinstance(el.tag, str) and el.get("id")}
        self._note_refs: dict[object, str] = {}  # <a> -> note id
        for a in self.document.iter("a"):
            href = (a.get("href") or "").strip()
            if not href.startswith("#") or href[1:] not in ids:
                continue
            parent = a.getparent()
            is_ref = (a.get("role") or "").lower() == "doc-noteref" or (parent is not None and _tag(parent) == "sup")
            if is_ref:
                marker = clean_inline(a.text_content()).strip("[]()") or str(len(self.notes) + 1)
                self.notes.setdefault(href[1:], (marker, ids[href[1:]]))
                self._note_refs[a] = href[1:]
        self._note_elements = {el for _, el in self.notes.values()}
        # Note-like elements nothing references (rule 6, last sentence), with their list position.
        self._orphans: list[tuple[str, object]] = []
        for el in self.document.iter():
            if not isinstance(el.tag, str) or el in self._note_elements:
                continue
            role = (el.get("role") or "").lower()
            classes = (el.get("class") or "").lower().split()
            if role == "doc-footnote":
                self._orphans.append(("*", el))
            elif role == "doc-endnotes" or "footnotes" in classes:
                items = [li for li in el.iter("li")]
                self._orphans.extend((str(n), li) for n, li in enumerate(items, start=1)
                                     if li not in self._note_elements)
        self._note_elements |= {el for _, el in self._orphans}

    def _note_text(self, el) -> str:
        return clean_inline(_BACKLINK.sub("", el.text_content()))

    def _attach_notes(self, refs: list[str]) -> None:
        notes = []
        for note_id in refs:
            if note_id in self.notes and note_id not in self.used:
                marker, el = self.notes[note_id]
                notes.append((marker, self._note_text(el)))
                self.used.add(note_id)
        if notes:
            self.writer.footnote_lines(notes)

    def _unreferenced_notes(self) -> None:
        for position, el in self._orphans:
            text = self._note_text(el)
            if not text:
                continue
            marker = re.match(r"^(\d{1,2}|[*†‡§])\s+", text)
            label = marker.group(1) if marker else position
            body = text[marker.end():] if marker else text
            reason = f"footnote {label} has no reference in the text"
            block = self.writer.footnote_block(label, body, reason)
            self.issues.append(ExtractionIssue(FOOTNOTE_WITHOUT_ANCHOR, reason, 0, block.start, block.end))

    # --- rules 4 and 5: blocks ------------------------------------------------------------------

    def _inline(self, el, out: _Inline | None = None, with_tail: bool = False) -> _Inline:
        """The text of an element as running text (its block children flattened)."""
        out = out or _Inline()
        tag = _tag(el)
        if tag and not self._dropped(el, inside_content=True):
            if el in self._note_refs:
                note_id = self._note_refs[el]
                out.text += footnote_marker(self.notes[note_id][0])
                out.refs.append(note_id)
            elif tag == "br":
                out.text += " "
            else:
                if tag in _BLOCKS or tag in _HEADINGS or tag in ("tr", "table", "ul", "ol"):
                    out.text += " "
                out.text += el.text or ""
                for child in el:
                    self._inline(child, out, with_tail=True)
                if tag in _BLOCKS or tag in _HEADINGS or tag in ("td", "th", "li"):
                    out.text += " "
        if with_tail and el.tail:
            out.text += el.tail
        return out

    def _blocks(self, el, inside_content: bool) -> None:
        buffer = _Inline(text=el.text or "")

        def flush() -> None:
            text = clean_inline(buffer.text)
            if text:
                self.writer.paragraph(text)
                self._attach_notes(buffer.refs)
            buffer.text, buffer.refs = "", []

        for child in el:
            tag = _tag(child)
            if self._dropped(child, inside_content) and tag != "br":
                buffer.text += child.tail or ""
                continue
            if tag in _HEADINGS:
                flush()
                inline = self._inline(child)
                self.writer.heading(_HEADINGS[tag], inline.text)
                self._attach_notes(inline.refs)
            elif tag in ("ul", "ol"):
                flush()
                refs: list[str] = []
                items = self._list_items(child, 0, refs)
                self.writer.list_items(items)
                self._attach_notes(refs)
            elif tag == "table":
                flush()
                self._table(child)
            elif tag == "dl":
                flush()
                self._definitions(child)
            elif tag == "pre":
                flush()
                self._pre(child)
            elif tag in _BLOCKS:
                flush()
                self._blocks(child, inside_content or tag in ("main", "article"))
            else:
                self._inline(child, buffer)
            buffer.text += child.tail or ""
        flush()

    def _list_items(self, el, depth: int, refs: list[str]) -> list[tuple[int, str, str]]:
        items: list[tuple[int, str, str]] = []
        ordered = _tag(el) == "ol"
        number = int(el.get("start") or 1) if (el.get("start") or "1").lstrip("-").isdigit() else 1
        for li in el:
            if _tag(li) != "li" or self._dropped(li, True):
                continue
            inline = _Inline(text=li.text or "")
            nested: list[tuple[int, str, str]] = []
            for child in li:
                if _tag(child) in ("ul", "ol") and not self._dropped(child, True):
                    nested.extend(self._list_items(child, depth + 1, refs))
                    inline.text += child.tail or ""
                else:
                    self._inline(child, inline, with_tail=True)
            refs.extend(inline.refs)
            items.append((depth, f"{number}." if ordered else "-", inline.text))
            items.extend(nested)
            number += 1
        return items

    def _definitions(self, el) -> None:
        lines: list[str] = []
        refs: list[str] = []
        term = ""
        for child in el:
            inline = self._inline(child)
            refs.extend(inline.refs)
            if _tag(child) == "dt":
                term = clean_inline(inline.text)
            elif _tag(child) == "dd":
                lines.append(f"{term}: {clean_inline(inline.text)}" if term else clean_inline(inline.text))
        for line in lines:
            self.writer.paragraph(line)
        self._attach_notes(refs)

    def _pre(self, el) -> None:
        self.writer.code(normalize_text(el.text_content()))

    def _table(self, el) -> None:
        caption = el.find("caption")
        if caption is not None and clean_inline(caption.text_content()):
            self.writer.paragraph("Table: " + clean_inline(caption.text_content()))
        header_rows, body_rows, refs = self._grid(el)
        if not header_rows and not body_rows:
            return
        if header_rows:
            columns = max(len(r) for r in header_rows)
            header = [" / ".join(dict.fromkeys(r[i] for r in header_rows if i < len(r) and r[i])) for i in range(columns)]
        elif looks_like_header(body_rows[0]):
            header, body_rows = body_rows[0], body_rows[1:]
        else:
            header = None
        reason = "a table has no header row that could be found"
        block = self.writer.table(header, body_rows, reason)
        if header is None and block is not None:
            self.issues.append(ExtractionIssue(TABLE_HEADER_NOT_FOUND, reason, 0, block.start, block.end))
        self._attach_notes(refs)

    def _grid(self, table) -> tuple[list[list[str]], list[list[str]], list[str]]:
        """(header rows, body rows, note refs) with colspan/rowspan expanded."""
        rows: list[tuple[bool, list]] = []  # (is header row, cells)
        for section in table:
            tag = _tag(section)
            if tag in ("thead", "tbody", "tfoot"):
                rows.extend((tag == "thead", list(tr)) for tr in section if _tag(tr) == "tr")
            elif tag == "tr":
                rows.append((False, list(section)))
        grid: list[tuple[bool, list[str]]] = []
        carry: dict[int, tuple[int, str]] = {}  # column -> (rows left, text) from a rowspan
        refs: list[str] = []
        for in_head, cells in rows:
            out: list[str] = []
            all_th = True
            column = 0
            for cell in cells:
                if _tag(cell) not in ("td", "th"):
                    continue
                while column in carry:
                    left, text = carry[column]
                    out.append(text)
                    carry[column] = (left - 1, text)
                    if left - 1 <= 0:
                        del carry[column]
                    column += 1
                all_th &= _tag(cell) == "th"
                inline = self._inline(cell)
                refs.extend(inline.refs)
                text = clean_inline(inline.text)
                span = _int(cell.get("colspan"))
                down = _int(cell.get("rowspan"))
                for _ in range(span):
                    out.append(text)
                    if down > 1:
                        carry[column] = (down - 1, text)
                    column += 1
            while column in carry:
                left, text = carry[column]
                out.append(text)
                carry[column] = (left - 1, text)
                if left - 1 <= 0:
                    del carry[column]
                column += 1
            if any(out):
                grid.append((in_head or (all_th and not grid), out))
        header = [cells for is_head, cells in grid if is_head]
        body = [cells for is_head, cells in grid if not is_head]
        return header, body, refs


def _int(value) -> int:
    try:
        return max(1, min(100, int(value)))
    except (TypeError, ValueError):
        return 1
