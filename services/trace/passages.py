"""Passage text read back from retrieval (the store of record) for a trace reader: GetPassages
with the reader's own bearer token (citetrace.kit.passages), so retrieval's audience rule decides
what the reader sees; the trace service keeps no copy of passage text and no copy of that rule."""

from __future__ import annotations

from collections.abc import Sequence

from citetrace.kit.clients import stub
from citetrace.kit.passages import PassagesUnreachable, get_visible_passages
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc

from services.trace.core import PassageReadback, PassagesUnavailable


class RetrievalPassageReader:
    """The trace core's PassageReader over gRPC."""

    def __init__(self, target: str, timeout_seconds: float) -> None:
        self.target = target
        self.timeout_seconds = timeout_seconds
        self._stub = stub(ret_grpc.RetrievalServiceStub, target)

    def read(self, passage_ids: Sequence[str]) -> PassageReadback:
        try:
            read = get_visible_passages(self._stub, passage_ids, self.timeout_seconds)
        except PassagesUnreachable as err:
            raise PassagesUnavailable(f"retrieval at {self.target}: {err}") from err
        return PassageReadback({pid: p.text for pid, p in read.passages.items()}, read.not_visible, read.corrupt)
