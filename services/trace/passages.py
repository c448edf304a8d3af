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

import grpc
from citetrace.kit.clients import call, error_info, stub
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
                reply = call(self._stub.GetPassages, ret_pb.GetPassagesRequest(passage_ids=remaining), timeout=left)
            except grpc.RpcError as err:
                code = err.code()
                if code not in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED,
                                grpc.StatusCode.DATA_LOSS):
                    raise PassagesUnavailable(f"retrieval: {code.name}") from None
                info = error_info(err)
                named = info.metadata.get("passage_id") if info is not None else None
                if named not in remaining:  # nothing to set aside: none of the batch is shown
                    named = None
                aside = remaining if named is None else [named]
                (out.corrupt if code == grpc.StatusCode.DATA_LOSS else out.not_visible).update(aside)
                remaining = [pid for pid in remaining if pid not in aside]
                continue
            for passage in reply.passages:
                out.texts[passage.identity.passage_id] = passage.text
            return
