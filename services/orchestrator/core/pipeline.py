"""One Ask (DESIGN.md §4): scope gate and route, parts fanned out concurrently under per-call
deadlines derived from the request's, each part answered by its own authority, one response
envelope, and one trace record for every Ask whatever its outcome.

No grpc imports: downstream services are reached through the ports (services/orchestrator/core/
ports.py); failures arrive as kit DomainErrors."""

from __future__ import annotations

import contextvars
import dataclasses
import datetime as dt
import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import yaml
from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.common.v1 import common_pb2 as c_pb
from citetrace.common.v1 import route_pb2 as r_pb
from citetrace.generation.v1 import generation_service_pb2 as gen_pb
from citetrace.identity import pinned_link
from citetrace.kit.auth import Principal
from citetrace.kit.errors import DeadlineExceeded, DomainError, InvalidArgument, NotFound, Unavailable
from citetrace.kit.metrics import ANSWERS, PASSAGES_OFFERED
from citetrace.kit.telemetry import current_trace_id, stage
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as sched_pb
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from google.protobuf.timestamp_pb2 import Timestamp

from services.orchestrator.core import conflicts, router, scope
from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.ports import Generation, Retrieval, Scheduler, TraceSink, Validator
from services.orchestrator.core.text import normalize, split_clauses

log = logging.getLogger("citetrace.orchestrator")

SERVICE = "orchestrator"
MESSAGES_FILE = Path(__file__).resolve().parent.parent / "data" / "part_messages.yaml"
# Response-level next action: the most urgent of the parts' actions.
ACTION_PRIORITY = (
    "CONTACT_EMERGENCY_SERVICES", "CONTACT_CLINICIAN", "ANSWER_CLARIFICATION", "ROUTE_TO_POLICY_OWNER",
    "PREPARE_REVIEW_TASK", "RETRY_LATER", "CONFIRM_SLOT", "VIEW_POLICY", "CONTACT_SCHEDULING_DESK", "NONE",
)
# Record-level outcome: ANSWERED only when every part is; else the most significant part outcome.
OUTCOME_PRIORITY = (
    "OUT_OF_SCOPE", "SOURCE_UNAVAILABLE", "CONFLICT", "UNRESOLVED", "NEEDS_CLARIFICATION",
    "ABSTAINED_NO_EVIDENCE", "PARTIALLY_ANSWERED", "ANSWERED",
)
TRANSIENT = (Unavailable,)


@dataclasses.dataclass(frozen=True)
class PipelineSettings:
    search_k: int = 8
    max_passages: int = 6
    max_chars: int = 6000
    max_regenerations: int = 2
    call_timeout_seconds: float = 5.0
    default_deadline_seconds: float = 15.0
    trace_reserve_seconds: float = 0.5
    retry_backoff_seconds: float = 0.05
    conflict_top_n: int = 4
    horizon_days: int = 14
    slot_page_size: int = 6
    locations_cache_seconds: float = 30.0
    max_workers: int = 8


@dataclasses.dataclass(frozen=True)
class AskInput:
    principal: Principal
    question: str
    as_of: dt.datetime
    location_id: str = ""
    locale: str = ""
    # Seconds left of the caller's deadline (None: no deadline; the default applies).
    remaining_seconds: float | None = None


@dataclasses.dataclass
class AskResult:
    response: pb.AskResponse
    record: trace_pb.TraceRecord


@functools.lru_cache(maxsize=2)
def load_messages(path: Path = MESSAGES_FILE) -> dict[str, Any]:
    raw = yaml.safe_load(path.read_text())

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return " ".join(value.split())
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        return value

    return clean(raw)


class Deadline:
    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds

    def remaining(self) -> float:
        return self._at - time.monotonic()


def ts(value: dt.datetime) -> Timestamp:
    out = Timestamp()
    out.FromDatetime(value.astimezone(dt.UTC).replace(tzinfo=None))
    return out


def from_ts(value: Timestamp) -> dt.datetime:
    return value.ToDatetime().replace(tzinfo=dt.UTC)


def citation_for(label: str, passage: c_pb.Passage) -> c_pb.Citation:
    ident = passage.identity
    return c_pb.Citation(
        label=label, passage_id=ident.passage_id, document_id=ident.document_id, version_id=ident.version_id,
        start=ident.start, end=ident.end, content_sha256=ident.content_sha256, source_anchor=ident.source_anchor,
        source_class=ident.source_class, link=pinned_link(ident.document_id, ident.version_id, ident.start, ident.end),
        title=passage.title,
    )


