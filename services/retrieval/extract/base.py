"""The extraction contract: original bytes of one source file -> normalized, structured text.

Every source format (PDF, HTML, Markdown) has an `Extractor`. It returns an `Extraction`:
- `text`: the normalized text that is stored as the version text (its sha256 is the version_id).
  Structure is written in the Markdown the chunker already understands (`#` headings, `- ` list
  items, `| a | b |` tables with a separator row under the header, footnotes as `[n] ...` lines
  right under the block that references them), so one chunker serves every format.
- `pages`: for paged formats (PDF) the page map: each viewer page (1-based) with its character
  range in `text`, the label of the PDF page-label tree, the label printed on the page, and
  whether the two were verified against each other.
- `issues`: what the extraction noticed and could not fix (a page without a text layer, a page
  label that disagrees with the printed number, a table without a header, a footnote without a
  reference); reported in the ingest result.
- `review_spans`: character ranges whose context could not be captured; a passage that overlaps
  one is stored as needing review and is not eligible as evidence until a policy admin approves it.

An extractor raises `SourceError` (a reason in UPPER_SNAKE and a message) for input it refuses;
the retrieval core turns it into INVALID_ARGUMENT naming the file, and stores nothing.
"""

from __future__ import annotations

import bisect
import dataclasses
from typing import Protocol, runtime_checkable

# Issue kinds (also the names of the proto enum ExtractionIssueKind without its prefix).
NO_TEXT_LAYER = "NO_TEXT_LAYER"
PAGE_LABEL_MISMATCH = "PAGE_LABEL_MISMATCH"
PAGE_LABEL_OUT_OF_SEQUENCE = "PAGE_LABEL_OUT_OF_SEQUENCE"
TABLE_HEADER_NOT_FOUND = "TABLE_HEADER_NOT_FOUND"
FOOTNOTE_WITHOUT_ANCHOR = "FOOTNOTE_WITHOUT_ANCHOR"
ISSUE_KINDS = (NO_TEXT_LAYER, PAGE_LABEL_MISMATCH, PAGE_LABEL_OUT_OF_SEQUENCE, TABLE_HEADER_NOT_FOUND,
               FOOTNOTE_WITHOUT_ANCHOR)

# Where a page's label comes from.
LABEL_FROM_TREE = "tree"  # the PDF's page-label tree (/PageLabels)
LABEL_FROM_PAGE_TEXT = "page_text"  # a page number printed in the page's header or footer
LABEL_NONE = "none"  # neither: the page is cited by its viewer index only

PDF = "application/pdf"
HTML = "text/html"
MARKDOWN = "text/markdown"


class SourceError(Exception):
    """The source cannot be ingested (encrypted, corrupt, active content, ...)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclasses.dataclass(frozen=True)
class PageInfo:
    viewer_page: int  # 1-based index, as a PDF viewer counts
    start: int  # [start, end) of the page's text in Extraction.text (start == end: no text)
    end: int
    label: str  # the label a citation shows ("" = none): the tree's, else the printed one
    label_source: str  # LABEL_FROM_TREE | LABEL_FROM_PAGE_TEXT | LABEL_NONE
    tree_label: str | None  # None: the PDF has no page-label tree; "": the tree gives no label
    printed_label: str  # the page number found on the page text ("" = none found)
    verified: bool  # the label was checked against a second source and agrees
    has_text_layer: bool

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> PageInfo:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class ExtractionIssue:
    kind: str
    message: str
    viewer_page: int = 0  # 0: not about one page
    start: int = -1  # the affected text range, when there is one
    end: int = -1

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ExtractionIssue:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class ReviewSpan:
    start: int
    end: int
    reason: str


@dataclasses.dataclass(frozen=True)
class PageSpan:
    """The pages a character range lies on (viewer indexes and their labels)."""

    first: int
    last: int
    first_label: str
    last_label: str


@dataclasses.dataclass(frozen=True)
class Extraction:
    text: str
    media_type: str
    pages: tuple[PageInfo, ...] = ()
    issues: tuple[ExtractionIssue, ...] = ()
    review_spans: tuple[ReviewSpan, ...] = ()

    def page_span(self, start: int, end: int) -> PageSpan | None:
        """The pages of text[start:end] (None for a format without pages)."""
        with_text = [p for p in self.pages if p.end > p.start]
        if not with_text:
            return None
        starts = [p.start for p in with_text]
        first = with_text[max(0, bisect.bisect_right(starts, start) - 1)]
        last = with_text[max(0, bisect.bisect_right(starts, max(start, end - 1)) - 1)]
        return PageSpan(first.viewer_page, last.viewer_page, first.label, last.label)

    def review_reason(self, start: int, end: int) -> str:
        """Why text[start:end] needs review ("" when it does not): every overlapping review span."""
        reasons = [r.reason for r in self.review_spans if r.start < end and start < r.end]
        return "; ".join(dict.fromkeys(reasons))


@runtime_checkable
class Extractor(Protocol):
    """One source format. `version` names the parser, its version and the extraction rules'
    revision: a different value may give different text or structure from the same bytes."""

    media_type: str

    @property
    def version(self) -> str: ...

    def warm_up(self) -> None:
        """Heavy set-up (imports of the parser) before the first request."""
        ...

    def extract(self, source: bytes, filename: str) -> Extraction:
        """The normalized text, structure and page map of `source`; raises SourceError."""
        ...
