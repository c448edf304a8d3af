"""One Ask (DESIGN.md §4), the orchestrator's use case: understand the question (routing stage),
fan its parts out concurrently to the handler of each part's kind under deadlines derived from
the request's, then hand the plain result to the assembler, which builds the answer and its trace
record in one pass; the record goes to the trace sink before the answer leaves, whatever the
outcome (a refused or failed Ask leaves its record too).

No grpc and no protobuf here: downstream services are ports (core/ports.py) and failures arrive
as kit DomainErrors."""

from __future__ import annotations

import contextvars
import dataclasses
import datetime as dt
import logging
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from citetrace import vocab
from citetrace.kit.auth import Principal
from citetrace.kit.errors import DomainError, InvalidArgument, NotFound, Unavailable
from citetrace.kit.metrics import ANSWERS, TRACE_OUTBOX_WRITE_FAILURES
from citetrace.kit.telemetry import current_trace_id, stage

from services.orchestrator.core import change
from services.orchestrator.core.calls import CallPolicy, Calls, Deadline
from services.orchestrator.core.change import ChangePlanner
from services.orchestrator.core.conversation import Pending, new_conversation_id
from services.orchestrator.core.locations import LocationDirectory
from services.orchestrator.core.model import (
    Asker,
    AskResult,
    CorpusSnapshot,
    NextAction,
    Outcome,
    PartKind,
    PartResult,
    StageTiming,
    overall_action,
    overall_outcome,
)
from services.orchestrator.core.parts import AskRequest, PartContext, PartHandlers
from services.orchestrator.core.ports import AskResults, Assembler, Conversations, TraceSink
from services.orchestrator.core.routing import PartPlan, Question, Route, RoutingStage
from services.orchestrator.core.text import normalize
from services.orchestrator.core.wording import Catalog, Wording

log = logging.getLogger("citetrace.orchestrator")

SERVICE = "orchestrator"
# A refused question is kept in its record only up to this length.
MAX_REJECTED_CHARS = 4000


@dataclasses.dataclass(frozen=True)
class AskSettings:
    default_deadline_seconds: float = 15.0
    trace_reserve_seconds: float = 0.5
    max_workers: int = 8
    max_question_chars: int = 2000
    as_of_skew_seconds: float = 300.0


@dataclasses.dataclass(frozen=True)
class Answer:
    """The assembled answer, the record it left and whether the trace service has it already."""

    result: AskResult | None  # None: a replay of a completed idempotent Ask
    response: Any
    record: Any
    trace_delivered: bool


