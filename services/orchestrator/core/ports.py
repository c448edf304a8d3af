"""What the core needs from the world, as small interfaces over plain values (core/model.py); no
grpc and no protobuf here. Adapters (services/orchestrator/adapters.py) implement the downstream
ports and raise kit DomainErrors (Unavailable, DeadlineExceeded, InvalidArgument, ...) on failure;
the assembler (services/orchestrator/assembler.py) implements `Assembler`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from citetrace.kit.auth import Principal

from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.model import (
    AppointmentList,
    AppointmentQuery,
    AskResult,
    GenerationRequest,
    GenerationResult,
    Proposal,
    ProposalRequest,
    SearchQuery,
    SearchResult,
    SlotQuery,
    SlotResult,
    ValidationRequest,
    ValidationResult,
    VersionInfo,
)


class Scheduler(Protocol):
    def list_locations(self, page_token: str, timeout: float) -> tuple[list[LocationInfo], str]:
        """One page of the caller's tenant's locations and the next page token ("" at the end)."""
        ...

    def find_slots(self, query: SlotQuery, timeout: float) -> SlotResult: ...

    def list_appointments(self, query: AppointmentQuery, timeout: float) -> AppointmentList:
        """The caller's own appointments (the gateway takes the patient from the forwarded token)."""
        ...

    def propose_change(self, request: ProposalRequest, principal: Principal, timeout: float) -> Proposal:
        """ProposeChange acting for `principal` (a delegated token naming the orchestrator)."""
        ...


class Retrieval(Protocol):
    def search(self, query: SearchQuery, timeout: float) -> SearchResult: ...

    def versions_of(self, passage_ids: Sequence[str], timeout: float) -> list[VersionInfo]:
        """The versions of these passages as the store of record has them (status, location scope)."""
        ...


class Generation(Protocol):
    def generate(self, request: GenerationRequest, timeout: float) -> GenerationResult: ...


class Validator(Protocol):
    def validate(self, request: ValidationRequest, timeout: float) -> ValidationResult: ...


class Assembled(Protocol):
    """The answer and its trace record, built together (opaque to the core)."""

    response: Any
    record: Any


class Assembler(Protocol):
    def assemble(self, result: AskResult) -> Assembled: ...


class TraceSink(Protocol):
    def submit(self, record: Any) -> bool:
        """Stores the record durably; True when it was delivered to the trace service now."""
        ...


class DeliveringTraceSink(TraceSink, Protocol):
    """A trace sink with a deliverer of its own (the outbox): started at warm-up, drained at stop."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def flush(self) -> int:
        """Delivers waiting records now; returns how many still wait."""
        ...


class Conversations(Protocol):
    """Short-lived conversation envelopes (services/orchestrator/conversations.py)."""

    def get(self, conversation_id: str, tenant_id: str, principal_ref: str, now: Any = None,
            retry_key: str = "") -> Any:
        """The caller's live conversation (conversation_id, turns, last_trace_id, pending), or None;
        with `retry_key` the key of the turn that last moved it, the conversation before that turn."""
        ...

    def record_turn(self, conversation_id: str, tenant_id: str, principal_ref: str, trace_id: str,
                    pending: Any, now: Any = None, turn_key: str = "") -> None: ...


class AskResults(Protocol):
    """Answers of completed Asks under their idempotency keys (services/orchestrator/ask_results.py)."""

    def reserve(self, tenant_id: str, key: str, request: dict[str, Any]) -> tuple[Any, bool] | None:
        """None: the caller holds the key now (complete or release it). Else the stored answer and
        whether its record was delivered; ALREADY_EXISTS when `request` differs from the key's."""
        ...

    def complete(self, tenant_id: str, key: str, trace_id: str, response: Any, delivered: bool) -> None: ...

    def release(self, tenant_id: str, key: str) -> None: ...
