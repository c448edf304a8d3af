"""Orchestrator servicer: AskRequest -> the core's AskRequest, the core's answer -> AskResponse.
Nothing else: the use case is services/orchestrator/core/ask.py, the object graph is built in
services/orchestrator/bootstrap.py, domain errors are mapped to gRPC status by the server kit."""

from __future__ import annotations

from citetrace.kit.context import current_principal, remaining_seconds
from citetrace.kit.errors import DomainError, InvalidArgument, Unavailable
from citetrace.kit.timestamps import field_time, utc_now
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc

from services.orchestrator.core.ask import Orchestrator
from services.orchestrator.core.parts import AskRequest
from services.orchestrator.core.ports import DeliveringTraceSink


class OrchestratorServicer(pb_grpc.OrchestratorServiceServicer):
    def __init__(self, core: Orchestrator, trace_sink: DeliveringTraceSink) -> None:
        self._core = core
        self._sink = trace_sink
        self._ready = False

    def warm_up(self) -> None:
        self._core.warm_up()
        self._sink.start()
        self._ready = True

    def close(self) -> None:
        self._ready = False
        self._core.close()
        self._sink.stop()

    def flush_traces(self) -> int:
        """Delivers records waiting in the trace outbox now; returns how many still wait."""
        return self._sink.flush()

    def Ask(self, request, context):
        if not self._ready:
            refusal = Unavailable("NOT_READY", "the orchestrator is not warmed up yet")
            # An authenticated Ask that arrives before warm-up (or during shutdown) leaves its record
            # too; if even that cannot be kept, the caller still gets UNAVAILABLE (issue 16 point 4).
            self.refused("Ask", request, refusal)
            raise refusal
        try:
            given = field_time(request, "as_of")
        except InvalidArgument as err:
            self.refused("Ask", request, err)
            raise
        principal, now = current_principal(), utc_now()
        if given is not None:
            self._core.admit_as_of(principal, request.question, given, now)
        answer = self._core.ask(AskRequest(
            principal=principal, question=request.question, as_of=given or now,
            location_id=request.location_id.strip(), locale=request.locale.strip(),
            remaining_seconds=remaining_seconds(), conversation_id=request.conversation_id.strip(),
            idempotency_key=request.idempotency_key.strip(), as_of_given=given is not None,
        ))
        answer.response.trace_delivered = answer.trace_delivered
        return answer.response

    def refused(self, method: str, request, error: DomainError) -> None:
        """An Ask refused on its input before the core ran (a field rule at the kit's edge, an
        unreadable as_of) still leaves its evidence record with the refusal's code."""
        if method != "Ask":
            return
        question = request.question if request is not None else ""
        self._core.reject(current_principal(), question, utc_now(), error.reason, error.message,
                          code=error.code.value)
