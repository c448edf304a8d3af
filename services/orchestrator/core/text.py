"""Question normalization and clause splitting (pure)."""

from __future__ import annotations

import re
import unicodedata

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"'})
_SPACES = re.compile(r"\s+")

# A clause boundary: sentence punctuation, or a conjunction that starts a new request
# ("..., and when should I arrive?").
_SENTENCE = re.compile(r"(?<=[?!;])\s+|(?<=\.)\s+(?=[A-Za-z])")
_CONJUNCTION = re.compile(
    r",?\s+(?:and|but|also|plus|og)\s+(?=(?:also\s+)?(?:should|can|could|do|does|did|is|are|what|when|how|will|"
    r"would|may|where|who|which|tell|i|i'm|my|please|må|kan|hvor|når|hva)\b)",
    re.IGNORECASE,
)


def normalize(question: str) -> str:
    """NFKC, straight apostrophes, single spaces, trimmed. Case is kept (shown in traces)."""
    text = unicodedata.normalize("NFKC", question).translate(_APOSTROPHES)
    return _SPACES.sub(" ", text).strip()


def fold(text: str) -> str:
    """The matching form: normalized and lowercased."""
    return normalize(text).lower()


_ABBREVIATION = re.compile(r"\b(dr|mr|mrs|ms|st|prof|no|nr|e\.g|i\.e)\.$", re.IGNORECASE)


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for piece in _SENTENCE.split(text):
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def split_clauses(question: str) -> list[str]:
    """Splits a normalized question into request clauses, in order, without empty pieces."""
    clauses: list[str] = []
    for sentence in _sentences(normalize(question)):
        for piece in _CONJUNCTION.split(sentence):
            piece = piece.strip(" ,")
            if piece and re.search(r"\w", piece):
                clauses.append(piece)
    return clauses
