"""The one assembly point of the trace service: settings -> the store (SQLite or PostgreSQL) and the
passage reader (retrieval's GetPassages with the reader's token) -> the core -> the servicer, with
the scheduled retention pass. __main__, the tests and the benchmarks build the service here."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Callable

from citetrace.kit.auth import AuthSettings
from citetrace.kit.metrics import CHECKPOINT_AGE
from citetrace.kit.relay import Periodic
from citetrace.kit.server import ServiceSpec
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc

from services.trace.core import PassageReader, TraceCore
from services.trace.passages import RetrievalPassageReader
from services.trace.sealing import ChainSealer, CheckpointSink, DirectoryCheckpointSink, build_sealer
from services.trace.servicer import TraceServicer
from services.trace.settings import Settings
from services.trace.store import SqlTraceStore, TraceStore

log = logging.getLogger("citetrace.trace")


@dataclasses.dataclass
class Trace:
    """The assembled service."""

    settings: Settings
    core: TraceCore
    servicer: TraceServicer
    retention: Periodic | None
    checkpointing: Periodic | None = None
    backlog: Periodic | None = None

    def warm_up(self) -> None:
        self.core.open()
        log.info("trace store ready")
        for task in (self.retention, self.checkpointing, self.backlog):
            if task is not None:
                task.start()

    def close(self) -> None:
        for task in (self.retention, self.checkpointing, self.backlog):
            if task is not None:
                task.stop(10)
        self.core.store.close()

    def spec(self) -> ServiceSpec:
        return ServiceSpec(
            name="trace",
            full_name=pb.DESCRIPTOR.services_by_name["TraceService"].full_name,
            servicer=self.servicer,
            register=pb_grpc.add_TraceServiceServicer_to_server,
            # Largest request accepted (documented in ARCHITECTURE.md, "Limits"): a RecordTrace carries the whole evidence record: retrieved passages with their text.
            max_receive_message_bytes=16 * 1024 * 1024,
            warm_up=self.warm_up,
            close=self.close,
        )


def _retention_pass(core: TraceCore) -> Callable[[], None]:
    def run() -> None:
        redacted = core.apply_retention_all()
        if any(redacted.values()):
            log.info("retention: redacted query text of %d record(s)", sum(redacted.values()))

    return run


def sealer_of(settings: Settings, *, sign: bool = True, store: TraceStore | None = None) -> ChainSealer:
    """The trace signing key and verify keys the settings name (KeyFileError says what is wrong).
    A missing key file is created (development) only while `store` holds nothing signed."""
    return build_sealer(provider=settings.signing_provider, key_file=settings.resolved_signing_key(),
                        verify_key_files=settings.verify_key_files, create=settings.signing_key_create, sign=sign,
                        signed_key_ids=store.signed_key_ids if store is not None else None)


def _checkpoint_pass(core: TraceCore) -> Callable[[], None]:
    def run() -> None:
        done = core.checkpoint_all()
        if done:
            log.info("checkpointed %d tenant chain(s)", len(done))

    return run


def build(settings: Settings, *, store: TraceStore | None = None, passages: PassageReader | None = None,
          clock: Callable | None = None, sealer: ChainSealer | None = None,
          checkpoints: CheckpointSink | None = None, before_commit: Callable[[], None] | None = None) -> Trace:
    """The service; `store`, `passages`, `clock`, `sealer` and `checkpoints` replace the ones the
    settings name (tests). `before_commit` (tests only) runs inside each write of the store the
    settings name just before its deadline check and commit: a slowed commit."""
    if passages is None and settings.retrieval_target:
        passages = RetrievalPassageReader(settings.retrieval_target, settings.passage_read_timeout_seconds)
    store = store or SqlTraceStore(settings.store_url(), before_commit=before_commit)
    core = TraceCore(store, sealer=sealer or sealer_of(settings, store=store),
                     checkpoints=checkpoints or DirectoryCheckpointSink(settings.resolved_checkpoint_dir()),
                     retention_days=settings.retention_days, max_page_size=settings.max_page_size,
                     passages=passages, clock=clock)
    retention = None
    if settings.retention_interval_seconds > 0 and settings.retention_days > 0:
        retention = Periodic("trace-retention", settings.retention_interval_seconds, _retention_pass(core))
    checkpointing = None
    if settings.checkpoint_interval_seconds > 0:
        checkpointing = Periodic("trace-checkpoint", settings.checkpoint_interval_seconds, _checkpoint_pass(core))
        started = time.monotonic()
        # Seconds since this process's last checkpoint (since start while it has made none).
        CHECKPOINT_AGE.labels(service="trace").set_function(
            lambda: core.checkpoint_age() if core.checkpoint_age() is not None else time.monotonic() - started)
    backlog = None
    if settings.review_backlog_interval_seconds > 0:
        older_than = dt.timedelta(seconds=settings.review_backlog_seconds)
        backlog = Periodic("trace-review-backlog", settings.review_backlog_interval_seconds,
                           lambda: core.review_backlog(older_than))
    return Trace(settings, core, TraceServicer(core), retention, checkpointing, backlog)


def build_spec(settings: Settings, auth: AuthSettings | None = None, **adapters) -> ServiceSpec:
    """What services/trace/__main__.py serves (trace signs nothing: `auth` is unused)."""
    return build(settings, **adapters).spec()
