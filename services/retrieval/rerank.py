"""The rerank stage (seeds 001/002: "merge and rerank them"; issue 15): after fusion, before the
context budget. It reorders the top `depth` fused candidates of a search; the hits keep their fused
scores and ranks and gain the reranker's score and rank, and the labels S1..Sn follow the new order.

Backends (settings RERANK_BACKEND), one declared protocol:
- `none`: the fused order;
- `embedded`: the relevance model of relevance.py (question-passage semantic similarity, key-term
  coverage by the passage, learned on the labelled question-passage set) blended with the fused
  score: score = weight x relevance + (1 - weight) x the fused score min-max scaled over the depth;
- `remote`: an HTTP `/rerank` endpoint in the Text-Embeddings-Inference / Cohere shape
  (`{"query", "texts"}` -> `[{"index", "score"}]`, or `{"results": [{"index", "relevance_score"}]}`).
  A timeout or a malformed reply leaves the fused order and says so (`fallback`): a reranker is an
  improvement of the order, never a reason for a search to fail.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import httpx


@dataclasses.dataclass(frozen=True)
class RerankOutcome:
    scores: list[float]  # one per candidate, in the order given
    fallback: bool = False
    detail: str = ""


class Reranker(Protocol):
    name: str

    @property
    def model(self) -> str:
        """The exact model behind the scores (recorded in the search settings and the trace)."""

    def warm_up(self) -> None:
        """Heavy set-up (model files) at start-up, not on the first search."""

    def rerank(self, query: str, candidates: list[tuple[str, str]], fused: list[float],
               encoded=None) -> RerankOutcome:
        """candidates: (text, context = title and heading path) in fused order; fused: their fused scores;
        encoded: the query's token vectors when the search has encoded it (read by `embedded`)."""


class NoRerank:
    name = "none"
    model = ""

    def warm_up(self) -> None:
        pass

    def rerank(self, query: str, candidates: list[tuple[str, str]], fused: list[float],
               encoded=None) -> RerankOutcome:
        return RerankOutcome(list(fused))


def _minmax(values: list[float]) -> list[float]:
    if not values:
        return []
    low, high = min(values), max(values)
    return [0.5 if high == low else (v - low) / (high - low) for v in values]


class EmbeddedRerank:
    name = "embedded"

    def __init__(self, relevance, weight: float = 0.5) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ValueError("rerank weight must be in [0, 1]")
        self.relevance = relevance
        self.weight = weight

    @property
    def model(self) -> str:
        return f"{self.relevance.version};weight={self.weight}"

    def warm_up(self) -> None:
        self.relevance.warm_up()

    def rerank(self, query: str, candidates: list[tuple[str, str]], fused: list[float],
               encoded=None) -> RerankOutcome:
        relevance = self.relevance.score(query, candidates, encoded)
        scaled = _minmax(fused)
        return RerankOutcome([round(self.weight * r + (1 - self.weight) * f, 6)
                              for r, f in zip(relevance, scaled, strict=True)])


class RemoteRerank:
    name = "remote"

    def __init__(self, url: str, model: str = "", api_key: str = "", timeout_seconds: float = 2.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"rerank URL {url!r} must start with http:// or https://")
        self.url = url.rstrip("/")
        if not self.url.endswith("/rerank"):
            self.url += "/rerank"
        self._model = model
        self.timeout = timeout_seconds
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(headers=headers, transport=transport)

    @property
    def model(self) -> str:
        return f"{self._model or 'default'}@{self.url}"

    def warm_up(self) -> None:
        pass

    def rerank(self, query: str, candidates: list[tuple[str, str]], fused: list[float],
               encoded=None) -> RerankOutcome:
        texts = [f"{context}\n{text}".strip() for text, context in candidates]
        body: dict = {"query": query, "texts": texts, "documents": texts, "raw_scores": False}
        if self._model:
            body["model"] = self._model
        try:
            response = self._client.post(self.url, json=body, timeout=self.timeout)
            response.raise_for_status()
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            return RerankOutcome(list(fused), True, f"rerank endpoint failed: {type(exc).__name__}")
        items = data.get("results") if isinstance(data, dict) else data
        scores = [None] * len(texts)
        try:
            for item in items:
                index = int(item["index"])
                score = float(item["relevance_score"] if "relevance_score" in item else item["score"])
                if not 0 <= index < len(texts):
                    raise ValueError(index)
                scores[index] = score
        except (TypeError, KeyError, ValueError):
            return RerankOutcome(list(fused), True, "rerank endpoint replied in an unknown shape")
        if any(s is None for s in scores):
            return RerankOutcome(list(fused), True, "rerank endpoint scored only some candidates")
        return RerankOutcome(scores)  # type: ignore[arg-type]


def reorder(scores: list[float], fused_ranks: list[int]) -> list[int]:
    """Candidate indexes by descending rerank score, ties by fused rank (deterministic)."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], fused_ranks[i]))
