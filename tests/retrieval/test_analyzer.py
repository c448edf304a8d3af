"""The English analyzer (close to OpenSearch's built-in `english`)."""

from __future__ import annotations

import pytest

from services.retrieval.index.analyzer import ENGLISH_STOP_WORDS, EnglishAnalyzer, tokenize

analyze = EnglishAnalyzer()


def test_lucene_english_stop_words():
    assert len(ENGLISH_STOP_WORDS) == 33
    assert analyze("the patient and the doctor are not in it") == ["patient", "doctor"]


def test_possessive_lowercase_and_porter_stem():
    assert analyze("The Clinic's Cancellations") == ["clinic", "cancel"]
    assert analyze("Smith\u2019s arriving appointments") == ["smith", "arriv", "appoint"]
    assert analyze("fasting fasted fasts") == ["fast", "fast", "fast"]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        (
            "arrive 15 minutes early, e.g. at 8:30",
            ["arrive", "15", "minutes", "early", "e.g", "at", "8", "30"],
        ),
        ("1,000.50 mg and 3.5mg", ["1,000.50", "mg", "and", "3.5mg"]),
        ("don't U.S.A. follow-up", ["don't", "U.S.A", "follow", "up"]),
        ("snake_case v1.2", ["snake_case", "v1.2"]),
        ("(parens) [brackets] \u00abquotes\u00bb", ["parens", "brackets", "quotes"]),
    ],
)
def test_standard_tokenizer_cases(text, tokens):
    assert tokenize(text) == tokens


def test_accents_stay_inside_words_composed_or_not():
    assert tokenize("caf\u00e9 cafe\u0301 na\u00efve Z\u00fcrich") == [
        "caf\u00e9",
        "caf\u00e9",
        "na\u00efve",
        "Z\u00fcrich",
    ]
    assert analyze("Caf\u00e9") == analyze("cafe\u0301")


def test_cjk_ideographs_are_single_tokens_other_scripts_stay_whole():
    assert tokenize("\u6771\u4eac\u75c5\u9662") == ["\u6771", "\u4eac", "\u75c5", "\u9662"]
    assert tokenize("\u3088\u3084\u304f") == ["\u3088", "\u3084", "\u304f"]  # Hiragana
    assert tokenize("\u30ab\u30bf\u30ab\u30ca \ud55c\uad6d\uc5b4") == [
        "\u30ab\u30bf\u30ab\u30ca",
        "\ud55c\uad6d\uc5b4",
    ]
    assert tokenize("\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22") == [
        "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22"
    ]  # Thai, with vowel marks
    assert analyze("\u9884\u7ea6abc\u5c31\u8bca") == ["\u9884", "\u7ea6", "abc", "\u5c31", "\u8bca"]


def test_long_tokens_are_split_at_255():
    assert [len(t) for t in tokenize("x" * 600)] == [255, 255, 90]


def test_punctuation_only_and_empty_text_give_no_terms():
    assert analyze("") == []
    assert analyze("--- !!! ...") == []
