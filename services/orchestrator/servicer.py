"""Orchestrator servicer: proto <-> domain only. The pipeline is services.orchestrator.core."""

from __future__ import annotations

import datetime as dt
import logging

from citetrace.kit.auth import AUTH_PREFIX, AuthSettings
from citetrace.kit.context import current_principal, remaining_seconds
from citetrace.kit.errors import InvalidArgument, Unavailable
from citetrace.kit.server import ServiceSpec
from citetrace.kit.settings import SettingsError, load_settings
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc

from services.orchestrator.settings import Settings

log = logging.getLogger("citetrace.orchestrator")


class OrchestratorServicer(pb_grpc.OrchestratorServiceServicer):
    def __init__(self, settings: Settings, auth: AuthSettings | None) -> None:
        self._settings = settings
        self._auth = auth
        self._core = None
        self._sink = None

    def warm_up(self) -> None:
        from services.orchestrator import adapters
        from services.orchestrator.core.pipeline import Orchestrator, PipelineSettings
        from services.orchestrator.core.router import load_lexicon
        from services.orchestrator.core.scope import load_policy

        s = self._settings
        load_policy()
        load_lexicon()
        self._sink = adapters.TraceSink(s.trace_target, self._auth, s.outbox_path(), s.trace_timeout_seconds,
                                        s.trace_delivery, s.outbox_synchronous)
        self._sink.start()
        self._core = Orchestrator(
            adapters.SchedulerClient(s.scheduler_gateway_target), adapters.RetrievalClient(s.retrieval_target),
            adapters.GenerationClient(s.generation_target), adapters.ValidatorClient(s.citation_validator_target),
            self._sink,
            PipelineSettings(
                search_k=s.search_k, max_passages=s.context_max_passages, max_chars=s.context_max_chars,
                max_regenerations=s.max_regenerations, call_timeout_seconds=s.call_timeout_seconds,
                default_deadline_seconds=s.default_deadline_seconds, trace_reserve_seconds=s.trace_reserve_seconds,
                conflict_top_n=s.conflict_top_n, horizon_days=s.slot_horizon_days, slot_page_size=s.slot_page_size,
                locations_cache_seconds=s.locations_cache_seconds, max_workers=s.part_workers,
            ),
        )
        if self._auth is None:
            log.warning("no CITETRACE_AUTH_* settings: traces cannot be signed for the trace service")

    def close(self) -> None:
        if self._core is not None:
            self._core.close()
        if self._sink is not None:
            self._sink.stop()

    def flush_traces(self) -> int:
        """Delivers records waiting in the trace outbox now; returns how many still wait."""
        return self._sink.flush() if self._sink is not None else 0

    def Ask(self, request, context):
        if self._core is None:
            raise Unavailable("NOT_READY", "the orchestrator is not warmed up yet")
        from services.orchestrator.core.pipeline import AskInput, from_ts

        question = request.question
        as_of = from_ts(request.as_of) if request.HasField("as_of") else dt.datetime.now(dt.UTC)
        problem = None
        if not question.strip():
            problem = InvalidArgument("EMPTY_QUESTION", "question must contain non-whitespace text", field="question")
        elif len(question) > self._settings.max_question_chars:
            problem = InvalidArgument("QUESTION_TOO_LONG",
                                      f"question has {len(question)} characters; at most "
                                      f"{self._settings.max_question_chars} are allowed", field="question")
        if problem is not None:
            self._core.reject(current_principal(), question, as_of, problem.reason, problem.message)
            raise problem
        result = self._core.ask(AskInput(
            principal=current_principal(), question=question, as_of=as_of,
            location_id=request.location_id.strip(), locale=request.locale.strip(),
            remaining_seconds=remaining_seconds(),
        ))
        return result.response


def build_spec(settings: Settings, auth: AuthSettings | None = None) -> ServiceSpec:
    if auth is None:
        try:
            auth = load_settings(AuthSettings, AUTH_PREFIX)
        except SettingsError:
            auth = None  # in-process contract tests; warm_up logs that traces cannot be signed
    return ServiceSpec(
        name="orchestrator",
        full_name=pb.DESCRIPTOR.services_by_name["OrchestratorService"].full_name,
        servicer=OrchestratorServicer(settings, auth),
        register=pb_grpc.add_OrchestratorServiceServicer_to_server,
    )
