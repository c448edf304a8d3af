"""The feature vector of one clause for the understanding heads (model.py), computed the same way at
training (train.py) and at run time (analysis.py).

Three views of the clause, concatenated:
  - ``minilm-mean``: the encoder's contextual token vectors mean-pooled over the clause's span
    (encoder.py), 384 dims, L2-normalised: meaning, for wording nobody wrote;
  - ``max``: the same tokens max-pooled, 384 dims, L2-normalised: one telling token ("dose",
    "farlig", "results") is not averaged away by a long clause's other words;
  - ``ngram``: hashed character 3-5-grams and word uni- and bigrams of the folded clause, binary,
    L2-normalised, NGRAM_DIM buckets: the shipped MiniLM is an English model, and its vectors for
    bokmål questions and for misspellings ("avbestile", "apointment") carry little; sub-word strings
    carry them. crc32 hashing (never Python's salted ``hash``) keeps the buckets the same across runs.

A feature spec names the views, so a model file trained on one spec is never used with another."""

from __future__ import annotations

import re
import zlib

import numpy as np

from services.orchestrator.core.text import fold
from services.orchestrator.understanding.encoder import Encoded

NGRAM_DIM = 1 << 13
CHAR_NGRAMS = (3, 4, 5)
FEATURE_SPEC = f"minilm-mean+max+ngram-c345-w12-{NGRAM_DIM}"
#: The spec of understanding-2026-12-02.1 (no max-pooled view); still computed for such a file.
MEAN_NGRAM_SPEC = f"minilm-mean+ngram-c345-w12-{NGRAM_DIM}"
MINILM_DIM = 384
WIDTHS = {FEATURE_SPEC: 2 * MINILM_DIM + NGRAM_DIM, MEAN_NGRAM_SPEC: MINILM_DIM + NGRAM_DIM}
_WORD = re.compile(r"\w+", re.UNICODE)


def ngram_buckets(text: str) -> np.ndarray:
    """Sorted unique bucket indices of the clause's character and word n-grams."""
    padded = f" {fold(text).lower()} "
    buckets: set[int] = set()
    for n in CHAR_NGRAMS:
        for i in range(len(padded) - n + 1):
            buckets.add(zlib.crc32(("c" + padded[i:i + n]).encode("utf-8")) % NGRAM_DIM)
    words = _WORD.findall(padded)
    for word in words:
        buckets.add(zlib.crc32(("w" + word).encode("utf-8")) % NGRAM_DIM)
    for a, b in zip(words, words[1:], strict=False):
        buckets.add(zlib.crc32(("b" + a + " " + b).encode("utf-8")) % NGRAM_DIM)
    return np.fromiter(sorted(buckets), dtype=np.int64, count=len(buckets))


def ngram_vector(text: str) -> np.ndarray:
    vector = np.zeros(NGRAM_DIM, dtype=np.float32)
    buckets = ngram_buckets(text)
    if len(buckets):
        vector[buckets] = 1.0 / np.sqrt(len(buckets))
    return vector


def clause_vector(encoded: Encoded, start: int = 0, end: int | None = None, spec: str = FEATURE_SPEC) -> np.ndarray:
    """[minilm mean over the span | minilm max over it | ngram of the span's text]: 768 + NGRAM_DIM
    floats (MEAN_NGRAM_SPEC: without the max view)."""
    end = len(encoded.text) if end is None else end
    views = [encoded.pool(start, end)]
    if spec == FEATURE_SPEC:
        views.append(encoded.pool_max(start, end))
    elif spec != MEAN_NGRAM_SPEC:
        raise ValueError(f"feature spec {spec!r} is not one this code computes")
    views.append(ngram_vector(encoded.text[start:end]))
    return np.concatenate(views)
