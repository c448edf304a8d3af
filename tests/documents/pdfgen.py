"""Writes the PDF fixtures the document tests need (fpdf2 for the content, pypdf for the page-label
tree and encryption, so every label case — roman numerals, prefixes, a range without a label — can
be written exactly). Deterministic: a fixed creation date, so the same calls give the same bytes.

Also used by the sample corpus script (deploy/samples/make_sources.py) and the ingestion benchmark.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io

FIXED_DATE = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


@dataclasses.dataclass(frozen=True)
class LabelRange:
    """A /PageLabels range from viewer page `first` (1-based): style D, r, R, A, a or None (no
    numbering), an optional prefix, the first number."""

    first: int
    style: str | None = None
    prefix: str | None = None
    start: int = 1


class PdfBuilder:
    def __init__(self, body_size: float = 11) -> None:
        from fpdf import FPDF

        builder = self

        class _Pdf(FPDF):
            def footer(self) -> None:  # the printed page number, in the bottom margin
                label = builder.printed.get(self.page_no())
                if label:
                    self.set_y(-15)
                    self.set_font("Helvetica", size=9)
                    self.cell(0, 10, label, align="C")
                    self.set_font("Helvetica", size=builder.body_size)

        self.body_size = body_size
        self.printed: dict[int, str] = {}
        self.pdf = _Pdf(format="A4")
        self.pdf.set_creation_date(FIXED_DATE)
        self.pdf.set_margins(20, 22, 20)  # mm: the body starts below the header zone, as in print
        self.pdf.set_auto_page_break(True, margin=25)
        self.pdf.set_font("Helvetica", size=body_size)

    @property
    def page_count(self) -> int:
        return self.pdf.page_no()

    def page(self, printed: str | None = None) -> PdfBuilder:
        self.pdf.add_page()
        if printed:
            self.printed[self.pdf.page_no()] = printed
        return self

    def print_label(self, page: int, printed: str) -> PdfBuilder:
        """The printed number of a page created by an automatic page break."""
        self.printed[page] = printed
        return self

    def heading(self, text: str, size: float = 18, outline_level: int | None = 0) -> PdfBuilder:
        self.pdf.set_font("Helvetica", "B", size)
        if outline_level is not None:
            self.pdf.start_section(text, level=outline_level)
        self.pdf.multi_cell(0, size * 0.5, text, new_x="LMARGIN", new_y="NEXT")
        self.pdf.set_font("Helvetica", size=self.body_size)
        self.pdf.ln(3)
        return self

    def paragraph(self, text: str, size: float | None = None) -> PdfBuilder:
        self.pdf.set_font("Helvetica", size=size or self.body_size)
        self.pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
        self.pdf.set_font("Helvetica", size=self.body_size)
        self.pdf.ln(4)
        return self

    def paragraph_with_reference(self, before: str, marker: str, after: str) -> PdfBuilder:
        """A paragraph with a raised footnote marker right after `before`."""
        self.pdf.write(6, before)
        self.pdf.char_vpos = "SUP"
        self.pdf.write(6, marker)
        self.pdf.char_vpos = "LINE"
        self.pdf.write(6, after)
        self.pdf.ln(10)
        return self

    def bullets(self, items: list[str], indent: float = 6) -> PdfBuilder:
        """A bulleted list as word processors set it: the marker at the margin, the item's text (and
        its wrapped lines) indented past it."""
        for item in items:
            y = self.pdf.get_y()
            self.pdf.set_x(self.pdf.l_margin)
            self.pdf.cell(indent, 6, "-")
            self.pdf.set_xy(self.pdf.l_margin + indent, y)
            self.pdf.multi_cell(0, 6, item, new_x="LMARGIN", new_y="NEXT")
        self.pdf.ln(4)
        return self

    def footnote(self, marker: str, text: str) -> PdfBuilder:
        """A footnote in small type near the bottom of the current page."""
        self.pdf.set_auto_page_break(False)
        self.pdf.set_y(-45)
        self.pdf.set_font("Helvetica", size=8)
        self.pdf.multi_cell(0, 4, f"{marker} {text}", new_x="LMARGIN", new_y="NEXT")
        self.pdf.set_font("Helvetica", size=self.body_size)
        self.pdf.set_auto_page_break(True, margin=25)
        return self

    def two_columns(self, left: list[str], right: list[str]) -> PdfBuilder:
        """Two columns of short lines side by side."""
        y = self.pdf.get_y()
        for i, line in enumerate(left):
            self.pdf.set_xy(15, y + i * 6)
            self.pdf.cell(80, 6, line)
        for i, line in enumerate(right):
            self.pdf.set_xy(115, y + i * 6)
            self.pdf.cell(80, 6, line)
        self.pdf.set_xy(self.pdf.l_margin, y + max(len(left), len(right)) * 6 + 6)
        return self

    def table(self, rows: list[list[str]], repeat_header: bool = True) -> PdfBuilder:
        """A ruled table; when it runs over a page break its header row is repeated if asked."""
        with self.pdf.table(repeat_headings=1 if repeat_header else 0, line_height=7) as table:
            for row in rows:
                cells = table.row()
                for cell in row:
                    cells.cell(cell)
        self.pdf.ln(4)
        return self

    def image_only(self) -> PdfBuilder:
        """A page with a picture of text and no text layer (what a scanner produces)."""
        from PIL import Image, ImageDraw

        image = Image.new("RGB", (400, 200), "white")
        ImageDraw.Draw(image).text((20, 80), "Scanned policy page", fill="black")
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        buffer.seek(0)
        self.pdf.image(buffer, x=20, y=30, w=160)
        return self

    def build(self, labels: list[LabelRange] | None = None, user_password: str | None = None) -> bytes:
        raw = bytes(self.pdf.output())
        if labels is None and user_password is None:
            return raw
        return finish(raw, labels, user_password)


def finish(raw: bytes, labels: list[LabelRange] | None = None, user_password: str | None = None) -> bytes:
    """Writes the page-label tree exactly as given (pypdf's own helper refuses a range without
    style and prefix, which is how a PDF says "no label") and encrypts when asked."""
    import pypdf
    from pypdf.generic import ArrayObject, DictionaryObject, NameObject, NumberObject, TextStringObject

    writer = pypdf.PdfWriter(clone_from=io.BytesIO(raw))
    if labels is not None:
        nums = ArrayObject()
        for item in sorted(labels, key=lambda r: r.first):
            entry = DictionaryObject()
            if item.style:
                entry[NameObject("/S")] = NameObject(f"/{item.style}")
            if item.prefix:
                entry[NameObject("/P")] = TextStringObject(item.prefix)
            if item.start != 1:
                entry[NameObject("/St")] = NumberObject(item.start)
            nums.extend([NumberObject(item.first - 1), entry])
        writer._root_object[NameObject("/PageLabels")] = DictionaryObject({NameObject("/Nums"): nums})
    if user_password is not None:
        writer.encrypt(user_password=user_password, owner_password=user_password + "-owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
