"""Structure-aware Markdown chunker: passages are exact [start, end) slices of the stored text.

Rules (DESIGN.md §2):
- Headings (`#`..`######`) open sections; a passage never crosses a heading. The heading path
  ("Arrival > Imaging") is the passage's source anchor and heading context.
- A rule stays with its exceptions and qualifiers: a paragraph that starts with a qualifier
  ("Except", "Exception", "However", "Unless", "Note:", "But", "Otherwise", "Only", ...; a few
  nb-NO words too) joins the block before it; a list right after a paragraph (the rule's items)
  joins that paragraph; any block after a block that ends with ":" joins it.
- A table's header and its rows are one unit (and a qualifier or footnote after it joins it).
- Units are packed into passages up to `target_chars` (never across a heading). A unit longer than
  the target is kept whole up to `hard_limit_chars`; beyond that it is split: at block
  boundaries, then tables by rows (each part's heading context carries the table header),
  then paragraphs at sentence boundaries, and only a single sentence longer than the hard limit
  is cut at a space.
Offsets are Python code points (str indices) into the normalized text. Normalization changes
line endings only (CRLF and CR become LF).
"""

from __future__ import annotations

import bisect
import dataclasses
import re

CHUNKER_NAME = "md-rules"
CHUNKER_REVISION = 1

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_TABLE = re.compile(r"^\s*\|")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_QUALIFIER = re.compile(
    r"^[\s>*_\"'(\[]*(?:"
    r"except|exception|exceptions|excepting|however|unless|note|nb|n\.b\.|but|otherwise|only|instead|"
    r"this does not apply|this rule does not apply|does not apply|in that case|with the exception|"
    r"please note|important|caveat|provided that|if not|"
    r"unntak|unntatt|merk|men|likevel|dersom|hvis ikke|gjelder ikke"
    r")\b",
    re.IGNORECASE,
)
_FOOTNOTE = re.compile(r"^\s*(?:\*(?!\*)|†|‡|\[\d+\])")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])[\"')\]]*\s+")


