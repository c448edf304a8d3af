"""PassageStore over gRPC: retrieval's GetPassages, called with the caller's own token (so the
store of record applies the caller's tenant and role scope) and a bounded deadline."""

from __future__ import annotations

import time

from citetrace.common.v1 import common_pb2
from citetrace.kit.clients import invoke, stub
from citetrace.kit.errors import DataLoss, DeadlineExceeded, DomainError, NotFound, PermissionDenied
from citetrace.kit.timestamps import field_time
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from citetrace.vocab import VERSION_STATUS

from services.citation_validator.core import Loaded, StoredPassage, StoreUnavailable

BATCH = 20

_REVIEW = {
    common_pb2.REVIEW_STATE_NOT_REQUIRED: "NOT_REQUIRED",
    common_pb2.REVIEW_STATE_PENDING: "PENDING",
    common_pb2.REVIEW_STATE_APPROVED: "APPROVED",
}


def stored_from_proto(passage: common_pb2.Passage, version: common_pb2.DocumentVersion | None) -> StoredPassage:
    ident = passage.identity
    valid_from = valid_to = None
    status, superseded, source_class, title = "", "", ident.source_class, passage.title
    if version is not None:
        status = VERSION_STATUS.name_or(version.status, "")
        valid_from, valid_to = field_time(version, "valid_from"), field_time(version, "valid_to")
        superseded = version.superseded_by_version_id
        source_class = version.document.source_class or source_class
        title = title or version.document.title
    return StoredPassage(
        passage_id=ident.passage_id, tenant_id=ident.tenant_id, document_id=ident.document_id,
        version_id=ident.version_id, start=ident.start, end=ident.end, content_sha256=ident.content_sha256,
        source_anchor=ident.source_anchor, source_class=source_class, text=passage.text, status=status,
        valid_from=valid_from, valid_to=valid_to, superseded_by=superseded, title=title,
        heading_context=passage.heading_context, page_start=ident.page_start, page_end=ident.page_end,
        page_label_start=ident.page_label_start, page_label_end=ident.page_label_end,
        review_state=_REVIEW.get(passage.review_state, ""),
    )


class RetrievalPassageStore:
    """`retrieval` replaces the gRPC stub to `target` (the in-process benchmark passes the servicer
    behind a stub's interface; its failures are DomainErrors already)."""

    def __init__(self, target: str, *, retrieval=None) -> None:
        self.target = target
        self._stub = retrieval or stub(ret_grpc.RetrievalServiceStub, target)

    def load(self, passage_ids: list[str], timeout: float) -> Loaded:
        deadline = time.monotonic() + timeout
        found: dict[str, StoredPassage] = {}
        not_found: set[str] = set()
        corrupt: set[str] = set()
        pending = list(dict.fromkeys(passage_ids))
        while pending:
            batch, pending = pending[:BATCH], pending[BATCH:]
            self._load_batch(batch, deadline, found, not_found, corrupt)
        return Loaded(found, not_found, corrupt)

    def _load_batch(self, batch: list[str], deadline: float, found: dict, not_found: set, corrupt: set) -> None:
        remaining = list(batch)
        while remaining:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreUnavailable(f"retrieval at {self.target} did not answer in time")
            try:
                reply = invoke(self._stub.GetPassages, ret_pb.GetPassagesRequest(passage_ids=remaining), "retrieval",
                               timeout=left)
            except (NotFound, PermissionDenied, DataLoss) as err:
                # DATA_LOSS: the store's text no longer matches its digest; it names the passage.
                bucket = corrupt if isinstance(err, DataLoss) else not_found
                missing = err.metadata.get("passage_id")
                if missing in remaining:
                    bucket.add(missing)
                    remaining.remove(missing)
                    continue
                if len(remaining) == 1:
                    bucket.add(remaining.pop())
                    continue
                for pid in list(remaining):  # which one? ask one by one
                    self._load_batch([pid], deadline, found, not_found, corrupt)
                return
            except DeadlineExceeded as err:
                raise StoreUnavailable(f"retrieval at {self.target} did not answer in time") from err
            except DomainError as err:
                raise StoreUnavailable(f"retrieval at {self.target}: {err.code.value}") from err
            versions = {v.version_id: v for v in reply.versions}
            for passage in reply.passages:
                found[passage.identity.passage_id] = stored_from_proto(
                    passage, versions.get(passage.identity.version_id))
            not_found.update(pid for pid in remaining if pid not in found)
            return
