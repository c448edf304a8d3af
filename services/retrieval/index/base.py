"""The contract every search backend meets (embedded index, OpenSearch).

tests/retrieval/test_index_contract.py checks it against any backend given by a factory.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from .types import Hit, IndexedPassage, IndexReport, SearchQuery


@runtime_checkable
class SearchBackend(Protocol):
    #: Short backend name recorded in traces ("embedded", "opensearch").
    name: str

    def generation(self) -> str:
        """Identifies the indexed content (changes whenever what a search can see changes)."""
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

    def search(self, query: SearchQuery) -> list[Hit]:
        """At most ``query.k`` hits, best first, among passages ``query.scope`` admits;
        the scope is applied inside both sub-queries and never relaxed."""
        ...

    def count(self) -> int:
        """Passages in the index, whatever their status or tenant."""
        ...
