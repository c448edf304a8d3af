"""PDF extraction (services/retrieval/extract/pdf.py) on PDFs the tests write: page maps, structure,
and refused input."""

from __future__ import annotations

import pytest

from services.retrieval.chunker import MarkdownChunker
from services.retrieval.extract.base import (
    FOOTNOTE_WITHOUT_ANCHOR,
    LABEL_FROM_PAGE_TEXT,
    LABEL_FROM_TREE,
    LABEL_NONE,
    NO_TEXT_LAYER,
    PAGE_LABEL_MISMATCH,
    PAGE_LABEL_OUT_OF_SEQUENCE,
    TABLE_HEADER_NOT_FOUND,
    SourceError,
)
from services.retrieval.extract.pdf import PdfExtractor

from . import fixtures
from .pdfgen import PdfBuilder


def page(extraction, viewer):
    return next(p for p in extraction.pages if p.viewer_page == viewer)


def text_of(extraction, viewer):
    p = page(extraction, viewer)
    return extraction.text[p.start:p.end]


def test_front_matter_in_roman_numerals_from_the_label_tree(handbook):
    for viewer, label in ((1, "i"), (2, "ii")):
        p = page(handbook, viewer)
        assert (p.label, p.label_source, p.tree_label, p.printed_label) == (label, LABEL_FROM_TREE, label, label)
        assert p.verified, "the tree label and the printed number agree"
    assert text_of(handbook, 1).startswith("# Preface")


def test_a_page_label_prefix(handbook):
    p = page(handbook, 4)
    assert (p.label, p.label_source, p.printed_label, p.verified) == ("A-1", LABEL_FROM_TREE, "A-1", True)
    assert page(handbook, 7).label == "A-4"


def test_a_page_without_a_label(handbook):
    p = page(handbook, 3)
    assert p.tree_label == "", "the tree has a range without style or prefix: no label"
    assert (p.label, p.label_source, p.printed_label, p.verified) == ("", LABEL_NONE, "", False)
    assert "intentionally carries no page number" in text_of(handbook, 3)


def test_a_label_disagreeing_with_the_printed_number_is_reported(handbook):
    p = page(handbook, 8)
    assert (p.label, p.printed_label, p.verified) == ("A-5", "A-6", False)
    mismatches = [i for i in handbook.issues if i.kind == PAGE_LABEL_MISMATCH]
    assert [(i.viewer_page, "'A-5'" in i.message, "'A-6'" in i.message) for i in mismatches] == [(8, True, True)]
    assert not [i for i in handbook.issues if i.kind != PAGE_LABEL_MISMATCH], handbook.issues


def test_labels_found_on_the_page_text_when_there_is_no_tree():
    extraction = PdfExtractor().extract(fixtures.printed_numbers_pdf(), "numbers.pdf")
    got = [(p.viewer_page, p.label, p.label_source, p.verified) for p in extraction.pages]
    assert got == [(1, "1", LABEL_FROM_PAGE_TEXT, True), (2, "2", LABEL_FROM_PAGE_TEXT, True),
                   (3, "", LABEL_NONE, False), (4, "4", LABEL_FROM_PAGE_TEXT, True),
                   (5, "9", LABEL_FROM_PAGE_TEXT, False), (6, "6", LABEL_FROM_PAGE_TEXT, True)]
    assert all(p.tree_label is None for p in extraction.pages)
    assert [(i.kind, i.viewer_page) for i in extraction.issues] == [(PAGE_LABEL_OUT_OF_SEQUENCE, 5)]
    # Page numbers are labels, never body text.
    assert "\n9\n" not in extraction.text and not extraction.text.rstrip().endswith("6")


def test_page_ranges_tile_the_text_in_order(handbook):
    previous_end = 0
    for p in handbook.pages:
        assert previous_end <= p.start <= p.end <= len(handbook.text)
        previous_end = p.end
    span = handbook.page_span(page(handbook, 4).start, page(handbook, 5).end)
    assert (span.first, span.last, span.first_label, span.last_label) == (4, 5, "A-1", "A-2")


def test_a_table_over_a_page_break_keeps_one_header_and_its_rows_carry_it(handbook):
    text = handbook.text
    assert text.count("| Service | Fee | Notice |") == 1, "the header repeated on the next page is dropped"
    second = text_of(handbook, 7)
    assert second.startswith("| Service 3"), "page 7 starts with the rows that continue the table"
    row = "| Service 40 | 400 USD | 64 hours |"
    assert row in second
    chunks = MarkdownChunker(700, 2000).chunk(text)
    holder = next(c for c in chunks if row in text[c.start:c.end])
    span = handbook.page_span(holder.start, holder.end)
    assert span.first >= 6 and span.last == 7
    carried = text[holder.start:holder.end] + holder.heading_context
    assert "| Service | Fee | Notice |" in carried, "the row's passage carries the table header"
    assert holder.source_anchor == "Fees"


def test_a_footnote_stays_with_its_reference(handbook):
    chunks = MarkdownChunker().chunk(handbook.text)
    holder = next(c for c in chunks if "arrive 15 minutes" in handbook.text[c.start:c.end])
    body = handbook.text[holder.start:holder.end]
    assert "MRI appointment.[1] Except for emergencies" in body
    assert "[1] Measured from the appointment time printed on the letter." in body
    assert holder.source_anchor == "Arrival"


def test_a_two_column_page_is_read_column_by_column(handbook):
    text = text_of(handbook, 5)
    left = text.index("Northside opens at 7 on day 0.")
    assert left < text.index("Northside opens at 12 on day 5.") < text.index("Harbor parking level 0 is free.")
    assert "day 0. Harbor" not in text, "lines of the two columns are not interleaved"


