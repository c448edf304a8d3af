"""The contract every search backend meets (embedded index, OpenSearch), and the one fusion step they
share.

A backend produces the two raw candidate lists of a query (``candidate_lists``, the scope applied
inside both); fusing them is not the backend's business: ``FusedSearch.search`` composes the lists
with services/retrieval/index/fusion.py the same way for every backend, and the retrieval core does
the same with lists it timed itself. tests/retrieval/test_index_contract.py checks the contract
against any backend given by a factory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from .fusion import fuse
from .types import BackendHealth, Hit, IndexedPassage, IndexReport, SearchQuery

Candidates = list[tuple[str, float]]


@runtime_checkable
class SearchBackend(Protocol):
    #: Short backend name recorded in traces ("embedded", "opensearch").
    name: str
    #: True when one call of ``candidate_lists`` is one request for both retrievers (OpenSearch
    #: _msearch): the core then times both retrieval stages as that one call; False when the
    #: retrievers are separate work the core can time one by one (the embedded index).
    one_request_for_both: bool
    #: True when the index lives in this process and holds only this process's writes (the embedded
    #: index): the core resolves hits from its own in-memory view; False for an index shared by
    #: replicas (OpenSearch): hits are read back from the store of record.
    process_local: bool

    def generation(self) -> str:
        """Identifies the indexed content (changes whenever what a search can see changes)."""
        ...

    def rebuild_scope(self, force: bool = False) -> AbstractContextManager[str | None]:
        """Writes inside the block rebuild the index: a backend with generations writes a new one and
        makes it live when the block ends normally (yields its name; always with ``force``); one
        without rebuilds in place (yields None)."""
        ...

    def upsert(self, passages: Iterable[IndexedPassage]) -> IndexReport:
        """Index passages by passage_id; re-sending an identical passage changes nothing.
        Invalid passages are reported in ``errors`` and the others indexed."""
        ...

    def set_version_status(self, tenant_id: str, version_id: str, status: str) -> int:
        """Set the status of every passage of a version; returns how many changed."""
        ...

    def remove_version(self, tenant_id: str, version_id: str) -> int:
        """Drop every passage of a version from the index; returns how many were dropped."""
        ...

    def candidate_lists(self, query: SearchQuery) -> tuple[Candidates, Candidates]:
        """The lexical and the vector (passage_id, score) lists of ``query.fusion.mode`` (empty for a
        retriever the mode leaves out), at most ``query.fusion.candidate_k`` each, among passages
        ``query.scope`` admits: the scope is applied inside both sub-queries and never relaxed."""
        ...

    def search(self, query: SearchQuery) -> list[Hit]:
        """At most ``query.k`` hits, best first: the candidate lists fused (FusedSearch)."""
        ...

    def count(self) -> int:
        """Passages in the index, whatever their status or tenant."""
        ...

    def health(self) -> BackendHealth:
        """One quick sample of whether searches can be answered completely (one request, no
        retries, never raises): the retrieval service's health monitor polls it."""
        ...


class FusedSearch:
    """``search`` for a backend that has ``candidate_lists``: the one fusion step of every backend."""

    def search(self, query: SearchQuery) -> list[Hit]:
        lexical, vector = self.candidate_lists(query)
        return fuse(lexical, vector, query.fusion, limit=query.k)


@contextlib.contextmanager
def rebuild_in_place() -> Iterator[None]:
    """``rebuild_scope`` of a backend without index generations."""
    yield None
