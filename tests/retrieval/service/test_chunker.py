"""The Markdown chunker: rules stay with their exceptions, tables with their headers, offsets exact."""

from __future__ import annotations

import pytest

from services.retrieval.chunker import MarkdownChunker, normalize_text


def texts(text: str, chunker: MarkdownChunker | None = None) -> list[str]:
    chunks = (chunker or MarkdownChunker()).chunk(text)
    return [text[c.start:c.end] for c in chunks]


@pytest.mark.parametrize("opener", ["Except", "Exception:", "However,", "Unless", "Note:", "But", "Unntak:"])
def test_a_qualifier_in_the_next_paragraph_stays_with_its_rule(opener):
    rule = "Please arrive 15 minutes before your appointment."
    qualifier = f"{opener} MRI patients arrive 30 minutes early."
    # A small target forces every other paragraph into its own passage.
    text = f"# Arrival\n\n{rule}\n\n{qualifier}\n\nParking is free on Elm Street.\n"
    out = texts(text, MarkdownChunker(target_chars=60, hard_limit_chars=400))
    assert out[0] == f"{rule}\n\n{qualifier}"
    assert out[1] == "Parking is free on Elm Street."


def test_an_unrelated_paragraph_is_not_glued_to_the_rule():
    text = "Arrive 15 minutes early.\n\nParking is free for two hours on Elm Street near the clinic.\n"
    out = texts(text, MarkdownChunker(target_chars=50, hard_limit_chars=400))
    assert out == ["Arrive 15 minutes early.", "Parking is free for two hours on Elm Street near the clinic."]


def test_a_list_continuing_a_rule_stays_with_it():
    text = "Bring the following:\n\n- a photo ID\n- your insurance card\n\nThe clinic opens at 8."
    out = texts(text, MarkdownChunker(target_chars=50, hard_limit_chars=400))
    assert out[0] == "Bring the following:\n\n- a photo ID\n- your insurance card"


def test_a_table_keeps_its_header_rows_and_exception_row_and_footnote():
    table = ("| Type | Notice | Fee |\n|---|---|---|\n| New | 24 h | $50 |\n| MRI | 48 h | $100 |\n"
             "| Exception: emergency | none | no fee |")
    text = f"## Fees\n\n{table}\n\n* Fees are waived once per year.\n\nOpening hours are 8 to 5."
    out = texts(text, MarkdownChunker(target_chars=60, hard_limit_chars=1000))
    assert out[0] == f"{table}\n\n* Fees are waived once per year."
    assert out[1] == "Opening hours are 8 to 5."


def test_a_table_over_the_hard_limit_is_split_by_rows_and_each_part_carries_the_header():
    header = "| Exam | Arrive |\n|---|---|"
    rows = [f"| exam number {i} | {i} minutes |" for i in range(12)]
    text = "# Prep\n\n" + header + "\n" + "\n".join(rows) + "\n"
    chunker = MarkdownChunker(target_chars=80, hard_limit_chars=120)
    chunks = chunker.chunk(text)
    assert len(chunks) > 1
    assert text[chunks[0].start:chunks[0].end].startswith(header)
    for chunk in chunks[1:]:
        assert "table header: | Exam | Arrive |" in chunk.heading_context
        assert text[chunk.start:chunk.end].startswith("| exam number")
    covered = "\n".join(text[c.start:c.end] for c in chunks)
    assert all(row in covered for row in rows)


def test_an_oversized_paragraph_is_kept_whole_below_the_hard_limit():
    paragraph = " ".join(f"Sentence number {i} is here." for i in range(20))  # ~560 chars
    out = texts(paragraph, MarkdownChunker(target_chars=100, hard_limit_chars=1000))
    assert out == [paragraph]


def test_a_paragraph_over_the_hard_limit_is_split_at_sentence_boundaries():
    sentences = [f"Sentence number {i} is here." for i in range(20)]
    paragraph = " ".join(sentences)
    out = texts(paragraph, MarkdownChunker(target_chars=100, hard_limit_chars=150))
    assert len(out) > 1
    assert all(len(part) <= 150 for part in out)
    assert all(part.endswith(".") for part in out)  # never cut mid-sentence
    assert " ".join(out) == paragraph


def test_passages_never_cross_headings_and_carry_the_heading_path():
    text = "# Policy\n\n## Arrival\n\nArrive early.\n\n### Imaging\n\nArrive 30 minutes early.\n\n## Fees\n\nNo fee."
    chunks = MarkdownChunker().chunk(text)
    assert [(text[c.start:c.end], c.source_anchor) for c in chunks] == [
        ("Arrive early.", "Policy > Arrival"),
        ("Arrive 30 minutes early.", "Policy > Arrival > Imaging"),
        ("No fee.", "Policy > Fees"),
    ]


def test_offsets_are_code_points_on_unicode_text():
    text = normalize_text("# Oppmøte 🏥\r\n\r\nKom 15 minutter før timen 😀.\r\n\r\n## 中文\r\n\r\n请提前十五分钟到达。\r\n")
    chunks = MarkdownChunker().chunk(text)
    assert [text[c.start:c.end] for c in chunks] == ["Kom 15 minutter før timen 😀.", "请提前十五分钟到达。"]
    assert chunks[1].source_anchor == "Oppmøte 🏥 > 中文"
    assert "\r" not in text


def test_normalization_changes_line_endings_only():
    assert normalize_text("a\r\nb\rc\n\u00e9\u0301 ") == "a\nb\nc\n\u00e9\u0301 "


def test_chunk_size_is_a_setting_and_names_the_extraction():
    text = "\n\n".join(f"Rule {i}: arrive {i} minutes early." for i in range(10))
    small, large = MarkdownChunker(40, 400), MarkdownChunker(2000, 4000)
    assert len(small.chunk(text)) > len(large.chunk(text)) == 1
    assert small.extraction_version != large.extraction_version