def _enum(enum_type: Any, prefix: str, name: str) -> int:
    return enum_type.Value(f"{prefix}{name}")


def outcome_value(name: str) -> int:
    return c_pb.PartOutcome.Value(f"PART_OUTCOME_{name}")


def outcome_name(value: int) -> str:
    return c_pb.PartOutcome.Name(value).removeprefix("PART_OUTCOME_")


def action_value(name: str) -> int:
    return c_pb.NextAction.Value(f"NEXT_ACTION_{name}")


def action_name(value: int) -> str:
    return c_pb.NextAction.Name(value).removeprefix("NEXT_ACTION_")


INTENT_ENUM = {
    router.AVAILABILITY: c_pb.INTENT_AVAILABILITY,
    router.ARRIVAL: c_pb.INTENT_ARRIVAL_PREPARATION,
    router.CANCELLATION: c_pb.INTENT_CANCELLATION_RESCHEDULING,
    router.PROVIDER: c_pb.INTENT_PROVIDER_INFORMATION,
    router.OTHER: c_pb.INTENT_OTHER,
    router.CLINICAL: c_pb.INTENT_CLINICAL,
}


@dataclasses.dataclass
class PartOutput:
    part: pb.AnswerPart
    record: trace_pb.PartRecord
    timings: list[c_pb.StageTiming] = dataclasses.field(default_factory=list)


class _Locations:
    """ListLocations per tenant and permitted-location set, cached briefly."""

    def __init__(self, ttl: float) -> None:
        self._ttl = ttl
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, tuple[str, ...]], tuple[float, list[LocationInfo]]] = {}

    def get(self, key: tuple[str, tuple[str, ...]]) -> list[LocationInfo] | None:
        with self._lock:
            hit = self._cache.get(key)
            if hit and time.monotonic() - hit[0] < self._ttl:
                return hit[1]
            return None

    def put(self, key: tuple[str, tuple[str, ...]], value: list[LocationInfo]) -> None:
        with self._lock:
            self._cache[key] = (time.monotonic(), value)


