"""PassageStore over gRPC: retrieval's GetPassages, called with the caller's own token (so the
store of record applies the caller's tenant and role scope) and a bounded deadline
(citetrace.kit.passages)."""

from __future__ import annotations

from citetrace.common.v1 import common_pb2
from citetrace.kit.clients import stub
from citetrace.kit.passages import PassagesUnreachable, get_visible_passages
from citetrace.kit.timestamps import field_time
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
        try:
            read = get_visible_passages(self._stub, passage_ids, timeout, batch=BATCH)
        except PassagesUnreachable as err:
            raise StoreUnavailable(f"retrieval at {self.target}: {err}") from err
        found = {pid: stored_from_proto(p, read.versions.get(p.identity.version_id)) for pid, p in read.passages.items()}
        return Loaded(found, read.not_visible, read.corrupt)
