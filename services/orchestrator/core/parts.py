"""Part handlers: each part of a routed question is answered by the handler registered for its
kind (the authority that answers it), with the same context and into the same `PartResult`.

A new kind of part (an appointment, a proposal) is a new handler registered in
services/orchestrator/bootstrap.py; the Ask use case and the assembler do not change."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Protocol

from citetrace.kit.auth import Principal
from citetrace.kit.errors import DomainError

from services.orchestrator.core.calls import Calls
from services.orchestrator.core.model import NextAction, Outcome, PartKind, PartResult
from services.orchestrator.core.routing import PartPlan, Route
from services.orchestrator.core.wording import Wording


@dataclasses.dataclass(frozen=True)
class AskRequest:
    principal: Principal
    question: str
    as_of: dt.datetime
    location_id: str = ""
    locale: str = ""
    # Seconds left of the caller's deadline (None: no deadline; the default applies).
    remaining_seconds: float | None = None
    # Continues this conversation (empty: a new one).
    conversation_id: str = ""
    # Makes the Ask idempotent (core/ports.py AskResults); as_of counts in its request only when the
    # caller gave it (a retry's default "now" differs).
    idempotency_key: str = ""
    as_of_given: bool = False


@dataclasses.dataclass(frozen=True)
class PartContext:
    """What every part handler may use: the request, its route, the wording of its locale and the
    part's own downstream calls (its timings)."""

    request: AskRequest
    route: Route
    wording: Wording
    calls: Calls
    # The parts of earlier stages (a change question: the appointment before the slots and terms,
    # all of them before the proposal; core/change.py) and the Ask's trace ID.
    earlier: tuple[PartResult, ...] = ()
    trace_id: str = ""


class PartHandler(Protocol):
    def answer(self, plan: PartPlan, ctx: PartContext, out: PartResult) -> PartResult:
        """Settles `out` (outcome, text, next action, evidence) and returns it."""
        ...


def unavailable(out: PartResult, ctx: PartContext, service: str, err: DomainError) -> PartResult:
    """A downstream authority could not answer: this part says so; the others stand."""
    out.error = f"{service}: {err.code.value} {err.reason}"
    return out.settle(Outcome.SOURCE_UNAVAILABLE, ctx.wording.unavailable(service), NextAction.RETRY_LATER)


class BoundaryPart:
    """A clause the scope gate held back: the boundary's approved wording, never a downstream call."""

    def answer(self, plan: PartPlan, ctx: PartContext, out: PartResult) -> PartResult:
        boundary = plan.boundary
        return out.settle(Outcome.OUT_OF_SCOPE, ctx.wording.boundary(boundary.kind), boundary.next_action)


class PartHandlers:
    """Handlers by part kind; a plan with a boundary always goes to the boundary handler."""

    def __init__(self, handlers: dict[PartKind, PartHandler], boundary: PartHandler | None = None) -> None:
        self._handlers = dict(handlers)
        self._boundary = boundary or BoundaryPart()

    def for_plan(self, plan: PartPlan) -> PartHandler:
        if plan.boundary is not None:
            return self._boundary
        try:
            return self._handlers[plan.kind]
        except KeyError:
            raise LookupError(f"no handler for part kind {plan.kind}") from None