class Orchestrator:
    def __init__(self, scheduler: Scheduler, retrieval: Retrieval, generation: Generation, validator: Validator,
                 trace_sink: TraceSink, settings: PipelineSettings | None = None) -> None:
        self.scheduler = scheduler
        self.retrieval = retrieval
        self.generation = generation
        self.validator = validator
        self.trace_sink = trace_sink
        self.settings = settings or PipelineSettings()
        self._pool = ThreadPoolExecutor(max_workers=self.settings.max_workers, thread_name_prefix="orch-part")
        self._locations = _Locations(self.settings.locations_cache_seconds)
        self.messages = load_messages()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- the Ask ----------------------------------------------------------------------------------

    def ask(self, request: AskInput) -> AskResult:
        started = time.perf_counter()
        total = self.settings.default_deadline_seconds
        if request.remaining_seconds is not None:
            total = min(total, request.remaining_seconds)
        reserve = min(self.settings.trace_reserve_seconds, max(total, 0.0) * 0.2)
        deadline = Deadline(total - reserve)
        principal = request.principal
        with stage(SERVICE, "orchestrator.ask", tenant=principal.tenant_id) as span:
            trace_id = current_trace_id()
            record = trace_pb.TraceRecord(
                trace_id=trace_id, tenant_id=principal.tenant_id, created_at=ts(dt.datetime.now(dt.UTC)),
                principal_ref=principal.subject, principal_roles=list(principal.roles),
                query=trace_pb.QueryText(raw=request.question, normalized=normalize(request.question)),
                as_of=ts(request.as_of),
            )
            response = pb.AskResponse(trace_id=trace_id)
            timings: list[c_pb.StageTiming] = []
            try:
                self._answer(request, deadline, response, record, timings)
            except Exception as exc:
                # An Ask that fails still leaves its evidence record.
                record.outcome = c_pb.PART_OUTCOME_UNSPECIFIED
                record.parts.add(part_id="error", error=f"{type(exc).__name__}: {exc}")
                self._finish(record, timings, started, response)
                raise
            self._finish(record, timings, started, response)
            span.set_attribute("citetrace.outcome", outcome_name(record.outcome))
            span.set_attribute("citetrace.parts", len(response.parts))
            span.set_attribute("citetrace.trace_delivered", response.trace_delivered)
        return AskResult(response, record)

    def reject(self, principal: Principal, question: str, as_of: dt.datetime, reason: str, message: str) -> None:
        """An Ask refused on its input still leaves an evidence record (no parts answered)."""
        started = time.perf_counter()
        with stage(SERVICE, "orchestrator.ask", tenant=principal.tenant_id, rejected=reason):
            record = trace_pb.TraceRecord(
                trace_id=current_trace_id(), tenant_id=principal.tenant_id,
                created_at=ts(dt.datetime.now(dt.UTC)), principal_ref=principal.subject,
                principal_roles=list(principal.roles),
                query=trace_pb.QueryText(raw=question[:4000], normalized=normalize(question)[:4000]),
                as_of=ts(as_of),
            )
            record.parts.add(part_id="request", error=f"INVALID_ARGUMENT {reason}: {message}")
            if record.trace_id:
                self._finish(record, [], started, pb.AskResponse())

    def _finish(self, record: trace_pb.TraceRecord, timings: list[c_pb.StageTiming], started: float,
                response: pb.AskResponse) -> None:
        timings.append(c_pb.StageTiming(service=SERVICE, stage="orchestrator.ask",
                                        duration_ms=(time.perf_counter() - started) * 1000.0))
        record.timings.extend(timings)
        try:
            response.trace_delivered = bool(self.trace_sink.submit(record))
        except Exception:  # the sink keeps the record durably or logs why it could not
            log.exception("trace %s could not be submitted", record.trace_id)
            response.trace_delivered = False

    def _answer(self, request: AskInput, deadline: Deadline, response: pb.AskResponse,
                record: trace_pb.TraceRecord, timings: list[c_pb.StageTiming]) -> None:
        principal = request.principal
        with stage(SERVICE, "orchestrator.route") as route_span:
            route_started = time.perf_counter()
            # The scope gate first, before any downstream call; ListLocations is only asked when
            # the question has an in-scope part that could use it.
            pre = scope.gate(split_clauses(request.question) or [normalize(request.question)])
            locations = None
            locations_error = ""
            if pre.in_scope_clauses:
                locations, locations_error = self._list_locations(principal, deadline, timings)
                permitted = {loc.location_id for loc in locations or []
                             if not principal.location_ids or loc.location_id in principal.location_ids}
                if request.location_id and locations is not None and request.location_id not in permitted:
                    # Another tenant's location, or one outside the caller's, does not exist for them.
                    raise NotFound("LOCATION_NOT_FOUND", f"location {request.location_id!r} was not found",
                                   field="location_id")
            route = router.route(
                request.question, request.as_of, locations, location_hint=request.location_id,
                permitted_location_ids=principal.location_ids, horizon_days=self.settings.horizon_days,
            )
            if locations_error:
                route.explanations.append(f"locations unavailable: {locations_error}")
            decision = self._route_decision(route)
            route_span.set_attribute("citetrace.parts", len(route.parts))
            route_span.set_attribute("citetrace.in_scope", route.in_scope)
            timings.append(c_pb.StageTiming(service=SERVICE, stage="orchestrator.route",
                                            duration_ms=(time.perf_counter() - route_started) * 1000.0))
        response.route.CopyFrom(decision)
        record.route.CopyFrom(decision)

        futures = []
        for plan in route.parts:
            context = contextvars.copy_context()
            futures.append(self._pool.submit(context.run, self._run_part, plan, route, request, deadline))
        outputs: list[PartOutput] = []
        for plan, future in zip(route.parts, futures, strict=True):
            try:
                outputs.append(future.result(timeout=max(deadline.remaining(), 0.0) + 1.0))
            except Exception as exc:  # a bug or a hung part: that part fails visibly, the others stand
                log.exception("part %s failed", plan.part_id)
                outputs.append(self._failed_part(plan, exc))
        for output in outputs:
            response.parts.append(output.part)
            record.parts.append(output.record)
            timings.extend(output.timings)
            ANSWERS.labels(outcome=outcome_name(output.part.outcome)).inc()
        response.next_action = action_value(self._overall_action([action_name(o.part.next_action) for o in outputs]))
        record.outcome = outcome_value(self._overall_outcome([outcome_name(o.part.outcome) for o in outputs]))
        versions: list[str] = []
        for output in outputs:
            if output.record.HasField("retrieval"):
                settings = output.record.retrieval.settings
                if not record.corpus.backend:
                    record.corpus.backend = settings.backend
                    record.corpus.index_generation = settings.index_generation
                for hit in output.record.retrieval.retrieved:
                    if hit.passage.identity.version_id not in versions:
                        versions.append(hit.passage.identity.version_id)
            if output.record.source_policy_version and not record.source_policy_version:
                record.source_policy_version = output.record.source_policy_version
        record.corpus.version_ids.extend(versions)

    @staticmethod
    def _overall_action(names: list[str]) -> str:
        present = [n for n in ACTION_PRIORITY if n in names]
        return present[0] if present else "NONE"

    @staticmethod
    def _overall_outcome(names: list[str]) -> str:
        if names and all(n == "ANSWERED" for n in names):
            return "ANSWERED"
        present = [n for n in OUTCOME_PRIORITY if n in names]
        return present[0] if present else "UNSPECIFIED"

    def _failed_part(self, plan: router.PartPlan, exc: BaseException) -> PartOutput:
        kind = _enum(r_pb.PartKind, "PART_KIND_", plan.kind)
        message = "This part could not be completed. Please try again shortly or contact the appointment desk."
        part = pb.AnswerPart(part_id=plan.part_id, kind=kind, outcome=c_pb.PART_OUTCOME_SOURCE_UNAVAILABLE,
                             answer_text=message, next_action=c_pb.NEXT_ACTION_RETRY_LATER)
        rec = trace_pb.PartRecord(part_id=plan.part_id, kind=kind, intent=INTENT_ENUM[plan.intent],
                                  outcome=part.outcome, next_action=part.next_action, answer_text=message,
                                  error=f"{type(exc).__name__}: {exc}")
        return PartOutput(part, rec)

    # -- downstream calls -------------------------------------------------------------------------

    def _call(self, service: str, stage_name: str, fn: Callable[[Any, float], Any], request: Any,
              deadline: Deadline, timings: list[c_pb.StageTiming]) -> Any:
        """One downstream call under the part's deadline; a transient UNAVAILABLE is retried once
        if the deadline leaves room for it."""
        attempt = 0
        while True:
            left = deadline.remaining()
            if left <= 0.01:
                raise DeadlineExceeded("DEADLINE_EXCEEDED", f"no time left for {stage_name}")
            timeout = min(self.settings.call_timeout_seconds, left)
            started = time.perf_counter()
            try:
                return fn(request, timeout)
            except TRANSIENT:
                if attempt == 0 and deadline.remaining() > self.settings.retry_backoff_seconds + 0.05:
                    attempt += 1
                    time.sleep(self.settings.retry_backoff_seconds)
                    continue
                raise
            finally:
                timings.append(c_pb.StageTiming(service=service, stage=stage_name,
                                                duration_ms=(time.perf_counter() - started) * 1000.0))

    def _list_locations(self, principal: Principal, deadline: Deadline,
                        timings: list[c_pb.StageTiming]) -> tuple[list[LocationInfo] | None, str]:
        key = (principal.tenant_id, tuple(principal.location_ids))
        cached = self._locations.get(key)
        if cached is not None:
            return cached, ""
        found: list[LocationInfo] = []
        token = ""
        try:
            for _ in range(20):  # pages
                page = self._call("scheduler_gateway", "scheduler.list_locations", self.scheduler.list_locations,
                                  sched_pb.ListLocationsRequest(page_size=100, page_token=token), deadline, timings)
                for loc in page.locations:
                    found.append(LocationInfo(
                        loc.location_id, loc.name, loc.clinic_name, loc.time_zone or "UTC",
                        tuple(loc.specialties), tuple(loc.appointment_types), tuple(loc.aliases)))
                token = page.next_page_token
                if not token:
                    break
        except DomainError as err:
            return None, err.reason
        self._locations.put(key, found)
        return found, ""

    # -- parts ------------------------------------------------------------------------------------

    def _run_part(self, plan: router.PartPlan, route: router.Route, request: AskInput,
                  deadline: Deadline) -> PartOutput:
        kind = _enum(r_pb.PartKind, "PART_KIND_", plan.kind)
        out = PartOutput(
            pb.AnswerPart(part_id=plan.part_id, kind=kind),
            trace_pb.PartRecord(part_id=plan.part_id, kind=kind, intent=INTENT_ENUM[plan.intent]),
        )
        if plan.boundary is not None:
            self._set(out, "OUT_OF_SCOPE", plan.boundary.text, plan.boundary.next_action)
        elif plan.intent == router.AVAILABILITY:
            self._slot_part(out, plan, route, request, deadline)
        else:
            self._policy_part(out, plan, route, request, deadline)
        return out

    @staticmethod
    def _set(out: PartOutput, outcome: str, text: str, action: str) -> None:
        out.part.outcome = outcome_value(outcome)
        out.part.answer_text = text
        out.part.next_action = action_value(action)
        out.record.outcome = out.part.outcome
        out.record.answer_text = text
        out.record.next_action = out.part.next_action

    def _unavailable(self, out: PartOutput, service: str, err: DomainError) -> None:
        self._set(out, "SOURCE_UNAVAILABLE", self.messages["unavailable"][service], "RETRY_LATER")
        out.record.error = f"{service}: {err.code.value} {err.reason}"

    # -- the live slot part -------------------------------------------------------------------------

    def _slot_part(self, out: PartOutput, plan: router.PartPlan, route: router.Route, request: AskInput,
                   deadline: Deadline) -> None:
        if plan.clarification:
            self._set(out, "NEEDS_CLARIFICATION", plan.clarification, "ANSWER_CLARIFICATION")
            out.part.clarification_question = plan.clarification
            return
        location_id = route.location.location_id if route.location else request.location_id
        slot_request = sched_pb.FindSlotsRequest(
            specialty=route.specialty, location_id=location_id, appointment_type=route.appointment_type,
            page_size=self.settings.slot_page_size, as_of=ts(request.as_of),
        )
        if plan.range_start is not None:
            slot_request.start_time.CopyFrom(ts(plan.range_start))
            slot_request.end_time.CopyFrom(ts(plan.range_end))
        try:
            reply = self._call("scheduler_gateway", "scheduler.find_slots", self.scheduler.find_slots, slot_request,
                               deadline, out.timings)
        except (Unavailable, DeadlineExceeded) as err:
            self._unavailable(out, "scheduler_gateway", err)
            return
        except InvalidArgument as err:
            # e.g. UNKNOWN_SPECIALTY: the scheduler says this cannot be booked here.
            self._set(out, "ABSTAINED_NO_EVIDENCE",
                      f"The scheduling system has no {route.specialty.replace('_', ' ')} appointments "
                      f"{'of that type ' if route.appointment_type else ''}for you to book here. "
                      "Please contact the appointment desk.", "CONTACT_SCHEDULING_DESK")
            out.record.error = f"scheduler_gateway: {err.reason}"
            return
        except DomainError as err:
            self._unavailable(out, "scheduler_gateway", err)
            return
        # Only slots the gateway verified (read at as_of, status FREE) are ever shown.
        verified = reply.HasField("as_of")
        slots = [s for s in reply.slots if verified and s.status == c_pb.SLOT_STATUS_FREE]
        out.part.slots.extend(slots)
        out.record.slots.extend(slots)
        if verified:
            out.part.slots_as_of.CopyFrom(reply.as_of)
            out.record.slots_as_of.CopyFrom(reply.as_of)
        place = route.location.display_name if route.location else "your clinic"
        specialty = route.specialty.replace("_", " ")
        zone = route.zone
        when = ""
        local_start = local_end = None
        if plan.range_start is not None:
            local_start = plan.range_start.astimezone(zone).date()
            local_end = (plan.range_end - dt.timedelta(seconds=1)).astimezone(zone).date()
            when = f" on {local_start:%a %d %b %Y}" if local_start == local_end else \
                f" between {local_start:%d %b} and {local_end:%d %b %Y}"
        checked = from_ts(reply.as_of).astimezone(zone).strftime("%H:%M %Z") if verified else "unknown"
        if slots:
            single_day = plan.range_start is not None and local_start == local_end
            times = ", ".join(self._slot_time(s, zone, with_day=not single_day) for s in slots)
            text = (f"Open {specialty} appointments at {place}{when} (checked with the scheduling system at "
                    f"{checked}): {times}. Availability can change until a slot is confirmed.")
            self._set(out, "ANSWERED", text, "CONFIRM_SLOT")
        else:
            text = (f"The scheduling system shows no open {specialty} appointments at {place}{when} "
                    f"(checked at {checked}). Please try another day or contact the appointment desk.")
            self._set(out, "ANSWERED", text, "CONTACT_SCHEDULING_DESK")

    @staticmethod
    def _slot_time(slot: c_pb.Slot, fallback: dt.tzinfo, with_day: bool = True) -> str:
        zone = ZoneInfo(slot.time_zone) if slot.time_zone else fallback
        start = from_ts(slot.start_time).astimezone(zone)
        who = f" with {slot.provider_name}" if slot.provider_name else ""
        return f"{start:%a %d %b %H:%M}{who}" if with_day else f"{start:%H:%M}{who}"

    # -- policy parts -------------------------------------------------------------------------------

    def _policy_part(self, out: PartOutput, plan: router.PartPlan, route: router.Route, request: AskInput,
                     deadline: Deadline) -> None:
        s = self.settings
        search_scope = ret_pb.SearchScope(intents=[INTENT_ENUM[i] for i in plan.search_intents or (plan.intent,)],
                                          locale=request.locale)
        if route.location is not None:
            search_scope.location_ids.append(route.location.location_id)
        elif request.location_id and not route.locations_known:
            search_scope.location_ids.append(request.location_id)
        search = ret_pb.SearchRequest(query=plan.query, scope=search_scope, k=s.search_k, as_of=ts(request.as_of),
                                      mode=ret_pb.SEARCH_MODE_HYBRID)
        try:
            found = self._call("retrieval", "retrieval.search", self.retrieval.search, search, deadline, out.timings)
        except DomainError as err:
            self._unavailable(out, "retrieval", err)
            return
        out.record.retrieval.settings.CopyFrom(found.settings)
        out.record.retrieval.retrieved.extend(found.hits)
        hits = list(found.hits)
        if not hits:  # never relax a filter: no eligible evidence means abstain
            self._abstain(out, plan, None)
            return

        conflict = self._find_conflict(plan, route, hits, deadline, out)
        if conflict is not None:
            first, second = conflict
            for label, hit in (("S1", first), ("S2", second)):
                citation = citation_for(label, hit.passage)
                out.part.conflicts.add(citation=citation, text=hit.passage.text)
                out.record.citations.append(citation)
            self._set(out, "CONFLICT", self.messages["conflict"], "ROUTE_TO_POLICY_OWNER")
            return

        offered: list[c_pb.LabelledPassage] = []
        chars = 0
        for hit in hits:
            if len(offered) >= s.max_passages or (offered and chars + len(hit.passage.text) > s.max_chars):
                break
            offered.append(c_pb.LabelledPassage(label=f"S{len(offered) + 1}", passage=hit.passage))
            chars += len(hit.passage.text)
        PASSAGES_OFFERED.observe(len(offered))
        self._generate_and_validate(out, plan, hits, offered, request, deadline)

    def _find_conflict(self, plan: router.PartPlan, route: router.Route, hits: list[ret_pb.SearchHit],
                       deadline: Deadline, out: PartOutput) -> tuple[ret_pb.SearchHit, ret_pb.SearchHit] | None:
        lexicon = router.load_lexicon()
        vocabulary = {**lexicon.specialties, **lexicon.appointment_types}
        asked = frozenset(v for v in (route.specialty, route.appointment_type) if v)
        top = hits[: self.settings.conflict_top_n]

        def detect(scopes: dict[str, tuple[str, ...]] | None) -> conflicts.Conflict | None:
            candidates = [conflicts.Candidate(
                f"S{i + 1}", h.passage.identity.passage_id, h.passage.identity.document_id,
                h.passage.identity.version_id, h.passage.identity.source_class, h.passage.text,
                f"{h.passage.title} > {h.passage.heading_context}",
                None if scopes is None else scopes.get(h.passage.identity.version_id, ()),
            ) for i, h in enumerate(top) if scopes is None or h.passage.identity.version_id in scopes]
            return conflicts.detect(candidates, plan.intent, vocabulary, asked, lexicon.type_implies_specialty,
                                    len(top), question=" ".join(plan.clauses))

        found = detect(None)
        if found is None:
            return None
        # Confirm with the store of record: only approved versions, and their location scopes.
        try:
            reply = self._call("retrieval", "retrieval.get_passages", self.retrieval.get_passages,
                               ret_pb.GetPassagesRequest(passage_ids=[h.passage.identity.passage_id for h in top]),
                               deadline, out.timings)
            scopes = {v.version_id: tuple(v.location_scope) for v in reply.versions
                      if v.status == c_pb.VERSION_STATUS_APPROVED}
            found = detect(scopes)
        except DomainError as err:
            log.warning("conflict check could not reload versions (%s); location scopes unverified", err.reason)
        if found is None:
            return None
        by_id = {h.passage.identity.passage_id: h for h in top}
        out.record.error = f"conflict: {found.explanation}"
        return by_id[found.first.passage_id], by_id[found.second.passage_id]

    def _abstain(self, out: PartOutput, plan: router.PartPlan, hits: list[ret_pb.SearchHit] | None,
                 outcome: str = "ABSTAINED_NO_EVIDENCE") -> None:
        spec = self.messages["abstain"].get(plan.kind, self.messages["abstain"]["OTHER_POLICY"])
        action = spec["next_action"]
        text = spec["text"]
        if outcome == "UNRESOLVED":
            text, action = self.messages["unresolved"], "PREPARE_REVIEW_TASK"
        if plan.kind == "CANCELLATION_RESCHEDULING" and hits:
            self._link_policy(out, hits)
        elif action == "VIEW_POLICY":
            action = "CONTACT_SCHEDULING_DESK"  # no policy to link to
        self._set(out, outcome, text, action)

    @staticmethod
    def _link_policy(out: PartOutput, hits: list[ret_pb.SearchHit]) -> None:
        """The applicable policy, pinned to its version: the best-ranked cancellation policy."""
        policy = next((h for h in hits if h.passage.identity.source_class == "cancellation_policy"), hits[0])
        ident = policy.passage.identity
        out.part.policy_link = pinned_link(ident.document_id, ident.version_id)

    def _generate_and_validate(self, out: PartOutput, plan: router.PartPlan, hits: list[ret_pb.SearchHit],
                               offered: list[c_pb.LabelledPassage], request: AskInput, deadline: Deadline) -> None:
        s = self.settings
        intent = INTENT_ENUM[plan.intent]
        question = " ".join(plan.clauses)
        # Cumulative: a claim rejected in any earlier attempt must not come back in a later one.
        feedback: dict[str, gen_pb.ClaimFeedback] = {}
        best: tuple[int, int, gen_pb.GenerateResponse, cv_pb.ValidateResponse, list[c_pb.LabelledPassage]] | None = None
        generation_record = out.record.generation
        for attempt in range(1, s.max_regenerations + 2):
            try:
                generated = self._call("generation", "generation.generate", self.generation.generate,
                                       gen_pb.GenerateRequest(
                                           question=question, intent=intent, passages=offered,
                                           budget=gen_pb.ContextBudget(max_passages=s.max_passages, max_chars=s.max_chars),
                                           feedback=list(feedback.values()), attempt=attempt),
                                       deadline, out.timings)
            except DomainError as err:
                if best is None:
                    self._unavailable(out, "generation", err)
                    return
                break
            generation_record.generator.CopyFrom(generated.generator)
            generation_record.passages_offered = generated.passages_offered or len(offered)
            generation_record.chars_offered = generated.chars_offered
            del generation_record.labels_offered[:]
            generation_record.labels_offered.extend(generated.labels_offered or [lp.label for lp in offered])
            generation_record.attempts = attempt
            given = [lp for lp in offered if lp.label in set(generated.labels_offered)] or offered
            if not generated.claims:
                break
            try:
                validated = self._call("citation_validator", "validator.validate", self.validator.validate,
                                       cv_pb.ValidateRequest(claims=generated.claims, offered=given,
                                                             as_of=ts(request.as_of), intent=intent),
                                       deadline, out.timings)
            except DomainError as err:
                if best is None:
                    self._unavailable(out, "citation_validator", err)
                    return
                break
            out.record.source_policy_version = validated.source_policy_version
            by_claim = {v.claim_id: v for v in validated.claims}
            shown = self._shown(generated.claims, by_claim, given)
            factual_shown = sum(1 for c in generated.claims
                                if c.claim_id in shown and c.claim_type != c_pb.CLAIM_TYPE_NON_FACTUAL)
            for claim in generated.claims:
                out.record.claims.add(claim=claim, validation=by_claim.get(claim.claim_id, cv_pb.ClaimValidation()),
                                      attempt=attempt, shown=False)
            if best is None or factual_shown >= best[0]:
                best = (factual_shown, attempt, generated, validated, given)
            if validated.passed and len(shown) == len(generated.claims):
                break
            feedback.update((claim.claim_id, self._feedback(claim, by_claim.get(claim.claim_id)))
                            for claim in generated.claims if claim.claim_id not in shown)
        if best is None:
            self._abstain(out, plan, hits)
            return
        self._assemble(out, plan, hits, *best)

    @staticmethod
    def _shown(claims: Any, by_claim: dict[str, cv_pb.ClaimValidation],
               given: list[c_pb.LabelledPassage]) -> set[str]:
        """Claims that may be shown: validated, not withheld, supported (or non-factual), and every
        citation bound to a passage that was actually offered."""
        offered_ids = {lp.passage.identity.passage_id for lp in given}
        ok: set[str] = set()
        for claim in claims:
            validation = by_claim.get(claim.claim_id)
            if validation is None or validation.withheld or validation.findings:
                continue
            if claim.claim_type == c_pb.CLAIM_TYPE_NON_FACTUAL:
                ok.add(claim.claim_id)
                continue
            if validation.support != c_pb.SUPPORT_VERDICT_SUPPORTED or not validation.citations:
                continue
            if all(cit.passage_id in offered_ids for cit in validation.citations):
                ok.add(claim.claim_id)
        return ok

    @staticmethod
    def _reasons(validation: cv_pb.ClaimValidation | None) -> list[int]:
        if validation is None:
            return [c_pb.FAILURE_REASON_CHECK_UNAVAILABLE]
        reasons = [f.reason for f in validation.findings]
        if validation.support == c_pb.SUPPORT_VERDICT_UNSUPPORTED and c_pb.FAILURE_REASON_UNSUPPORTED_CLAIM not in reasons:
            reasons.append(c_pb.FAILURE_REASON_UNSUPPORTED_CLAIM)
        return list(dict.fromkeys(reasons))

    def _feedback(self, claim: c_pb.Claim, validation: cv_pb.ClaimValidation | None) -> gen_pb.ClaimFeedback:
        messages = [f.message for f in validation.findings] if validation else []
        if validation is not None and validation.support_reason:
            messages.append(validation.support_reason)
        return gen_pb.ClaimFeedback(
            claim_id=claim.claim_id, reasons=self._reasons(validation),
            support=validation.support if validation else c_pb.SUPPORT_VERDICT_UNSPECIFIED,
            message="; ".join(messages)[:500],
        )

    def _assemble(self, out: PartOutput, plan: router.PartPlan, hits: list[ret_pb.SearchHit], factual_shown: int,
                  attempt: int, generated: gen_pb.GenerateResponse, validated: cv_pb.ValidateResponse,
                  given: list[c_pb.LabelledPassage]) -> None:
        by_claim = {v.claim_id: v for v in validated.claims}
        shown = self._shown(generated.claims, by_claim, given)
        by_label = {lp.label: lp for lp in given}
        for claim_record in out.record.claims:
            if claim_record.attempt == attempt and claim_record.claim.claim_id in shown:
                claim_record.shown = True
        texts: list[str] = []
        used: dict[str, c_pb.Citation] = {}
        any_unresolved = False
        for claim in generated.claims:
            validation = by_claim.get(claim.claim_id)
            if claim.claim_id in shown:
                answered = out.part.claims.add(claim_id=claim.claim_id, text=claim.text,
                                               support=validation.support, claim_type=claim.claim_type)
                for citation in validation.citations:
                    bound = c_pb.Citation()
                    bound.CopyFrom(citation)
                    if not bound.link:
                        bound.link = pinned_link(bound.document_id, bound.version_id, bound.start, bound.end)
                    if not bound.title and bound.label in by_label:
                        bound.title = by_label[bound.label].passage.title
                    answered.citations.append(bound)
                    used.setdefault(bound.passage_id, bound)
                texts.append(claim.text)
            else:
                any_unresolved |= bool(validation and validation.support == c_pb.SUPPORT_VERDICT_UNRESOLVED)
                out.part.withheld.add(claim_id=claim.claim_id, reasons=self._reasons(validation),
                                      support=validation.support if validation else c_pb.SUPPORT_VERDICT_UNSPECIFIED)
                out.record.reasons.extend(r for r in self._reasons(validation) if r not in out.record.reasons)
        out.record.citations.extend(used.values())
        if factual_shown and not out.part.withheld:
            self._set(out, "ANSWERED", " ".join(texts), "NONE")
        elif factual_shown:
            action = "CONTACT_SCHEDULING_DESK"
            if plan.kind == "CANCELLATION_RESCHEDULING":
                action = "VIEW_POLICY"
                self._link_policy(out, hits)
            self._set(out, "PARTIALLY_ANSWERED", " ".join(texts), action)
        else:
            del out.part.claims[:]
            self._abstain(out, plan, hits, "UNRESOLVED" if any_unresolved else "ABSTAINED_NO_EVIDENCE")
            del out.record.citations[:]

    # -- the route decision -------------------------------------------------------------------------

    @staticmethod
    def _route_decision(route: router.Route) -> r_pb.RouteDecision:
        decision = r_pb.RouteDecision(
            in_scope=route.in_scope, scope_reason=route.scope.reason, router_version=route.version,
            explanations=route.explanations,
        )
        for intent in route.intents:
            decision.intents.append(INTENT_ENUM[intent])
        for ent in route.entities:
            decision.entities.add(kind=ent.kind, surface=ent.surface, value=ent.value, confidence=ent.confidence,
                                  explanation=ent.explanation)
        for plan in route.parts:
            part = decision.parts.add(part_id=plan.part_id, kind=_enum(r_pb.PartKind, "PART_KIND_", plan.kind),
                                      intent=INTENT_ENUM[plan.intent], missing_entities=plan.missing)
            if plan.range_start is not None:
                part.range_start.CopyFrom(ts(plan.range_start))
                part.range_end.CopyFrom(ts(plan.range_end))
        return decision
