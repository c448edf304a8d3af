"""The router (DESIGN.md §4 step 2): deterministic and explainable. Lexicons and rules
(data/router_lexicon.yaml, versioned) find intents and entities; each request clause goes to the
authority that answers it; a needed entity that is missing gives exactly one focused clarification
question. Pure: locations come in from the caller (scheduler-gateway ListLocations, cached)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
from pathlib import Path
from zoneinfo import ZoneInfo

import yaml

from services.orchestrator.core import clinics, dates, scope
from services.orchestrator.core.text import fold, normalize, split_clauses

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "router_lexicon.yaml"

AVAILABILITY = "availability"
ARRIVAL = "arrival_preparation"
CANCELLATION = "cancellation_rescheduling"
PROVIDER = "provider_information"
OTHER = "other"
CLINICAL = "clinical"

# intent -> part kind (names of citetrace.common.v1.PartKind without the prefix)
PART_KIND = {
    AVAILABILITY: "LIVE_SLOT",
    ARRIVAL: "ARRIVAL_PREPARATION",
    CANCELLATION: "CANCELLATION_RESCHEDULING",
    PROVIDER: "PROVIDER_DESCRIPTION",
    OTHER: "OTHER_POLICY",
    CLINICAL: "CLINICAL_BOUNDARY",
}
INTENT_ORDER = (AVAILABILITY, ARRIVAL, CANCELLATION, PROVIDER, OTHER)
# The intents a policy document can be filed under that a question with no matched intent may be
# about: availability is answered by the live slot part, never by a document.
POLICY_INTENTS = (OTHER, ARRIVAL, CANCELLATION, PROVIDER)
# The provider lexicon entry that only names a doctor (see data/router_lexicon.yaml).
PROVIDER_BY_NAME = "re:\\bdr\\.? [a-z]+"
DEFAULT_HORIZON_DAYS = 14


@dataclasses.dataclass(frozen=True)
class Lexicon:
    version: str
    intents: dict[str, tuple[tuple[str, re.Pattern[str]], ...]]
    specialties: dict[str, tuple[str, ...]]
    appointment_types: dict[str, tuple[str, ...]]
    type_implies_specialty: dict[str, str]
    # Phrases that look like an intent's words but are not about the appointment ("my bus was
    # cancelled"): removed from a clause before its intents are detected.
    not_intents: tuple[tuple[str, re.Pattern[str]], ...] = ()

    @property
    def vocabulary(self) -> frozenset[str]:
        """Words that name a specialty or appointment type (never a clinic on their own)."""
        out: set[str] = set()
        for table in (self.specialties, self.appointment_types):
            for key, phrases in table.items():
                out.update(clinics.words(key.replace("_", " ")))
                for phrase in phrases:
                    out.update(clinics.words(phrase))
        return frozenset(out)


def _phrase_pattern(entry: str) -> re.Pattern[str]:
    if entry.startswith("re:"):
        return re.compile(entry[3:])
    return re.compile(rf"(?<![\w-]){re.escape(entry.lower())}(?![\w-])")


@functools.lru_cache(maxsize=4)
def load_lexicon(path: Path = DATA_FILE) -> Lexicon:
    raw = yaml.safe_load(path.read_text())
    intents = {
        name: tuple((str(entry), _phrase_pattern(str(entry))) for entry in entries)
        for name, entries in raw["intents"].items()
    }
    return Lexicon(
        version=str(raw["version"]),
        intents=intents,
        specialties={k: tuple(str(v).lower() for v in vs) for k, vs in raw["specialties"].items()},
        appointment_types={k: tuple(str(v).lower() for v in vs) for k, vs in raw["appointment_types"].items()},
        type_implies_specialty=dict(raw.get("type_implies_specialty") or {}),
        not_intents=tuple((str(e), _phrase_pattern(str(e))) for e in raw.get("not_intents") or ()),
    )


@dataclasses.dataclass(frozen=True)
class Entity:
    kind: str  # specialty, location, date, appointment_type, provider
    surface: str
    value: str
    confidence: float
    explanation: str


@dataclasses.dataclass
class PartPlan:
    part_id: str
    intent: str
    kind: str
    clauses: list[str]
    query: str = ""
    range_start: dt.datetime | None = None
    range_end: dt.datetime | None = None
    missing: list[str] = dataclasses.field(default_factory=list)
    clarification: str = ""
    boundary: scope.Boundary | None = None
    # The intent filter of a policy part's Search, decided up front from the question (never
    # relaxed after a result): the part's own intent, or the union of the plausible ones.
    search_intents: tuple[str, ...] = ()


@dataclasses.dataclass
class Route:
    version: str
    scope: scope.ScopeDecision
    parts: list[PartPlan]
    intents: list[str]
    entities: list[Entity]
    explanations: list[str]
    location: clinics.LocationInfo | None = None
    zone: ZoneInfo = ZoneInfo("UTC")
    specialty: str = ""
    appointment_type: str = ""
    provider: str = ""
    locations_known: bool = True

    @property
    def in_scope(self) -> bool:
        return self.scope.in_scope


def detect_intents(clause: str, lexicon: Lexicon) -> list[tuple[str, str]]:
    """(intent, matched entry) for each intent whose lexicon matches the clause."""
    text = fold(clause)
    for _, pattern in lexicon.not_intents:
        text = pattern.sub(" ", text)
    found: list[tuple[str, str]] = []
    for intent, entries in lexicon.intents.items():
        for entry, pattern in entries:
            if pattern.search(text):
                found.append((intent, entry))
                break
    return found


def _lexicon_match(text: str, table: dict[str, tuple[str, ...]]) -> tuple[str, str] | None:
    """(key, phrase) of the longest phrase found (ties: first key in the table)."""
    best: tuple[int, str, str] | None = None
    for key, phrases in table.items():
        for phrase in phrases:
            hit = re.search(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", text)
            if hit and (best is None or len(phrase) > best[0]):
                best = (len(phrase), key, phrase)
    return (best[1], best[2]) if best else None


def _join_names(locs: list[clinics.LocationInfo]) -> str:
    names = sorted(loc.display_name for loc in locs)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def route(
    question: str,
    as_of: dt.datetime,
    locations: list[clinics.LocationInfo] | None,
    *,
    location_hint: str = "",
    permitted_location_ids: tuple[str, ...] = (),
    horizon_days: int = DEFAULT_HORIZON_DAYS,
    lexicon: Lexicon | None = None,
    policy: scope.ScopePolicy | None = None,
) -> Route:
    """Scope gate first, then intents, entities and parts. `locations` None: unknown (the
    scheduler could not be asked); the router then neither resolves nor asks for a clinic."""
    lexicon = lexicon or load_lexicon()
    clauses = split_clauses(question) or [normalize(question)]
    decision = scope.gate(clauses, policy)
    boundary = scope.boundary_for(decision, policy)
    explanations = [f"scope: {decision.reason}"]
    result = Route(lexicon.version, decision, [], [], [], explanations, locations_known=locations is not None)

    if decision.emergency:
        result.parts.append(PartPlan("p1", CLINICAL, PART_KIND[CLINICAL], [], boundary=boundary))
        result.intents.append(CLINICAL)
        return result

    # Intents per in-scope clause; clauses without an intent are context for the others.
    by_intent: dict[str, list[str]] = {}
    first_seen: dict[str, int] = {}
    clinical_index = None
    context: list[str] = []  # in-scope clauses that match no intent
    for index, verdict in enumerate(decision.clauses):
        if verdict.kind == scope.CLINICAL:
            clinical_index = index if clinical_index is None else clinical_index
            continue
        found = detect_intents(verdict.clause, lexicon)
        for entry, pattern in lexicon.not_intents:
            if pattern.search(fold(verdict.clause)):
                explanations.append(f"clause {index + 1}: '{entry}' is not about the appointment (ignored for intents)")
        if not found:
            context.append(verdict.clause)
        if {i for i, _ in found} >= {AVAILABILITY, PROVIDER} and dict(found)[PROVIDER] == PROVIDER_BY_NAME:
            # "Is Dr. X available ...": the doctor is an entity of the slot request, not a question
            # about the provider.
            found = [(i, e) for i, e in found if i != PROVIDER]
            explanations.append(f"clause {index + 1}: a named provider in an availability request is an entity")
        for intent, entry in found:
            by_intent.setdefault(intent, []).append(verdict.clause)
            first_seen.setdefault(intent, index)
            explanations.append(f"intent {intent}: matched '{entry}' in clause {index + 1}")
    in_scope_text = fold(" ".join(decision.in_scope_clauses))
    if not by_intent and decision.in_scope_clauses and clinical_index is None:
        by_intent[OTHER] = list(decision.in_scope_clauses)
        first_seen[OTHER] = 0
        explanations.append("intent other: no intent lexicon matched")
    elif not by_intent and decision.in_scope_clauses:
        explanations.append("clauses without an intent are context of the clinical request: no other part")

    # Entities (from in-scope text only: a clinical clause is never sent anywhere).
    specialty = _lexicon_match(in_scope_text, lexicon.specialties)
    appt = _lexicon_match(in_scope_text, lexicon.appointment_types)
    if appt:
        result.appointment_type = appt[0]
        result.entities.append(Entity("appointment_type", appt[1], appt[0], 1.0, f"lexicon '{appt[1]}'"))
    if specialty:
        result.specialty = specialty[0]
        result.entities.append(Entity("specialty", specialty[1], specialty[0], 1.0, f"lexicon '{specialty[1]}'"))
    elif appt and appt[0] in lexicon.type_implies_specialty:
        result.specialty = lexicon.type_implies_specialty[appt[0]]
        result.entities.append(Entity("specialty", appt[1], result.specialty, 0.9,
                                      f"implied by appointment type {appt[0]}"))
    if m := re.search(r"\bdr\.? ([a-zæøå][\w'-]+)", in_scope_text):
        result.provider = m[1]
        result.entities.append(Entity("provider", m[0], m[1], 0.8, "title followed by a name"))

    # Location: a clinic named in the question, else the request's hint, else the only candidate.
    permitted = None if locations is None else [
        loc for loc in locations if not permitted_location_ids or loc.location_id in permitted_location_ids
    ]
    ambiguous: tuple[clinics.LocationInfo, ...] = ()
    if permitted is not None:
        found = clinics.match(in_scope_text, permitted, lexicon.vocabulary)
        if found.status == "resolved":
            result.location = found.location
            result.entities.append(Entity("location", found.surface, found.location.location_id,
                                          round(found.score, 3), found.explanation))
        elif found.status == "ambiguous":
            ambiguous = found.candidates
            explanations.append(f"location ambiguous: {found.explanation} "
                                f"({', '.join(c.location_id for c in found.candidates)})")
        if result.location is None and not ambiguous:
            hinted = [loc for loc in permitted if loc.location_id == location_hint]
            offering = [loc for loc in permitted if result.specialty and result.specialty in loc.specialties]
            if hinted:
                result.location = hinted[0]
                why = "from the request's location hint"
            elif len(permitted) == 1:
                result.location = permitted[0]
                why = "the only location permitted to the caller"
            elif len(offering) == 1:
                result.location = offering[0]
                why = f"the only permitted location offering {result.specialty}"
            if result.location is not None:
                result.entities.append(Entity("location", "", result.location.location_id, 1.0, why))
    elif location_hint:
        explanations.append("locations unavailable: the request's location hint is passed through unverified")

    # Time zone: the location's, else the one zone all permitted locations share, else UTC.
    zones = {loc.time_zone for loc in (permitted or []) if loc.time_zone}
    zone_name = result.location.time_zone if result.location and result.location.time_zone else (
        zones.pop() if len(zones) == 1 else "UTC")
    result.zone = ZoneInfo(zone_name)
    date_range = dates.resolve(in_scope_text, as_of, result.zone)
    if date_range:
        result.entities.append(Entity("date", date_range.surface, date_range.start.isoformat()
                                      if (date_range.end - date_range.start).days == 1
                                      else f"{date_range.start.isoformat()}/{date_range.end.isoformat()}",
                                      1.0, date_range.explanation))

    # Parts in the order the question asked them; the clinical boundary where it was asked.
    order = sorted(by_intent, key=lambda i: (first_seen[i], INTENT_ORDER.index(i)))
    plans: list[tuple[int, PartPlan]] = []
    for intent in order:
        clauses = by_intent[intent]
        if intent != AVAILABILITY and context and clinical_index is None and set(context) - set(clauses):
            # "My child is ill. Do I pay the fee if I cancel today?": a clause with no intent of its own
            # is context of the policy question (its search and its answer), in question order.
            clauses = [c for c in decision.in_scope_clauses if c in context or c in clauses]
            explanations.append(f"{intent}: {len(context)} clause(s) without an intent are its context")
        plan = PartPlan("", intent, PART_KIND[intent], clauses)
        plan.query = _query(plan.clauses, result)
        if intent != AVAILABILITY:
            plan.search_intents = _search_intents(intent, by_intent, result.explanations)
        if intent == AVAILABILITY:
            _plan_slots(plan, result, date_range, as_of, horizon_days, permitted, ambiguous)
        plans.append((first_seen[intent], plan))
        result.intents.append(intent)
    if clinical_index is not None:
        plans.append((clinical_index, PartPlan("", CLINICAL, PART_KIND[CLINICAL], [], boundary=boundary)))
        result.intents.append(CLINICAL)
    plans.sort(key=lambda item: item[0])
    for number, (_, plan) in enumerate(plans, start=1):
        plan.part_id = f"p{number}"
        result.parts.append(plan)
    return result


def _search_intents(intent: str, by_intent: dict[str, list[str]], explanations: list[str]) -> tuple[str, ...]:
    """The intent scope of a policy part's Search. A part whose intent a lexicon named searches
    that intent only. A part with no named intent (OTHER: nothing matched) may be about any
    policy, so it searches the union of the policy intents; the generator's relevance rule then
    decides whether any passage answers it (else the part abstains)."""
    if intent != OTHER or set(by_intent) - {OTHER, AVAILABILITY}:
        return (intent,)
    explanations.append("search scope: no intent lexicon matched, so the policy part searches the union of the "
                        f"policy intents ({', '.join(POLICY_INTENTS)}); an answer must still cover the question")
    return POLICY_INTENTS


def _query(clauses: list[str], result: Route) -> str:
    """The search query for a policy part: its clauses plus the entities that narrow the rule."""
    text = " ".join(clauses)
    extra = [value.replace("_", " ") for value in (result.specialty, result.appointment_type) if value]
    missing = [word for word in extra if word not in text.lower()]
    return " ".join([text, *missing]).strip()


def _plan_slots(plan: PartPlan, result: Route, date_range: dates.DateRange | None, as_of: dt.datetime,
                horizon_days: int, permitted: list[clinics.LocationInfo] | None,
                ambiguous: tuple[clinics.LocationInfo, ...]) -> None:
    if date_range:
        plan.range_start, plan.range_end = date_range.utc_bounds(result.zone)
    else:
        plan.range_start, plan.range_end = as_of, as_of + dt.timedelta(days=horizon_days)
        result.explanations.append(f"date: none named; the next {horizon_days} days from as_of")
    offered = sorted({s for loc in permitted or [] for s in loc.specialties})
    examples = f" ({', '.join(s.replace('_', ' ') for s in offered)})" if offered else ""
    name = result.specialty.replace("_", " ")
    if not result.specialty:
        plan.missing.append("specialty")
        plan.clarification = f"Which specialty would you like to book{examples}?"
        return
    if offered and result.specialty not in offered:
        plan.missing.append("specialty")
        plan.clarification = f"{name.capitalize()} is not offered here. Which specialty would you like to book{examples}?"
        result.explanations.append(f"specialty {result.specialty}: offered by none of the caller's locations")
        return
    loc = result.location
    if loc is not None and loc.specialties and result.specialty not in loc.specialties and permitted is not None:
        others = [other for other in permitted if result.specialty in other.specialties]
        plan.missing.append("location")
        plan.clarification = (f"{loc.display_name} does not offer {name}. Would you like "
                              f"{_join_names(others)} instead?")
        result.explanations.append(f"location {loc.location_id}: does not offer {result.specialty}")
        return
    if result.location is None and permitted is not None:
        if ambiguous:
            plan.missing.append("location")
            plan.clarification = f"Which clinic do you mean: {_join_names(list(ambiguous))}?"
            return
        offering = [loc for loc in permitted if result.specialty in loc.specialties] or permitted
        if len(offering) > 1:
            plan.missing.append("location")
            plan.clarification = (f"Which clinic would you like for {result.specialty.replace('_', ' ')}: "
                                  f"{_join_names(offering)}?")