class Orchestrator:
    def __init__(self, routing: RoutingStage, locations: LocationDirectory, handlers: PartHandlers,
                 assembler: Assembler, trace_sink: TraceSink, catalog: Catalog,
                 settings: AskSettings | None = None, call_policy: CallPolicy | None = None,
                 conversations: Conversations | None = None, changes: ChangePlanner | None = None,
                 results: AskResults | None = None) -> None:
        self.routing = routing
        self.locations = locations
        self.handlers = handlers
        self.assembler = assembler
        self.trace_sink = trace_sink
        self.catalog = catalog
        self.settings = settings or AskSettings()
        self.call_policy = call_policy or CallPolicy()
        self.conversations = conversations
        self.changes = changes
        self.results = results
        self._pool = ThreadPoolExecutor(max_workers=self.settings.max_workers, thread_name_prefix="orch-part")

    def warm_up(self) -> None:
        self.routing.warm_up()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def ask(self, request: AskRequest) -> Answer:
        """One Ask; with an idempotency key, a completed one is answered from its stored answer
        (nothing computed, no second record or proposal) and a failed one gives its key back."""
        key = request.idempotency_key
        if not key or self.results is None:
            return self._ask(request)
        principal = request.principal
        fields = {"subject": principal.subject, "roles": sorted(principal.roles), "question": request.question,
                  "location_id": request.location_id, "locale": request.locale,
                  "conversation_id": request.conversation_id,
                  "as_of": request.as_of.isoformat() if request.as_of_given else ""}
        try:
            stored = self.results.reserve(principal.tenant_id, key, fields)
        except DomainError as err:  # the key is in use (another question, still running): recorded too
            self.reject(principal, request.question, request.as_of, err.reason, err.message, code=err.code.value)
            raise
        if stored is not None:
            response, delivered = stored
            return Answer(None, response, None, delivered)
        try:
            answer = self._ask(request)
        except BaseException:
            self.results.release(principal.tenant_id, key)
            raise
        self.results.complete(principal.tenant_id, key, answer.result.trace_id, answer.response,
                              answer.trace_delivered)
        return answer

    def _ask(self, request: AskRequest) -> Answer:
        problem = question_problem(request.question, self.settings.max_question_chars)
        if problem is not None:
            self.reject(request.principal, request.question, request.as_of, problem.reason, problem.message)
            raise problem
        started = time.perf_counter()
        total = self.settings.default_deadline_seconds
        if request.remaining_seconds is not None:
            total = min(total, request.remaining_seconds)
        reserve = min(self.settings.trace_reserve_seconds, max(total, 0.0) * 0.2)
        calls = Calls(Deadline(total - reserve), self.call_policy)
        principal = request.principal
        wording = self.catalog.for_locale(request.locale)
        with stage(SERVICE, "orchestrator.ask", tenant=principal.tenant_id) as span:
            result = self._new_result(principal, request.question, normalize(request.question), request.as_of,
                                      wording)
            try:
                turn = self._open_turn(request, result)
                self._answer(request, wording, calls, result, turn)
            except Exception as exc:
                # An Ask that fails still leaves its evidence record, with its error code; when the
                # record cannot be kept, UNAVAILABLE replaces the error (fail closed).
                result.outcome = Outcome.UNSPECIFIED
                result.parts.append(PartResult("error", error=error_code(exc)))
                self._finish(result, calls.timings, started)
                raise
            answer = self._finish(result, calls.timings, started)
            span.set_attribute("citetrace.outcome", str(result.outcome))
            span.set_attribute("citetrace.parts", len(result.parts))
            span.set_attribute("citetrace.trace_delivered", answer.trace_delivered)
        return answer

    def admit_as_of(self, principal: Principal, question: str, as_of: dt.datetime, now: dt.datetime) -> None:
        """A caller-given as_of further back than the clock-skew tolerance is a replay: refused
        (and recorded as refused) unless the caller is a reviewer or auditor (issue 17 §5)."""
        problem = as_of_problem(principal, as_of, now, self.settings.as_of_skew_seconds)
        if problem is not None:
            self.reject(principal, question, as_of, problem.reason, problem.message)
            raise problem

    def reject(self, principal: Principal, question: str, as_of: dt.datetime, reason: str, message: str,
               code: str = "INVALID_ARGUMENT") -> None:
        """An Ask refused on its input still leaves an evidence record (no parts answered); raises
        Unavailable when that record cannot be kept."""
        started = time.perf_counter()
        with stage(SERVICE, "orchestrator.ask", tenant=principal.tenant_id, rejected=reason):
            result = self._new_result(principal, question[:MAX_REJECTED_CHARS],
                                      normalize(question)[:MAX_REJECTED_CHARS], as_of, self.catalog.default)
            result.parts.append(PartResult("request", error=f"{code} {reason}: {message}"))
            self._finish(result, [], started)

    @staticmethod
    def _new_result(principal: Principal, question: str, normalized: str, as_of: dt.datetime,
                    wording: Wording) -> AskResult:
        return AskResult(
            trace_id=current_trace_id() or secrets.token_hex(16), asker=Asker(principal.tenant_id, principal.subject, tuple(principal.roles)),
            created_at=dt.datetime.now(dt.UTC), question=question, normalized_question=normalized, as_of=as_of,
            wording_locale=wording.locale, wording_version=wording.version)

    def _finish(self, result: AskResult, timings: list[StageTiming], started: float) -> Answer:
        timings.append(StageTiming(SERVICE, "orchestrator.ask", (time.perf_counter() - started) * 1000.0))
        result.timings = timings
        assembled = self.assembler.assemble(result)
        try:
            delivered = bool(self.trace_sink.submit(assembled.record))
        except Exception as exc:
            # Neither delivered nor kept in the durable outbox: no answer leaves without its record.
            log.exception("trace %s could not be recorded: the answer is withheld", result.trace_id)
            TRACE_OUTBOX_WRITE_FAILURES.labels(service=SERVICE).inc()
            raise Unavailable("TRACE_NOT_RECORDED",
                              "the evidence record of this answer could not be stored (trace outbox write failed: "
                              f"{type(exc).__name__}); the answer is withheld, try again",
                              trace_id=result.trace_id) from exc
        return Answer(result, assembled.response, assembled.record, delivered)

    def _open_turn(self, request: AskRequest, result: AskResult) -> Any:
        """The conversation this Ask continues (NOT_FOUND when it is not the caller's live one), or
        a new one. Every Ask is a turn of a conversation, its own trace record linked to the last."""
        if self.conversations is None:
            return None
        principal = request.principal
        if request.conversation_id:
            # A retry of the turn that last moved the conversation (same idempotency key) continues
            # from the state before it: its first attempt failed after moving the conversation on.
            turn = self.conversations.get(request.conversation_id, principal.tenant_id, principal.subject,
                                          retry_key=request.idempotency_key)
            if turn is None:
                raise NotFound("CONVERSATION_NOT_FOUND",
                               f"conversation {request.conversation_id!r} was not found (or has expired)",
                               field="conversation_id")
            result.conversation_id, result.previous_turn_trace_id = turn.conversation_id, turn.last_trace_id
            return turn
        result.conversation_id = new_conversation_id()
        return None

    def _bind(self, request: AskRequest, turn: Any, calls: Calls) -> tuple[Question, str, tuple[str, ...]] | None:
        """A reply to a pending clarification: the entity it names, bound to the pending question
        (with the appointments offered when it asked which appointment). A reply that is itself
        out of scope (it reports a symptom) or names nothing is a new question."""
        pending = turn.pending if turn is not None else None
        if pending is None or not pending.missing or not pending.clauses:
            return None
        reply = Question.of(request.question, request.as_of, request.location_id)
        if not self.routing.gate.decide(reply.clauses).in_scope:
            return None
        permitted, _ = self.locations.permitted(request.principal, calls)
        if pending.missing == "appointment":  # the appointments offered are at any permitted location
            candidates = list(permitted or [])
        else:
            candidates = [loc for loc in permitted or [] if loc.location_id in pending.candidates]
        value = self.routing.router.bind_reply(pending.missing, request.question, candidates)
        if not value:
            return None
        text = " ".join(pending.clauses)
        since = f"the question pending since trace {turn.last_trace_id}"
        if pending.missing == "location":
            return (Question.of(text, request.as_of, value),
                    f"conversation turn {turn.turns + 1}: the reply names location {value} for {since}", ())
        if pending.missing == "appointment":
            # Inside the change's own clause (a clause of its own would be a question of its own).
            *before, last = pending.clauses
            stripped = last.rstrip("?.! ")
            named = " ".join([*before, f"{stripped} ({value}){last[len(stripped):]}"])
            return (Question.of(named, request.as_of, pending.location_id or request.location_id),
                    f"conversation turn {turn.turns + 1}: the reply names '{value}' among the appointments "
                    f"{', '.join(pending.candidates)} offered by {since}", pending.candidates)
        return (Question.of(f"{text} ({value})", request.as_of, pending.location_id or request.location_id),
                f"conversation turn {turn.turns + 1}: the reply names specialty '{value}' for {since}", ())

    def _close_turn(self, request: AskRequest, result: AskResult) -> None:
        if self.conversations is None or not result.conversation_id:
            return
        pending = pending_of(result.route, result.parts, request.locale)
        self.conversations.record_turn(result.conversation_id, request.principal.tenant_id,
                                       request.principal.subject, result.trace_id, pending,
                                       turn_key=request.idempotency_key)

    def _answer(self, request: AskRequest, wording: Wording, calls: Calls, result: AskResult, turn: Any) -> None:
        with stage(SERVICE, "orchestrator.route") as route_span:
            route_started = time.perf_counter()
            bound = self._bind(request, turn, calls)
            question = bound[0] if bound else Question.of(request.question, request.as_of, request.location_id)
            if bound:
                result.normalized_question = normalize(" ".join(question.clauses))
            route = self.routing.understand(question, request.principal,
                                            lambda principal: self.locations.permitted(principal, calls))
            if bound:
                route.explanations.append(bound[1])
                route.appointment_choices = bound[2]
            if self.changes is not None:
                self.changes.plan(route, request.as_of)
                if turn is not None and not bound and turn.pending.offered is not None:
                    change.follow_offer(route, turn.pending.offered,
                                        f"conversation turn {turn.turns + 1}: the slots offered by trace "
                                        f"{turn.last_trace_id}")
            route_span.set_attribute("citetrace.parts", len(route.parts))
            route_span.set_attribute("citetrace.in_scope", route.in_scope)
            calls.timings.append(StageTiming(SERVICE, "orchestrator.route",
                                             (time.perf_counter() - route_started) * 1000.0))
        result.route = route
        answered: dict[str, PartResult] = {}
        for number, stage_plans in enumerate(stages(route.parts)):
            if number == 1 and answered:
                change.rebase(route, tuple(answered.values()), request.as_of)
            earlier = tuple(answered.values())
            futures = []
            for plan in stage_plans:
                ctx = PartContext(request, route, wording, calls.for_part(), earlier, result.trace_id)
                futures.append(self._pool.submit(contextvars.copy_context().run, self._run_part, plan, ctx))
            for plan, future in zip(stage_plans, futures, strict=True):
                try:
                    part = future.result(timeout=max(calls.deadline.remaining(), 0.0) + 1.0)
                except Exception as exc:  # a bug or a hung part: that part fails visibly, the others stand
                    log.exception("part %s failed", plan.part_id)
                    part = PartResult(plan.part_id, plan.kind, plan.intent,
                                      error=f"{type(exc).__name__}: {exc}").settle(
                        Outcome.SOURCE_UNAVAILABLE, wording.say("part_failed"), NextAction.RETRY_LATER)
                answered[plan.part_id] = part
                calls.timings.extend(part.timings)
                ANSWERS.labels(outcome=str(part.outcome)).inc()
        _drop_unanswered_readings(route, answered)
        result.parts.extend(answered[plan.part_id] for plan in route.parts)
        result.next_action = overall_action([p.next_action for p in result.parts])
        result.outcome = overall_outcome([p.outcome for p in result.parts])
        result.corpus, result.source_policy_version = summarize(result.parts)
        self._close_turn(request, result)

    def _run_part(self, plan: PartPlan, ctx: PartContext) -> PartResult:
        out = PartResult(plan.part_id, plan.kind, plan.intent, timings=ctx.calls.timings)
        return self.handlers.for_plan(plan).answer(plan, ctx, out)


