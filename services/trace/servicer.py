"""Trace servicer: proto <-> domain only; the behaviour is in services.trace.core."""

from __future__ import annotations

import logging
import threading

from citetrace.kit.context import current_principal
from citetrace.kit.errors import InvalidArgument, Unavailable
from citetrace.kit.server import ServiceSpec
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc

from services.trace.core import TraceCore
from services.trace.settings import Settings

log = logging.getLogger("citetrace.trace")


class TraceServicer(pb_grpc.TraceServiceServicer):
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._core: TraceCore | None = None
        self._stop = threading.Event()
        self._retention: threading.Thread | None = None

    def warm_up(self) -> None:
        from services.trace.store import open_store

        if self._settings.database_url is None:
            self._settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = open_store(self._settings.store_url())
        passages = None
        if self._settings.retrieval_target:
            from services.trace.passages import RetrievalPassageReader

            passages = RetrievalPassageReader(self._settings.retrieval_target,
                                              self._settings.passage_read_timeout_seconds)
        self._core = TraceCore(store, retention_days=self._settings.retention_days,
                               max_page_size=self._settings.max_page_size, passages=passages)
        log.info("trace store ready (%s)", store.dialect)
        if self._settings.retention_interval_seconds > 0 and self._settings.retention_days > 0:
            self._retention = threading.Thread(target=self._retention_loop, name="trace-retention", daemon=True)
            self._retention.start()

    def _retention_loop(self) -> None:
        while not self._stop.wait(self._settings.retention_interval_seconds):
            try:
                redacted = self.core.apply_retention_all()
                if any(redacted.values()):
                    log.info("retention: redacted query text of %d record(s)", sum(redacted.values()))
            except Exception:  # noqa: BLE001 - the next pass tries again
                log.exception("retention pass failed")

    def close(self) -> None:
        self._stop.set()
        if self._retention is not None:
            self._retention.join(10)
        if self._core is not None:
            self._core.store.close()

    @property
    def core(self) -> TraceCore:
        if self._core is None:
            raise Unavailable("NOT_READY", "the trace store is not open yet")
        return self._core

    def RecordTrace(self, request, context):
        if not request.record.trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "record.trace_id is required")
        result = self.core.record_trace(current_principal(), request.record)
        return pb.RecordTraceResponse(trace_id=result.trace_id, record_hash=result.record_hash,
                                      created=result.created)

    def GetTrace(self, request, context):
        if not request.trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "trace_id is required")
        return self.core.get_trace(current_principal(), request.trace_id, request.view)

    def ListTraces(self, request, context):
        if request.page_size < 0:
            raise InvalidArgument("PAGE_SIZE_OUT_OF_RANGE", "page_size must be >= 0")
        return self.core.list_traces(current_principal(), request)

    def RecordReview(self, request, context):
        if not request.trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "trace_id is required")
        return pb.RecordReviewResponse(review=self.core.record_review(current_principal(), request))

    def ListReviews(self, request, context):
        if not request.trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "trace_id is required")
        return self.core.list_reviews(current_principal(), request)

    def RecordVersionEvent(self, request, context):
        if not request.version_id:
            raise InvalidArgument("MISSING_VERSION_ID", "version_id is required")
        affected = self.core.record_version_event(current_principal(), request)
        return pb.RecordVersionEventResponse(affected_traces=affected)

    def RecordActionEvent(self, request, context):
        link, created = self.core.record_action_event(current_principal(), request.event)
        return pb.RecordActionEventResponse(link=link, created=created)

    def ListChainLinks(self, request, context):
        return self.core.list_chain_links(current_principal(), request)

    def VerifyChain(self, request, context):
        report = self.core.verify_chain(current_principal(), request.tenant_id)
        return pb.VerifyChainResponse(
            ok=report.ok, records_checked=report.records_checked,
            first_broken_trace_id=report.first_broken_trace_id,
            first_broken_sequence=report.first_broken_sequence, detail=report.detail)

    def ApplyRetention(self, request, context):
        if request.retention_days < 0:
            raise InvalidArgument("RETENTION_OUT_OF_RANGE", "retention_days must be >= 0")
        return pb.ApplyRetentionResponse(redacted=self.core.apply_retention(current_principal(),
                                                                            request.retention_days))


def build_spec(settings: Settings) -> ServiceSpec:
    return ServiceSpec(
        name="trace",
        full_name=pb.DESCRIPTOR.services_by_name["TraceService"].full_name,
        servicer=TraceServicer(settings),
        register=pb_grpc.add_TraceServiceServicer_to_server,
    )
