"""Meaning, not words: how close each answer unit is to the question (issue 15 §2, the generator side).

The extractive backend's word overlap fails on text nobody here wrote: "What do I need to bring
along?" shares no word with "Carry your health card and a list of the medicines you take.", and
"Who do I give my referral to?" shares "give" with a urine-sample instruction. The shipped embedding
model (all-MiniLM-L6-v2, trained on question-answer and paraphrase pairs) scores the question
against each unit, read under its section heading ("Things to have with you: Carry your ...").

Deliberately separate from the validator's support model (services/citation_validator/support):
the generator and the judge share the embedding model file, never decision code.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol

import numpy as np
from citetrace import language
from citetrace.embeddings import Embedder, QueryVectorCache, TokenVectors


class UnitSimilarity(Protocol):
    """Cosine similarity of a question to each of several texts (in [-1, 1], in input order)."""

    version: str

    def warm_up(self) -> None: ...

    def similarities(self, question: str, texts: list[str]) -> list[float]: ...


class TokenCache:
    """Least recently used token vectors of texts (one encoder run gives a text's contextual token
    vectors and its pooled vector; a unit's are about 30 x 384 floats)."""

    def __init__(self, size: int) -> None:
        self._size = max(1, size)
        self._items: OrderedDict[str, TokenVectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, embedder: Embedder, text: str) -> TokenVectors:
        with self._lock:
            found = self._items.get(text)
            if found is not None:
                self._items.move_to_end(text)
                return found
        encoded = embedder.encode_tokens([text])[0]
        with self._lock:
            self._items[text] = encoded
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return encoded


class EmbeddedUnitSimilarity:
    """The shipped MiniLM on integer kernels; vectors of units seen before come from an LRU
    (passages repeat across questions; a cold unit costs about 2.4 ms of CPU). The question is
    encoded with its token vectors, kept for the lead veto (lead.py), which reads the same question:
    one encoder run serves both."""

    def __init__(self, embedder: Embedder | None = None, cache_size: int = 8192, question_cache_size: int = 256) -> None:
        self._embedder = embedder or Embedder(kernels="integer")
        self._cache = QueryVectorCache(cache_size)
        self._questions = TokenCache(question_cache_size)

    @property
    def version(self) -> str:
        return self._embedder.model_id

    def warm_up(self) -> None:
        self._embedder.warm_up()

    def question_tokens(self, question: str) -> TokenVectors:
        """The question's token vectors and pooled vector (one encoder run, remembered)."""
        return self._questions.get(self._embedder, question)

    def similarities(self, question: str, texts: list[str]) -> list[float]:
        query = self.question_tokens(question).sentence
        if not texts:
            return []
        units = np.stack([self._cache.embed(self._embedder, text) for text in texts])
        return [float(s) for s in units @ query]


def reads_english(text: str) -> bool:
    """The similarity model was trained on English: a question or unit in another language (nb-NO
    included) gets no meaning score, so its selection stays with words. Read on Norwegian text the
    model matched "Er det parkering ved klinikken?" with a fee exception and an app instruction."""
    return language.identify(text).code in ("en", language.UNDETERMINED)


def unit_reading(heading_context: str, title: str, text: str) -> str:
    """A unit as the similarity reads it: under its own section's heading (the heading often says
    what the unit is about: "Children: A parent or legal guardian must accompany ...")."""
    section = heading_context.split(" > ")[-1].strip() if heading_context else title.strip()
    return f"{section}: {text}" if section and not text.startswith(section) else text
