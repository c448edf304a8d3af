"""Text analysis close to OpenSearch's built-in ``english`` analyzer.

Lucene's EnglishAnalyzer chain, reproduced here:
  standard tokenizer (Unicode UAX#29 word boundaries) -> English possessive filter
  ("'s" removed) -> lowercase -> stop words (Lucene's English list) -> Porter stemmer.

The tokenizer is a regular-expression approximation of UAX#29 that matches Lucene on
the cases that matter for retrieval: letters and digits of every script form words,
combining accents stay inside their word, "." and apostrophes join letters ("U.S.",
"don't"), ".", "," and ";" join digits ("1,000", "3.5"), underscores join, hyphens
and other punctuation split, each Han ideograph and each Hiragana character is a token
of its own (Katakana, Hangul, Thai runs stay whole), tokens longer than 255 characters
are split. Text is NFC-normalised first so composed and decomposed accents agree
(a small, deliberate difference from OpenSearch's default chain).
"""

from __future__ import annotations

import re
import sys
import threading
import unicodedata

import Stemmer

#: Lucene EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (what OpenSearch's `english` analyzer uses).
# fmt: off
ENGLISH_STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
})
# fmt: on
MAX_TOKEN_LENGTH = 255  # Lucene StandardTokenizer's default
_POSSESSIVE_APOSTROPHES = ("'", "\u2019", "\uff07")
_POSSESSIVE_SUFFIXES = tuple(a + "s" for a in _POSSESSIVE_APOSTROPHES)  # after lowercasing

# Characters that form one-character tokens: Hiragana and Han ideographs (with extensions
# and compatibility ideographs).
_SINGLE_CHAR_RANGES = (
    "\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f\U00030000-\U0003134f"
)


def _combining_mark_ranges() -> str:
    """Regex class body of the combining marks in the BMP that Python's ``\\w`` lacks
    (accents, Indic and Thai vowel signs); UAX#29 keeps them inside their word."""
    ranges: list[tuple[int, int]] = []
    for code in range(0x300, 0x10000):
        char = chr(code)
        if unicodedata.category(char).startswith("M") and not char.isalnum():
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return "".join(f"\\u{a:04x}-\\u{b:04x}" if a != b else f"\\u{a:04x}" for a, b in ranges)


_MARKS = _combining_mark_ranges()
_SINGLE_CHAR = re.compile(f"([{_SINGLE_CHAR_RANGES}])")
_WORD_CHARS = rf"[\w{_MARKS}]+"
_LETTER = r"[^\W\d_]"
# A joiner only counts between two word characters of the right kind.
_JOINER = rf"(?:(?<={_LETTER})[.'\u2019\uff07](?={_LETTER})|(?<=\d)[.,;'\u2019\uff07](?=\d))"
_TOKEN = re.compile(rf"{_WORD_CHARS}(?:{_JOINER}{_WORD_CHARS})*")


def tokenize(text: str) -> list[str]:
    """Standard-tokenizer-like word split (no lowercasing, no stop words)."""
    text = unicodedata.normalize("NFC", text)
    # Space out one-character tokens first so that the word pattern stays one fast class.
    if _SINGLE_CHAR.search(text):
        text = _SINGLE_CHAR.sub(r" \1 ", text)
    tokens = _TOKEN.findall(text)
    if any(len(t) > MAX_TOKEN_LENGTH for t in tokens):
        tokens = [t[i : i + MAX_TOKEN_LENGTH] for t in tokens for i in range(0, len(t), MAX_TOKEN_LENGTH)]
    return tokens


def strip_possessive(token: str) -> str:
    if len(token) >= 2 and token[-1] in "sS" and token[-2] in _POSSESSIVE_APOSTROPHES:
        return token[:-2]
    return token


class EnglishAnalyzer:
    """Callable analyzer: text -> index terms. Thread-safe (one stemmer per thread,
    because PyStemmer's Stemmer objects are not)."""

    #: Recorded with the index generation; bump when the terms an input yields change.
    version = "english-porter-1"

    def __init__(self) -> None:
        self._local = threading.local()

    def _stemmer(self) -> Stemmer.Stemmer:
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            stemmer = self._local.stemmer = Stemmer.Stemmer("porter")
        return stemmer

    def __call__(self, text: str) -> list[str]:
        return self.analyze(text)

    def analyze(self, text: str) -> list[str]:
        lowered = (t.lower() for t in tokenize(text))
        words = (w[:-2] if w.endswith(_POSSESSIVE_SUFFIXES) else w for w in lowered)
        kept = [w for w in words if w and w not in ENGLISH_STOP_WORDS]
        return [sys.intern(t) for t in self._stemmer().stemWords(kept)]