def _drop_unanswered_readings(route: Route, answered: dict[str, PartResult]) -> None:
    """A part planned only in case the question meant it (PartPlan.only_if_answered) leaves the
    answer when it did not answer; the route's explanations say so."""
    for plan in [p for p in route.parts if p.only_if_answered]:
        if answered[plan.part_id].outcome != Outcome.ANSWERED:
            route.parts.remove(plan)
            route.explanations.append(f"{plan.part_id}: the policy reading did not answer "
                                      f"({answered[plan.part_id].outcome}): not shown")


def stages(plans: list[PartPlan]) -> list[list[PartPlan]]:
    """Parts answered together: a change question's APPOINTMENT parts first, its CHANGE_PROPOSAL
    parts last (they read the earlier parts), everything else concurrently in between."""
    first = [p for p in plans if p.kind in change.FIRST_STAGE]
    last = [p for p in plans if p.kind in change.LAST_STAGE]
    middle = [p for p in plans if p.kind not in change.FIRST_STAGE | change.LAST_STAGE]
    return [group for group in (first, middle, last) if group]


def pending_of(route: Any, parts: list[PartResult], locale: str) -> Pending:
    """What the conversation waits for after this turn: the entity a part asked for, the in-scope
    clauses it will be answered with, the candidates offered (nothing after an emergency or a
    complete answer)."""
    if route is None or route.scope.emergency:
        return Pending()
    offered = change.offered_slots(route, parts)
    asking = [(plan, part) for plan, part in zip(route.parts, parts, strict=False)
              if part.outcome == Outcome.NEEDS_CLARIFICATION]
    if not asking:
        return Pending(offered=offered)
    plan, part = asking[0]
    if part.kind == PartKind.APPOINTMENT:  # which of the caller's appointments: the ones offered
        return Pending(tuple(route.scope.in_scope_clauses), "appointment",
                       tuple(a.appointment_id for a in part.appointments),
                       route.location.location_id if route.location else "", locale, offered)
    missing = plan.clarification.missing if plan.clarification is not None else "location"
    candidates: tuple[str, ...] = ()
    if missing == "location":
        options = set(plan.clarification.options) if plan.clarification is not None else set()
        candidates = tuple(c.location_id for c in route.clinic_choices if not options or c.display_name in options)
    return Pending(tuple(route.scope.in_scope_clauses), missing, candidates,
                   route.location.location_id if route.location else "", locale, offered)