def normalize_text(text: str) -> str:
    """The only normalization: CRLF and lone CR become LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def extraction_version(target_chars: int, hard_limit_chars: int) -> str:
    """Names the chunker and its settings: a different value means different passages."""
    return f"{CHUNKER_NAME}/{CHUNKER_REVISION};target={target_chars};hard={hard_limit_chars}"


@dataclasses.dataclass(frozen=True)
class Chunk:
    start: int
    end: int
    headings: tuple[str, ...]
    # Extra context that is not inside the slice (a split table's header), else "".
    carried_context: str = ""

    @property
    def source_anchor(self) -> str:
        return " > ".join(self.headings)

    @property
    def heading_context(self) -> str:
        anchor = self.source_anchor
        if self.carried_context:
            return f"{anchor}\n{self.carried_context}" if anchor else self.carried_context
        return anchor


@dataclasses.dataclass
class _Block:
    kind: str  # paragraph | list | table | code
    start: int
    end: int  # exclusive, trailing whitespace excluded
    lines: list[tuple[int, int]]  # (start, end) of each line without its newline


def _lines(text: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for line in text.split("\n"):
        spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return spans


def _kind_of(line: str) -> str:
    if _FENCE.match(line):
        return "code"
    if _TABLE.match(line):
        return "table"
    if _LIST_ITEM.match(line):
        return "list"
    return "paragraph"


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _parse(text: str) -> list[tuple[tuple[str, ...], list[_Block]]]:
    """Sections (heading path, blocks) in document order."""
    sections: list[tuple[tuple[str, ...], list[_Block]]] = [((), [])]
    stack: list[tuple[int, str]] = []
    lines = _lines(text)
    i = 0
    current: _Block | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            s, e = _trimmed(text, current.lines[0][0], current.lines[-1][1])
            if e > s:
                current.start, current.end = s, e
                sections[-1][1].append(current)
            current = None

    while i < len(lines):
        ls, le = lines[i]
        line = text[ls:le]
        if not line.strip():
            # A blank line ends a block, except between items of one list.
            if current is not None and current.kind == "list":
                j = i
                while j < len(lines) and not text[lines[j][0]:lines[j][1]].strip():
                    j += 1
                if j < len(lines) and _LIST_ITEM.match(text[lines[j][0]:lines[j][1]]):
                    current.lines.extend(lines[i:j])
                    i = j
                    continue
            close()
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading and not (current is not None and current.kind == "code"):
            close()
            level, title = len(heading.group(1)), (heading.group(2) or "").strip()
            while stack and stack[-1][0] >= level:
                stack.pop()
            if title:
                stack.append((level, title))
            sections.append((tuple(t for _, t in stack), []))
            i += 1
            continue
        kind = _kind_of(line)
        if kind == "code":
            close()
            fence = _FENCE.match(line).group(1)
            j = i + 1
            while j < len(lines) and not text[lines[j][0]:lines[j][1]].lstrip().startswith(fence):
                j += 1
            j = min(j, len(lines) - 1)
            current = _Block("code", 0, 0, lines[i:j + 1])
            close()
            i = j + 1
            continue
        if current is None:
            current = _Block(kind, 0, 0, [(ls, le)])
        elif current.kind == "table" and kind != "table" or kind == "table" and current.kind != "table" or kind == "list" and current.kind == "paragraph":
            close()
            current = _Block(kind, 0, 0, [(ls, le)])
        else:  # continuation line (lazy paragraph lines stay in lists)
            current.lines.append((ls, le))
        i += 1
    close()
    return [(path, blocks) for path, blocks in sections if blocks]


def _attaches(text: str, previous: list[_Block], block: _Block) -> bool:
    last = previous[-1]
    first_line = text[block.start:block.lines[0][1]] if block.lines else ""
    if text[last.start:last.end].rstrip().endswith(":"):
        return True
    if block.kind == "paragraph" and _QUALIFIER.match(first_line):
        return True
    if block.kind == "list" and last.kind == "paragraph":
        return True
    if last.kind == "table" and block.kind in ("paragraph", "list") and _FOOTNOTE.match(first_line):
        return True
    # A qualifier written as a list item right after the rule ("- Except ...").
    return block.kind == "list" and _QUALIFIER.match(_LIST_ITEM.sub("", first_line, count=1)) is not None


def _crosses(cuts: list[int], left_end: int, right_start: int) -> bool:
    """Whether a barrier lies between two units (at or after the left's end, at or before the right's start)."""
    i = bisect.bisect_left(cuts, left_end)
    return i < len(cuts) and cuts[i] <= right_start


class MarkdownChunker:
    def __init__(self, target_chars: int = 700, hard_limit_chars: int = 2000) -> None:
        if target_chars < 1 or hard_limit_chars < target_chars:
            raise ValueError("need 1 <= target_chars <= hard_limit_chars")
        self.target = target_chars
        self.hard = hard_limit_chars

    @property
    def extraction_version(self) -> str:
        return extraction_version(self.target, self.hard)

    def chunk(self, text: str, barriers: tuple[int, ...] = ()) -> list[Chunk]:
        """Passages of already-normalized text, in document order, non-overlapping. Units are
        never packed together across a barrier offset (an extractor's review spans start and end at
        barriers, so a passage needing review never takes a neighbouring rule with it)."""
        chunks: list[Chunk] = []
        cuts = sorted(set(barriers))
        for path, blocks in _parse(text):
            units: list[list[_Block]] = []
            for block in blocks:
                if units and _attaches(text, units[-1], block):
                    units[-1].append(block)
                else:
                    units.append([block])
            packed: list[list[_Block]] = []
            for unit in units:
                if packed and unit[-1].end - packed[-1][0].start <= self.target \
                        and not _crosses(cuts, packed[-1][-1].end, unit[0].start):
                    packed[-1].extend(unit)
                else:
                    packed.append(list(unit))
            for group in packed:
                chunks.extend(self._limit(text, path, group))
        if not chunks:
            s, e = _trimmed(text, 0, len(text))
            if e > s:
                chunks.append(Chunk(s, e, ()))
        return chunks

    # --- splitting of units over the hard limit ---------------------------------------------

    def _limit(self, text: str, path: tuple[str, ...], group: list[_Block]) -> list[Chunk]:
        if group[-1].end - group[0].start <= self.hard:
            return [Chunk(group[0].start, group[-1].end, path)]
        out: list[Chunk] = []
        run: list[_Block] = []
        for block in group:
            if run and block.end - run[0].start <= self.hard:
                run.append(block)
                continue
            if run:
                out.extend(self._emit(text, path, run))
            run = [block]
        if run:
            out.extend(self._emit(text, path, run))
        return out

    def _emit(self, text: str, path: tuple[str, ...], run: list[_Block]) -> list[Chunk]:
        if run[-1].end - run[0].start <= self.hard:
            return [Chunk(run[0].start, run[-1].end, path)]
        block = run[0]  # a run over the limit is a single block
        if block.kind == "table":
            return self._split_table(text, path, block)
        return self._split_sentences(text, path, block.start, block.end)

    def _split_table(self, text: str, path: tuple[str, ...], block: _Block) -> list[Chunk]:
        rows = [r for r in block.lines if text[r[0]:r[1]].strip()]
        header_rows = rows[:1]
        if len(rows) > 1 and _TABLE_SEPARATOR.match(text[rows[1][0]:rows[1][1]]):
            header_rows = rows[:2]
        header = "\n".join(text[s:e].strip() for s, e in header_rows)
        body = rows[len(header_rows):]
        out: list[Chunk] = []
        start = header_rows[0][0]
        first = True
        group_start, group_end = start, header_rows[-1][1]
        for rs, re_ in body:
            if re_ - group_start > self.hard and group_end > group_start:
                out.append(self._table_part(text, path, group_start, group_end, header, first))
                first = False
                group_start = rs
            group_end = re_
        out.append(self._table_part(text, path, group_start, group_end, header, first))
        final: list[Chunk] = []
        for chunk in out:  # a single row over the limit: split it like prose
            if chunk.end - chunk.start > self.hard:
                final.extend(dataclasses.replace(c, carried_context=chunk.carried_context)
                             for c in self._split_sentences(text, path, chunk.start, chunk.end))
            else:
                final.append(chunk)
        return final

    @staticmethod
    def _table_part(text, path, start, end, header, first) -> Chunk:
        s, e = _trimmed(text, start, end)
        return Chunk(s, e, path, "" if first else f"table header: {header}")

    def _split_sentences(self, text: str, path: tuple[str, ...], start: int, end: int) -> list[Chunk]:
        cuts = [start]
        for match in _SENTENCE_END.finditer(text, start, end):
            cuts.append(match.end())
        cuts.append(end)
        sentences = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
        out: list[Chunk] = []
        cur_s, cur_e = None, None
        for a, b in sentences:
            if cur_s is not None and b - cur_s <= self.hard:
                cur_e = b
                continue
            if cur_s is not None:
                out.extend(self._hard_cut(text, path, cur_s, cur_e))
            cur_s, cur_e = a, b
        if cur_s is not None:
            out.extend(self._hard_cut(text, path, cur_s, cur_e))
        return out

    def _hard_cut(self, text: str, path: tuple[str, ...], start: int, end: int) -> list[Chunk]:
        out = []
        while True:
            s, e = _trimmed(text, start, end)
            if e <= s:
                return out
            if e - s <= self.hard:
                out.append(Chunk(s, e, path))
                return out
            limit = s + self.hard
            space = text.rfind(" ", s + self.hard // 2, limit)
            cut = space if space > s else limit
            out.append(Chunk(*_trimmed(text, s, cut), path))
            start = cut
