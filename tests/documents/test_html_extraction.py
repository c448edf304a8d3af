"""HTML extraction (services/retrieval/extract/html.py): boilerplate dropped by the stated rule,
nested headings, tables, footnotes, and active content refused."""

from __future__ import annotations

import pytest

from services.retrieval.chunker import MarkdownChunker
from services.retrieval.extract.base import FOOTNOTE_WITHOUT_ANCHOR, TABLE_HEADER_NOT_FOUND, SourceError
from services.retrieval.extract.html import HtmlExtractor

from .fixtures import HTML_PAGE


def extract(html: str | bytes, name: str = "page.html"):
    return HtmlExtractor().extract(html.encode("utf-8") if isinstance(html, str) else html, name)


def test_navigation_banner_footer_and_asides_are_dropped():
    text = extract(HTML_PAGE).text
    for boilerplate in ("Book an appointment", "Find a clinic", "Acme Health", "cookie settings", "Privacy",
                        "Download our app", "MedicalClinic", "font-family", "Harbor MRI\n"):
        assert boilerplate not in text, boilerplate
    assert text.startswith("# Harbor MRI preparation"), "the article's own header is content"


def test_nested_headings_give_the_heading_path():
    extraction = extract(HTML_PAGE)
    chunks = MarkdownChunker().chunk(extraction.text)
    anchors = [c.source_anchor for c in chunks]
    assert anchors == ["Harbor MRI preparation", "Harbor MRI preparation > Metal and implants",
                       "Harbor MRI preparation > Metal and implants > Fees", "Harbor MRI preparation > Parking"]
    implants = extraction.text[chunks[1].start:chunks[1].end]
    assert implants == ("Remove all jewellery before the scan.\n\n- Tell the desk about implants\n  - pacemakers\n"
                        "  - cochlear implants\n- Bring your implant card.")


def test_a_table_keeps_its_header_and_spans_are_expanded():
    extraction = extract(HTML_PAGE)
    text = extraction.text
    assert ("Table: Late cancellation fees\n\n| Notice | Fee |\n| --- | --- |\n| Less than 24 hours | 40 USD |\n"
            "| No show | 75 USD |\n| Second no show | 75 USD |") in text
    assert "| Level | Price |\n| --- | --- |\n| Free for patients | Free for patients |" in text
    assert not extraction.issues and not extraction.review_spans


def test_a_footnote_is_written_under_its_reference():
    extraction = extract(HTML_PAGE)
    chunk = MarkdownChunker().chunk(extraction.text)[0]
    assert extraction.text[chunk.start:chunk.end] == (
        "Arrive 30 minutes early for an MRI scan.[1] Except for emergency scans, a late arrival is rescheduled.\n"
        "[1] Counted from the time on your appointment letter.")


def test_headerless_tables_and_orphan_notes_are_marked_for_review():
    html = """<html><body><h1>Fees</h1><p>See below.</p>
    <table><tr><td>10</td><td>20</td></tr><tr><td>30</td><td>40</td></tr></table>
    <ol class="footnotes"><li>First note.</li><li id="n2">Second note.</li></ol></body></html>"""
    extraction = extract(html)
    assert [i.kind for i in extraction.issues] == [TABLE_HEADER_NOT_FOUND, FOOTNOTE_WITHOUT_ANCHOR,
                                                   FOOTNOTE_WITHOUT_ANCHOR]
    table = extraction.issues[0]
    assert extraction.text[table.start:table.end] == "| 10 | 20 |\n| --- | --- |\n| 30 | 40 |"
    assert extraction.text.endswith("[1] First note.\n\n[2] Second note.")
    assert extraction.review_reason(0, 10) == ""


@pytest.mark.parametrize("snippet, what", [
    ("<script>document.write('Arrive 5 minutes early')</script>", "<script>"),
    ('<script type="module" src="app.js"></script>', "<script>"),
    ('<div onclick="track()"><p>Arrive early.</p></div>', "onclick"),
    ('<p><a href="javascript:alert(1)">Book</a></p>', "javascript:"),
])
def test_html_with_scripts_is_refused_naming_the_file(snippet, what):
    with pytest.raises(SourceError) as err:
        extract(f"<html><head></head><body><h1>Policy</h1><p>Text.</p>{snippet}</body></html>", "clinic/page.html")
    assert err.value.reason == "ACTIVE_CONTENT"
    assert "clinic/page.html" in err.value.message and what in err.value.message


def test_encodings():
    latin = '<html><head><meta charset="iso-8859-1"></head><body><p>Oppmøte 15 minutter før.</p></body></html>'
    assert extract(latin.encode("iso-8859-1")).text == "Oppmøte 15 minutter før."
    assert extract("\ufeff<p>Café</p>".encode()).text == "Café"
    with pytest.raises(SourceError) as err:
        extract(b"<p>caf\xe9</p>", "bad.html")
    assert err.value.reason == "INVALID_ENCODING" and "bad.html" in err.value.message


def test_main_is_the_content_root_and_hidden_text_is_dropped():
    html = """<html><body><div class="banner">Welcome banner text</div>
    <main><h2>Cancellations</h2><p>Cancel 24 hours ahead.</p><p hidden>Old rule: 12 hours.</p>
    <p style="display: none">Draft text.</p><pre>Desk: 555 0100
Fax: 555 0101</pre></main></body></html>"""
    text = extract(html).text
    assert text == "## Cancellations\n\nCancel 24 hours ahead.\n\n```\nDesk: 555 0100\nFax: 555 0101\n```"


def test_deterministic_and_versioned():
    assert extract(HTML_PAGE) == extract(HTML_PAGE)
    assert HtmlExtractor().version.startswith("html-rules/1;lxml/")
