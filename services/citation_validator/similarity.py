"""Embedding similarity of a claim to its evidence span (all-MiniLM-L6-v2 int8, offline):
a helper signal of the support decision. Vectors of recent texts are kept in a small LRU."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
from citetrace.embeddings import Embedder


class Similarity:
    def __init__(self, embedder: Embedder | None = None, cache_size: int = 4096) -> None:
        self.embedder = embedder or Embedder(max_tokens=256)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = cache_size
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    def warm_up(self) -> None:
        self.embedder.warm_up()

    def _vectors(self, texts: list[str]) -> list[np.ndarray]:
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            fresh = self.embedder.embed(missing)
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    self._cache[text] = vector
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        with self._lock:
            out = []
            for t in texts:
                self._cache.move_to_end(t)
                out.append(self._cache[t])
            return out

    def __call__(self, claim: str, evidence: str) -> float:
        a, b = self._vectors([claim, evidence])
        return float(np.dot(a, b))
