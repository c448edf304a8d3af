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

  - ``glossview``: the encoder's token vectors of the question's English gloss (each bokmål word the
    glossary has replaced by its English words, one more encoder run when the gloss differs from the
    question), mean- and max-pooled over the clause's span mapped into the gloss, 768 dims: the
    English MiniLM reads "kan hodepinen min være en hjernesvulst" as sub-word noise and "can headache
    my be a one brain tumor" as a question about a tumour;
  - ``gloss`` (in the n-gram view's buckets): each bokmål word of the clause also adds the English words
    the versioned glossary (citetrace.gloss: libs/citetrace/data/nb_en_gloss.tsv) gives for it, as word
    features of their own; a compound the glossary lacks is split into two parts it has
    ("blodtrykksmedisin" -> blood pressure + medicine). Word features are shared across languages, so what the heads learn from the English
    questions (many) about "pain", "dose" or "safe" also reads the bokmål ones (few) that say
    "vondt", "dose" or "trygt".

A feature spec names the views (and the glossary's digest), so a model file trained on one spec is
never used with another."""

from __future__ import annotations

import dataclasses
import re
import zlib
from collections.abc import Callable

import numpy as np
from citetrace.gloss import gloss_text, gloss_word, glossary

from services.orchestrator.core.text import fold
from services.orchestrator.understanding.encoder import Encoded

NGRAM_DIM = 1 << 13
CHAR_NGRAMS = (3, 4, 5)
#: The spec of understanding-2026-12-02.2 .. -12-06.1 (no glossary); still computed for such a file.
MEAN_MAX_NGRAM_SPEC = f"minilm-mean+max+ngram-c345-w12-{NGRAM_DIM}"
#: The spec of understanding-2026-12-02.1 (no max-pooled view); still computed for such a file.
MEAN_NGRAM_SPEC = f"minilm-mean+ngram-c345-w12-{NGRAM_DIM}"
MINILM_DIM = 384
_WORD = re.compile(r"\w+", re.UNICODE)


def _gloss_spec() -> str:
    return f"minilm-mean+max+ngram-c345-w12-gloss-{glossary()[0]}+glossview-mean+max-{NGRAM_DIM}"


FEATURE_SPEC = _gloss_spec()
WIDTHS = {FEATURE_SPEC: 4 * MINILM_DIM + NGRAM_DIM, MEAN_MAX_NGRAM_SPEC: 2 * MINILM_DIM + NGRAM_DIM,
          MEAN_NGRAM_SPEC: MINILM_DIM + NGRAM_DIM}


def with_gloss(encoded: Encoded, encode: Callable[[str], Encoded], language_code: str | None = None) -> Encoded:
    """`encoded` with its gloss reading attached: the gloss's own encoding (`encode`), or the
    question's when no word was replaced (no second encoder run for an English question)."""
    if encoded.gloss is not None:
        return encoded
    text, mapping = gloss_text(encoded.text, language_code)
    return dataclasses.replace(encoded, gloss=(encoded if text == encoded.text else encode(text), mapping))


def ngram_buckets(text: str, gloss: bool = True) -> np.ndarray:
    """Sorted unique bucket indices of the clause's character and word n-grams, and (gloss) of the
    English words its bokmål words gloss to."""
    padded = f" {fold(text).lower()} "
    buckets: set[int] = set()
    for n in CHAR_NGRAMS:
        for i in range(len(padded) - n + 1):
            buckets.add(zlib.crc32(("c" + padded[i:i + n]).encode("utf-8")) % NGRAM_DIM)
    words = _WORD.findall(padded)
    for word in words:
        buckets.add(zlib.crc32(("w" + word).encode("utf-8")) % NGRAM_DIM)
        if gloss:
            for english in gloss_word(word):
                buckets.add(zlib.crc32(("w" + english).encode("utf-8")) % NGRAM_DIM)
    for a, b in zip(words, words[1:], strict=False):
        buckets.add(zlib.crc32(("b" + a + " " + b).encode("utf-8")) % NGRAM_DIM)
    return np.fromiter(sorted(buckets), dtype=np.int64, count=len(buckets))


def ngram_vector(text: str, gloss: bool = True) -> np.ndarray:
    vector = np.zeros(NGRAM_DIM, dtype=np.float32)
    buckets = ngram_buckets(text, gloss)
    if len(buckets):
        vector[buckets] = 1.0 / np.sqrt(len(buckets))
    return vector


def clause_vector(encoded: Encoded, start: int = 0, end: int | None = None, spec: str = FEATURE_SPEC) -> np.ndarray:
    """[minilm mean over the span | minilm max over it | ngram (+ gloss) of the span's text | minilm
    mean and max over the span in the gloss]: 1536 + NGRAM_DIM floats (MEAN_MAX_NGRAM_SPEC: no gloss,
    768 + NGRAM_DIM; MEAN_NGRAM_SPEC: no max view either)."""
    end = len(encoded.text) if end is None else end
    if spec not in WIDTHS:
        raise ValueError(f"feature spec {spec!r} is not one this code computes")
    views = [encoded.pool(start, end)]
    if spec != MEAN_NGRAM_SPEC:
        views.append(encoded.pool_max(start, end))
    views.append(ngram_vector(encoded.text[start:end], gloss=spec == FEATURE_SPEC))
    if spec == FEATURE_SPEC:
        if encoded.gloss is None:
            raise ValueError("this feature spec reads the question's gloss: encode it with features.with_gloss")
        glossed, mapping = encoded.gloss
        views += [glossed.pool(mapping[start], mapping[end]), glossed.pool_max(mapping[start], mapping[end])]
    return np.concatenate(views)