def test_a_list_keeps_its_lead_in_and_its_exception():
    """Rule 6 (lists): each bullet is an item, a wrapped item continues under its marker, and the
    list stays in the passage of the sentence that introduces it, with the exception after it."""
    b = PdfBuilder()
    b.page("1").heading("Before your MRI")
    b.paragraph("Remove these before the scan:")
    b.bullets(["jewellery and watches", "hearing aids", "any clothing with metal fasteners, zips or underwire, "
               "which the staff will ask you to change out of into a gown before you enter the scanner room"])
    b.paragraph("Except for medical implants, which you must tell the desk about instead.")
    extraction = PdfExtractor().extract(b.build(), "list.pdf")
    text = extraction.text
    assert "\n- jewellery and watches\n- hearing aids\n- any clothing with metal fasteners" in text
    assert "gown before you enter the scanner room" in text.split("\n- any clothing")[1].split("\n")[0], \
        "the wrapped item is one item"
    chunks = MarkdownChunker().chunk(text)
    holder = next(c for c in chunks if "hearing aids" in text[c.start:c.end])
    body = text[holder.start:holder.end]
    assert body.startswith("Remove these before the scan:") and "Except for medical implants" in body
    assert holder.source_anchor == "Before your MRI"


def test_font_size_headings_without_an_outline():
    """Rule 4 without bookmarks: the largest heading size is level 1, the next level 2."""
    b = PdfBuilder()
    b.page("1").heading("Cancellations", size=20, outline_level=None)
    b.paragraph("Cancel at least 24 hours ahead.")
    b.heading("Late cancellations", size=15, outline_level=None)
    b.paragraph("A late cancellation costs 40 USD.")
    text = PdfExtractor().extract(b.build(), "no-outline.pdf").text
    assert text.startswith("# Cancellations\n") and "\n## Late cancellations\n" in text
    chunk = next(c for c in MarkdownChunker().chunk(text) if "40 USD" in text[c.start:c.end])
    assert chunk.source_anchor == "Cancellations > Late cancellations"


def test_headings_from_the_outline_and_font_sizes(handbook):
    text = handbook.text
    for heading in ("# Preface", "# Contents", "# Arrival", "## Locations", "# Fees", "# Closing"):
        assert f"\n{heading}\n" in f"\n{text}\n", heading


def test_unanchored_footnote_and_headerless_table_are_marked_for_review():
    extraction = PdfExtractor().extract(fixtures.notes_and_tables_pdf(), "notes.pdf")
    kinds = {i.kind: i for i in extraction.issues}
    assert set(kinds) == {FOOTNOTE_WITHOUT_ANCHOR, TABLE_HEADER_NOT_FOUND}
    note, table = kinds[FOOTNOTE_WITHOUT_ANCHOR], kinds[TABLE_HEADER_NOT_FOUND]
    assert extraction.text[note.start:note.end] == "[2] An orphan remark that no sentence refers to."
    assert (note.viewer_page, table.viewer_page) == (1, 2)
    assert extraction.text[table.start:table.end].startswith("| 10 | 20 |")
    assert extraction.review_reason(table.start, table.end) == table.message
    rule = extraction.text.index("Late cancellations")
    assert extraction.review_reason(rule, rule + 20) == "", "the rule itself is not marked"


def test_a_scanned_page_is_reported_not_silently_empty():
    extraction = PdfExtractor().extract(fixtures.scanned_pdf(1), "scan.pdf")
    scanned = page(extraction, 2)
    assert not scanned.has_text_layer and scanned.start == scanned.end
    assert [(i.kind, i.viewer_page) for i in extraction.issues] == [(NO_TEXT_LAYER, 2)]
    with pytest.raises(SourceError) as err:
        PdfExtractor().extract(fixtures.scanned_pdf(0), "all-scanned.pdf")
    assert err.value.reason == "NO_TEXT_LAYER" and "all-scanned.pdf" in err.value.message


def test_encrypted_and_corrupt_pdfs_are_refused_naming_the_file(handbook_pdf):
    locked = PdfBuilder().page("1").paragraph("Secret policy.").build(user_password="s3cret")
    cases = {
        "locked.pdf": (locked, "ENCRYPTED_SOURCE"),
        "truncated.pdf": (handbook_pdf[: len(handbook_pdf) // 3], "CORRUPT_SOURCE"),
        "garbage.pdf": (b"%PDF-1.7\n" + bytes(range(256)) * 40, "CORRUPT_SOURCE"),
        "not-a-pdf.pdf": (b"<html>hello</html>", "CORRUPT_SOURCE"),
    }
    for name, (data, reason) in cases.items():
        with pytest.raises(SourceError) as err:
            PdfExtractor().extract(data, name)
        assert err.value.reason == reason, (name, err.value.message)
        assert name in err.value.message


def test_the_page_limit(handbook_pdf):
    with pytest.raises(SourceError) as err:
        PdfExtractor(max_pages=5).extract(handbook_pdf, "big.pdf")
    assert err.value.reason == "SOURCE_TOO_LARGE" and "8 pages" in err.value.message


def test_extraction_is_deterministic_and_versioned(handbook_pdf, handbook):
    again = PdfExtractor().extract(handbook_pdf, "handbook.pdf")
    assert again == handbook
    assert PdfExtractor().version.startswith("pdf-rules/1;pypdf/")
    assert PdfExtractor(rules_revision=2).version != PdfExtractor().version
