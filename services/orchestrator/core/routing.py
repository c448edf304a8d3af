"""Understanding a question (DESIGN.md §4 step 2): the scope gate once, the caller's permitted
locations once, then a router that turns the question into parts. The result is a plain `Route`.

The two decisions are behind small interfaces so a learned model can replace either (issue 14):
`ScopeGate` (today the rules of core/scope.py) and `Router` (today the lexicon router of
core/router.py). The stage itself owns what no model decides: the gate runs before any downstream
call, ListLocations is only asked for when an in-scope clause could use it, and a location hint
outside the caller's permitted locations does not exist for them."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from citetrace.kit.auth import Principal
from citetrace.kit.errors import NotFound

from services.orchestrator.core import scope
from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.model import Intent, PartKind
from services.orchestrator.core.text import normalize, split_clauses
from services.orchestrator.core.wording import Wording


@dataclasses.dataclass(frozen=True)
class Entity:
    kind: str  # specialty, location, date, appointment_type, provider
    surface: str
    value: str
    confidence: float
    explanation: str


@dataclasses.dataclass(frozen=True)
class Clarification:
    """The one focused question a part asks instead of answering (rendered from the wording file)."""

    kind: str  # which_specialty | specialty_not_offered | location_lacks_specialty | which_clinic_of | which_clinic_for
    missing: str  # the entity asked for: specialty | location
    specialty: str = ""
    location: str = ""  # display name of the location that lacks the specialty
    options: tuple[str, ...] = ()  # specialties offered, or clinic display names


@dataclasses.dataclass
class PartPlan:
    part_id: str
    intent: Intent
    kind: PartKind
    clauses: list[str]
    query: str = ""
    range_start: dt.datetime | None = None
    range_end: dt.datetime | None = None
    missing: list[str] = dataclasses.field(default_factory=list)
    clarification: Clarification | None = None
    boundary: scope.Boundary | None = None
    # The intent filter of a policy part's Search, decided up front from the question (never
    # relaxed after a result): the part's own intent, or the union of the plausible ones.
    search_intents: tuple[Intent, ...] = ()
    # A policy reading the question may or may not have (a booking request that names nothing to
    # book reads as a question about booking too): shown only when it answers, else dropped.
    only_if_answered: bool = False


@dataclasses.dataclass
class Route:
    version: str
    scope: scope.ScopeDecision
    parts: list[PartPlan]
    intents: list[Intent]
    entities: list[Entity]
    explanations: list[str]
    location: LocationInfo | None = None
    zone: ZoneInfo = ZoneInfo("UTC")
    specialty: str = ""
    # The lexicon's ID for the specialty when the tenant lists it under another (router._tenant_specialty):
    # the qualifier vocabulary that reads passages speaks the lexicon's IDs.
    lexicon_specialty: str = ""
    appointment_type: str = ""
    provider: str = ""
    # False: the scheduler could not be asked, so no location was resolved or asked for.
    locations_known: bool = True
    # The caller's permitted locations the clinic was chosen from (empty: unknown).
    clinic_choices: tuple[LocationInfo, ...] = ()
    # The change to the caller's own appointment or contact details the question asks for
    # (core/change_requests.py ChangeRequest; None: none).
    change: Any = None
    # A reply to "which appointment": the appointment IDs that question offered (empty: any).
    appointment_choices: tuple[str, ...] = ()
    # A booking that replies to a slot answer: the slot IDs that answer offered (empty: any).
    slot_choices: tuple[str, ...] = ()

    @property
    def in_scope(self) -> bool:
        return self.scope.in_scope


@dataclasses.dataclass(frozen=True)
class Question:
    text: str
    clauses: tuple[str, ...]
    as_of: dt.datetime
    location_hint: str = ""

    @classmethod
    def of(cls, text: str, as_of: dt.datetime, location_hint: str = "") -> Question:
        return cls(text, tuple(split_clauses(text) or [normalize(text)]), as_of, location_hint)


class ScopeGate(Protocol):
    def warm_up(self) -> None:
        """Loads what the gate needs before the first question (models)."""
        ...

    def decide(self, clauses: tuple[str, ...]) -> scope.ScopeDecision: ...


class Router(Protocol):
    version: str

    def bind_reply(self, missing: str, reply: str, candidates: list[LocationInfo]) -> str:
        """The entity a clarification reply names: a location_id among `candidates` (missing
        "location") or a specialty phrase (missing "specialty"); empty when it names none."""
        ...

    def route(self, question: Question, decision: scope.ScopeDecision,
              permitted: list[LocationInfo] | None) -> Route:
        """Parts of an already gated question. `permitted`: the locations the caller may use
        (None: unknown, the scheduler could not be asked)."""
        ...


# The caller's permitted locations, or None and the reason they could not be listed.
ListPermitted = Callable[[Principal], tuple[list[LocationInfo] | None, str]]


def permitted_locations(locations: list[LocationInfo], principal: Principal) -> list[LocationInfo]:
    """The locations a caller may use: all of the tenant's, or those their token names."""
    if not principal.location_ids:
        return list(locations)
    allowed = set(principal.location_ids)
    return [loc for loc in locations if loc.location_id in allowed]


class RoutingStage:
    def __init__(self, gate: ScopeGate, router: Router) -> None:
        self.gate = gate
        self.router = router

    def warm_up(self) -> None:
        self.gate.warm_up()

    def understand(self, question: Question, principal: Principal, list_permitted: ListPermitted) -> Route:
        decision = self.gate.decide(question.clauses)
        permitted: list[LocationInfo] | None = None
        unavailable = ""
        if decision.in_scope_clauses:
            permitted, unavailable = list_permitted(principal)
            if question.location_hint and permitted is not None and \
                    question.location_hint not in {loc.location_id for loc in permitted}:
                # Another tenant's location, or one outside the caller's, does not exist for them.
                raise NotFound("LOCATION_NOT_FOUND", f"location {question.location_hint!r} was not found",
                               field="location_id")
        route = self.router.route(question, decision, permitted)
        if unavailable:
            route.explanations.append(f"locations unavailable: {unavailable}")
        return route


def clarification_text(clarification: Clarification, wording: Wording) -> str:
    c = clarification
    if c.kind in ("which_specialty", "specialty_not_offered"):
        examples = wording.say("clarify", "examples", items=wording.listing([wording.specialty(s) for s in c.options])) \
            if c.options else ""
        return wording.say("clarify", c.kind, examples=examples,
                           specialty_capitalized=wording.specialty(c.specialty).capitalize())
    if c.kind == "location_lacks_specialty":
        return wording.say("clarify", c.kind, location=c.location, specialty=wording.specialty(c.specialty),
                           alternatives=wording.alternatives(c.options))
    return wording.say("clarify", c.kind, specialty=wording.specialty(c.specialty),
                       candidates=wording.alternatives(c.options))