def error_code(exc: BaseException) -> str:
    """What a failed Ask's record says about its error: the code and reason a caller gets."""
    if isinstance(exc, DomainError):
        return f"{exc.code.value} {exc.reason}: {exc.message}"
    return f"INTERNAL {type(exc).__name__}: {exc}"


REPLAY_ROLES = (vocab.REVIEWER, vocab.AUDITOR)


def as_of_problem(principal: Principal, as_of: dt.datetime, now: dt.datetime,
                  skew_seconds: float) -> InvalidArgument | None:
    """An as_of further in the past than the clock-skew tolerance asks for the answer as it was then
    (superseded policy text): a replay, for reviewer and auditor only."""
    if as_of >= now - dt.timedelta(seconds=skew_seconds) or principal.has_any_role(REPLAY_ROLES):
        return None
    return InvalidArgument("AS_OF_IN_PAST", f"as_of is {(now - as_of).total_seconds():.0f}s in the past; more than "
                           f"{skew_seconds:.0f}s (clock skew) is a replay, which needs the reviewer or auditor role",
                           field="as_of")


def question_problem(question: str, max_chars: int) -> InvalidArgument | None:
    if not question.strip():
        return InvalidArgument("EMPTY_QUESTION", "question must contain non-whitespace text", field="question")
    if len(question) > max_chars:
        return InvalidArgument("QUESTION_TOO_LONG", f"question has {len(question)} characters; at most {max_chars} "
                               "are allowed", field="question")
    return None


def summarize(parts: list[PartResult]) -> tuple[CorpusSnapshot | None, str]:
    """The corpus snapshot (the first search's backend and generation, every version that
    contributed a retrieved passage) and the first source-policy version the validator named."""
    backend = generation = policy_version = ""
    versions: dict[str, None] = {}
    searched = False
    for part in parts:
        if part.retrieval is not None:
            searched = True
            settings = part.retrieval.settings
            if not backend and settings is not None:
                backend, generation = settings.backend, settings.index_generation
            versions.update((hit.passage.identity.version_id, None) for hit in part.retrieval.hits)
        policy_version = policy_version or part.source_policy_version
    corpus = CorpusSnapshot(backend, generation, tuple(versions)) if searched else None
    return corpus, policy_version
