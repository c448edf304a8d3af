"""Passage text read back from retrieval (the store of record) for a trace reader: GetPassages
with the reader's own bearer token (forwarded by kit.clients.call), so retrieval's audience rule
decides what the reader sees; the trace service keeps no copy of passage text and no copy of
that rule.

GetPassages answers NOT_FOUND for a whole request when one passage is not visible to the caller
(naming it in ErrorInfo metadata), so an invisible passage is set aside and the rest is asked
again; DATA_LOSS (the stored text no longer matches its digest) is set aside the same way."""

from __future__ import annotations

import time
from collections.abc import Sequence

from citetrace.kit.clients import invoke, stub
from citetrace.kit.errors import DataLoss, DomainError, NotFound, PermissionDenied
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc

from services.trace.core import PassageReadback, PassagesUnavailable

BATCH = 50


class RetrievalPassageReader:
    """The trace core's PassageReader over gRPC."""

    def __init__(self, target: str, timeout_seconds: float) -> None:
        self.target = target
        self.timeout_seconds = timeout_seconds
        self._stub = stub(ret_grpc.RetrievalServiceStub, target)

    def read(self, passage_ids: Sequence[str]) -> PassageReadback:
        deadline = time.monotonic() + self.timeout_seconds
        out = PassageReadback()
        pending = list(dict.fromkeys(passage_ids))
        while pending:
            batch, pending = pending[:BATCH], pending[BATCH:]
            self._read_batch(batch, deadline, out)
        return out

    def _read_batch(self, batch: list[str], deadline: float, out: PassageReadback) -> None:
        remaining = list(batch)
        while remaining:
            left = deadline - time.monotonic()
            if left <= 0:
                raise PassagesUnavailable(f"retrieval at {self.target} did not answer in time")
            try:
                reply = invoke(self._stub.GetPassages, ret_pb.GetPassagesRequest(passage_ids=remaining), "retrieval",
                               timeout=left)
            except (NotFound, PermissionDenied, DataLoss) as err:
                named = err.metadata.get("passage_id")
                # Nothing named to set aside: none of the batch is shown.
                aside = [named] if named in remaining else remaining
                (out.corrupt if isinstance(err, DataLoss) else out.not_visible).update(aside)
                remaining = [pid for pid in remaining if pid not in aside]
                continue
            except DomainError as err:
                raise PassagesUnavailable(f"retrieval: {err.code.value} {err.reason}") from None
            for passage in reply.passages:
                out.texts[passage.identity.passage_id] = passage.text
            return
