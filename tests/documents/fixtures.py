"""The document fixtures of issue 19, written by the tests themselves (tests/documents/pdfgen.py)."""

from __future__ import annotations

from .pdfgen import LabelRange, PdfBuilder

FEE_ROWS = [["Service", "Fee", "Notice"]] + [[f"Service {i}", f"{i * 10} USD", f"{24 + i} hours"] for i in range(1, 45)]


def handbook_pdf() -> bytes:
    """Eight viewer pages: roman front matter (i, ii), a page without a label, prefixed pages A-1..A-5
    with a footnote, a two-column page and a fee table over two pages with its header repeated; the
    last page prints A-6 where the label tree says A-5 (a disagreement)."""
    b = PdfBuilder()
    b.page("i").heading("Preface").paragraph("This handbook describes the arrival rules of the Harbor clinic.")
    b.page("ii").heading("Contents", outline_level=None).paragraph("Arrival rules, fees and notice periods.")
    b.page().paragraph("This page intentionally carries no page number.")
    b.page("A-1").heading("Arrival")
    b.paragraph_with_reference("Patients must arrive 15 minutes before an MRI appointment.", "1",
                               " Except for emergencies, late arrivals are rescheduled.")
    b.footnote("1", "Measured from the appointment time printed on the letter.")
    b.page("A-2").heading("Locations", size=14, outline_level=1)
    b.two_columns([f"Northside opens at {7 + i} on day {i}." for i in range(6)],
                  [f"Harbor parking level {i} is free." for i in range(6)])
    b.page("A-3").heading("Fees")
    b.table(FEE_ROWS)
    b.print_label(7, "A-4")
    b.page("A-6").heading("Closing").paragraph("Questions go to the appointment desk.")
    assert b.page_count == 8, b.page_count
    return b.build(labels=[LabelRange(1, "r"), LabelRange(3, None), LabelRange(4, "D", "A-")])


def long_table_pdf() -> bytes:
    """A fee table of 89 rows over three pages (F-1..F-3, tree and printed numbers agree), its
    header repeated on each page: long enough that the rows continued on page 2 fall in a passage
    of their own, which does not begin with the header row."""
    rows = [["Service", "Fee", "Notice"]] + [[f"Service {i}", f"{i * 10} USD", f"{24 + i} hours"] for i in range(1, 90)]
    b = PdfBuilder()
    b.page("F-1").heading("Late cancellation fees")
    b.paragraph("A late cancellation is charged the fee of its service below.")
    b.print_label(2, "F-2").print_label(3, "F-3")
    b.table(rows)
    assert b.page_count == 3, b.page_count
    return b.build(labels=[LabelRange(1, "D", "F-")])


def printed_numbers_pdf() -> bytes:
    """No page-label tree: pages print 1, 2, (nothing), 4, 9, 6 — the labels come from the page text,
    a page without a number has none, and 9 breaks the sequence."""
    b = PdfBuilder()
    for i, printed in enumerate(["1", "2", None, "4", "9", "6"], start=1):
        b.page(printed).paragraph(f"Rule {i}: bring your insurance card to appointment {i}.")
    return b.build()


def notes_and_tables_pdf() -> bytes:
    """A footnote nothing references and a table that starts a page without a header row."""
    b = PdfBuilder()
    b.page("1").heading("Fees")
    b.paragraph("Late cancellations are charged as listed on the next page.")
    b.footnote("2", "An orphan remark that no sentence refers to.")
    b.page("2").table([["10", "20"], ["30", "40"]])
    return b.build()


def scanned_pdf(text_pages: int = 1) -> bytes:
    """`text_pages` pages with text, then one page that is only an image."""
    b = PdfBuilder()
    for i in range(text_pages):
        b.page(str(i + 1)).paragraph(f"Policy page {i + 1}: arrive ten minutes early.")
    b.page().image_only()
    return b.build()


HTML_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Harbor MRI</title>
<style>body { font-family: sans-serif }</style>
<script type="application/ld+json">{"@type": "MedicalClinic", "name": "Harbor"}</script></head>
<body>
<header class="site"><a href="/">Acme Health</a>
  <nav><ul><li><a href="/book">Book an appointment</a></li><li><a href="/find">Find a clinic</a></li></ul></nav>
</header>
<div role="navigation"><a href="/skip">Skip to the cookie settings</a></div>
<main>
<article>
<header><h1>Harbor MRI preparation</h1></header>
<p>Arrive <b>30 minutes</b> early for an MRI scan.<sup><a href="#fn1" id="r1">1</a></sup> Except for
   emergency scans, a late arrival is rescheduled.</p>
<h2>Metal and implants</h2>
<p>Remove all jewellery before the scan.</p>
<ul><li>Tell the desk about implants
  <ul><li>pacemakers</li><li>cochlear implants</li></ul></li>
  <li>Bring your implant card.</li></ul>
<h3>Fees</h3>
<table><caption>Late cancellation fees</caption>
<thead><tr><th>Notice</th><th>Fee</th></tr></thead>
<tbody><tr><td>Less than 24 hours</td><td>40 USD</td></tr>
<tr><td>No show</td><td rowspan="2">75 USD</td></tr><tr><td>Second no show</td></tr></tbody></table>
<h2>Parking</h2>
<table><tr><th>Level</th><th>Price</th></tr><tr><td colspan="2">Free for patients</td></tr></table>
<aside class="promo">Download our app!</aside>
</article>
<section class="footnotes" role="doc-endnotes"><ol>
<li id="fn1">Counted from the time on your appointment letter. <a href="#r1">↩</a></li>
</ol></section>
</main>
<footer>© 2025 Acme Health · <a href="/privacy">Privacy</a> · Follow us</footer>
</body></html>
"""
