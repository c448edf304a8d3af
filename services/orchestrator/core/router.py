"""The lexicon router (DESIGN.md §4 step 2), the routing stage's `Router` (core/routing.py):
deterministic and explainable. Lexicons and rules (data/router_lexicon.yaml, versioned) find
intents and entities; each request clause goes to the authority that answers it; a needed entity
that is missing gives exactly one focused clarification. Pure: the scope decision and the caller's
permitted locations come in from the routing stage."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
from pathlib import Path
from zoneinfo import ZoneInfo

import yaml
from citetrace import lay, textnorm

from services.orchestrator.core import clinics, dates, scope
from services.orchestrator.core.model import Intent, PartKind
from services.orchestrator.core.routing import Clarification, Entity, PartPlan, Question, Route
from services.orchestrator.core.text import fold
from services.orchestrator.understanding import locations
from services.orchestrator.understanding.analysis import is_statement

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "router_lexicon.yaml"

AVAILABILITY = Intent.AVAILABILITY
ARRIVAL = Intent.ARRIVAL_PREPARATION
CANCELLATION = Intent.CANCELLATION_RESCHEDULING
PROVIDER = Intent.PROVIDER_INFORMATION
OTHER = Intent.OTHER
CLINICAL = Intent.CLINICAL

PART_KIND = {
    AVAILABILITY: PartKind.LIVE_SLOT,
    ARRIVAL: PartKind.ARRIVAL_PREPARATION,
    CANCELLATION: PartKind.CANCELLATION_RESCHEDULING,
    PROVIDER: PartKind.PROVIDER_DESCRIPTION,
    OTHER: PartKind.OTHER_POLICY,
    CLINICAL: PartKind.CLINICAL_BOUNDARY,
}
INTENT_ORDER = (AVAILABILITY, ARRIVAL, CANCELLATION, PROVIDER, OTHER)
# The intents a policy document can be filed under that a question with no matched intent may be
# about: availability is answered by the live slot part, never by a document.
POLICY_INTENTS = (OTHER, ARRIVAL, CANCELLATION, PROVIDER)
# The provider lexicon entry that only names a doctor (see data/router_lexicon.yaml).
PROVIDER_BY_NAME = "re:\\bdr\\.? [a-z]+"
DEFAULT_HORIZON_DAYS = 14
# A model intent below this, next to a clause whose intent the lexicon names, makes its clause context.
MODEL_CONFIDENT = 0.6
# Words that greet, thank or soften and ask nothing (en, nb): a clause of these alone ("hi!!", "thanks
# heaps", "cheers", "tusen takk") has no intent, whatever the model reads into it.
COURTESY = frozenset("""
    hi hello hey hiya heya howdy morning afternoon evening good day thanks thank thankyou thx ty
    cheers ta heaps lots much so very many kind kindly regards appreciate appreciated advance
    please pls plz ok okay lol haha xx x mate guys team folks dear love sorry great awesome lovely
    brilliant wonderful hei heisann hallo takk tusen hilsen mvh vennlig god morgen dag kveld
""".split())  # noqa: SIM905


@dataclasses.dataclass(frozen=True)
class Lexicon:
    version: str
    intents: dict[Intent, tuple[tuple[str, re.Pattern[str]], ...]]
    specialties: dict[str, tuple[str, ...]]
    appointment_types: dict[str, tuple[str, ...]]
    type_implies_specialty: dict[str, str]
    # Phrases that look like an intent's words but are not about the appointment ("my bus was
    # cancelled"): removed from a clause before its intents are detected.
    not_intents: tuple[tuple[str, re.Pattern[str]], ...] = ()

    @functools.cached_property
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
        Intent(name): tuple((str(entry), _phrase_pattern(str(entry))) for entry in entries)
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


def detect_intents(clause: str, lexicon: Lexicon, skip: frozenset[str] = frozenset()) -> list[tuple[Intent, str]]:
    """(intent, matched entry) for each intent whose lexicon matches the clause: the first of its
    entries that matches and is not in `skip`."""
    found: list[tuple[Intent, str]] = []
    for intent, entry in lexicon_hits(clause, lexicon):
        if entry not in skip and all(intent != seen for seen, _ in found):
            found.append((intent, entry))
    return found


def lexicon_hits(clause: str, lexicon: Lexicon) -> list[tuple[Intent, str]]:
    """(intent, entry) for every entry that matches the clause, in lexicon order."""
    text = fold(clause)
    for _, pattern in lexicon.not_intents:
        text = pattern.sub(" ", text)
    return [(intent, entry) for intent, entries in lexicon.intents.items()
            for entry, pattern in entries if pattern.search(text)]


def _stems(text: str) -> str:
    """The text's words as stems, space-separated ("Orthopedic surgery" and "orthopedics" share one)."""
    return " ".join(textnorm.stem(word) for word in textnorm.tokens(fold(text)))


def _shares_a_stem_start(a: str, b: str) -> bool:
    """Whether an appointment type's ID speaks of a specialty's: words that begin alike for 4 letters
    or more ("ortho_new_patient", "orthopedics"), or a word that is the specialty's initials
    ("pt_evaluation", "physical_therapy")."""
    initials = "".join(word[:1] for word in b.split("_")) if "_" in b else ""
    return any(x == initials for x in a.split("_")) or \
        any(x[:4] == y[:4] for x in a.split("_") for y in b.split("_") if len(x) >= 4 and len(y) >= 4)


def _specialties_named(text: str, offered: list[str]) -> list[str]:
    """The tenant's specialty IDs whose words the text uses ("sports_medicine" in "a sports medicine
    appointment"), compared as stems."""
    words = f" {_stems(text)} "
    return [s for s in offered if f" {_stems(s.replace('_', ' '))} " in words]


def _lexicon_match(text: str, table: dict[str, tuple[str, ...]]) -> tuple[str, str] | None:
    """(key, phrase) of the longest phrase found (ties: first key in the table)."""
    best: tuple[int, str, str] | None = None
    for key, phrases in table.items():
        for phrase in phrases:
            hit = re.search(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", text)
            if hit and (best is None or len(phrase) > best[0]):
                best = (len(phrase), key, phrase)
    return (best[1], best[2]) if best else None


class LexiconRouter:
    """The routing stage's Router: lexicons and rules, no model."""

    def __init__(self, lexicon: Lexicon | None = None, horizon_days: int = DEFAULT_HORIZON_DAYS) -> None:
        self.lexicon = lexicon or load_lexicon()
        self.horizon_days = horizon_days

    @property
    def version(self) -> str:
        return self.lexicon.version

    def route(self, question: Question, decision: scope.ScopeDecision,
              permitted: list[clinics.LocationInfo] | None) -> Route:
        """Intents, entities and parts of a gated question. `permitted` None: the locations are
        unknown (the scheduler could not be asked); the router then neither resolves nor asks
        for a clinic."""
        explanations = [f"scope: {decision.reason}"]
        if decision.analysis is not None:
            explanations.extend(decision.analysis.explanations())
        version = self.lexicon.version if decision.analysis is None else \
            f"{self.lexicon.version}+{decision.analysis.version}"
        result = Route(version, decision, [], [], [], explanations, locations_known=permitted is not None)
        if decision.emergency:
            result.parts.append(PartPlan("p1", CLINICAL, PART_KIND[CLINICAL], [], boundary=decision.boundary))
            result.intents.append(CLINICAL)
            return result
        in_scope_text = fold(" ".join(decision.in_scope_clauses))
        self._entities(in_scope_text, result)
        self._tenant_specialty(in_scope_text, permitted, result)
        self._tenant_appointment_type(permitted, result)
        slot_entities = bool(result.specialty or result.appointment_type or result.provider
                             or dates.resolve(in_scope_text, question.as_of, ZoneInfo("UTC")))
        found = self._intents(decision, explanations, slot_entities)
        ambiguous = self._locate(in_scope_text, permitted, question.location_hint, result)
        zones = {loc.time_zone for loc in (permitted or []) if loc.time_zone}
        zone_name = result.location.time_zone if result.location and result.location.time_zone else (
            zones.pop() if len(zones) == 1 else "UTC")
        result.zone = ZoneInfo(zone_name)
        date_range = dates.resolve(in_scope_text, question.as_of, result.zone)
        if date_range:
            result.entities.append(Entity("date", date_range.surface, date_range.start.isoformat()
                                          if (date_range.end - date_range.start).days == 1
                                          else f"{date_range.start.isoformat()}/{date_range.end.isoformat()}",
                                          1.0, date_range.explanation))
        self._parts(found, decision, result, date_range, question.as_of, permitted, ambiguous)
        return result

    def _intents(self, decision: scope.ScopeDecision, explanations: list[str], slot_entities: bool = True) -> _Intents:
        """Intents per in-scope clause; clauses without an intent are context for the others."""
        lexicon = self.lexicon
        out = _Intents()
        decided = {index: self._clause_intents(decision, index, verdict.clause)
                   for index, verdict in enumerate(decision.clauses) if verdict.kind != scope.CLINICAL}
        courtesy = {index for index in decided if _courtesy_only(decision.clauses[index].clause)}
        for index in courtesy:
            if decided[index]:
                explanations.append(f"clause {index + 1}: courtesy only: no intent")
            decided[index] = []
        asking = {i for i, found in decided.items() if found and not is_statement(decision.clauses[i].clause)}
        for index, found in decided.items():
            clause = decision.clauses[index].clause
            if found and found[0][1].startswith("model ") and asking - {index} and is_statement(clause) and \
                    _a_sentence_of_its_own(decision, index) and not _REQUEST.search(fold(clause)):
                # "do you take cash or checks? trying to avoid my credit card": the model read the
                # reason as a fee question (0.91); a statement that asks for nothing, beside a
                # question, is that question's context.
                decided[index] = []
                explanations.append(f"clause {index + 1}: a statement beside a question, asking for nothing: context")
        named = [i for i, found in decided.items() if found and not found[0][1].startswith("model ")]
        clinical = any(v.kind == scope.CLINICAL for v in decision.clauses)
        for index, found in decided.items():
            by_model = [(i, e) for i, e in found if e.startswith("model ")]
            if by_model and clinical and is_statement(decision.clauses[index].clause):
                # "Would a CT harm my baby? I'm ten weeks along.": a statement beside a clinical
                # request is its context, not a question of its own.
                decided[index] = []
                explanations.append(f"clause {index + 1}: a statement beside the clinical request is its context")
            elif by_model and float(by_model[0][1].split()[1]) < MODEL_CONFIDENT and not named:
                # The model is unsure and no lexicon names an intent: the question searches every
                # policy intent (OTHER) and the relevance rule decides, as when nothing matched.
                decided[index] = []
                explanations.append(f"clause {index + 1}: model intent below {MODEL_CONFIDENT}: no intent named")
            elif by_model and by_model[0][0] == AVAILABILITY and not slot_entities:
                # A live-slot request names something to book (a specialty, a type, a day, a
                # doctor); without any, the model's "availability" reads a policy question
                # ("opening hours of Northgate") and the clause searches the policies.
                decided[index] = [(i, e) for i, e in found if i != AVAILABILITY]
                explanations.append(f"clause {index + 1}: model availability without a specialty, type, date or "
                                    "provider: not a slot request")
        for index, found in decided.items():
            if found and found[0][1].startswith("model ") and named and \
                    float(found[0][1].split()[1]) < MODEL_CONFIDENT:
                # A clause the lexicon does not name and the model is unsure of, beside a clause the
                # lexicon names, is context of that one ("I missed three visits. Can I still book online?").
                decided[index] = []
                explanations.append(f"clause {index + 1}: model intent below {MODEL_CONFIDENT} beside a named "
                                    "intent: context")
        for index, verdict in enumerate(decision.clauses):
            if verdict.kind == scope.CLINICAL:
                out.clinical_index = index if out.clinical_index is None else out.clinical_index
                continue
            found = decided[index]
            for entry, pattern in lexicon.not_intents:
                if pattern.search(fold(verdict.clause)):
                    explanations.append(f"clause {index + 1}: '{entry}' is not about the appointment "
                                        "(ignored for intents)")
            if not found and index not in courtesy:
                out.context.append(verdict.clause)
            if {i for i, _ in found} >= {AVAILABILITY, PROVIDER} and dict(found)[PROVIDER] == PROVIDER_BY_NAME:
                # "Is Dr. X available ...": the doctor is an entity of the slot request, not a
                # question about the provider.
                found = [(i, e) for i, e in found if i != PROVIDER]
                explanations.append(f"clause {index + 1}: a named provider in an availability request is an entity")
            for intent, entry in found:
                out.by_intent.setdefault(intent, []).append(verdict.clause)
                out.first_seen.setdefault(intent, index)
                explanations.append(f"intent {intent}: matched '{entry}' in clause {index + 1}")
        specific = {i for i in out.by_intent if i != OTHER}
        if specific and OTHER in out.by_intent:
            # A clause the model could only call "other" next to a clause with a named intent is
            # context of that question ("My child is ill. Do I pay the fee if I cancel today?").
            for clause in out.by_intent.pop(OTHER):
                if not any(clause in clauses for clauses in out.by_intent.values()):
                    out.context.append(clause)
            out.first_seen.pop(OTHER, None)
        if not out.by_intent and decision.in_scope_clauses and out.clinical_index is None:
            out.by_intent[OTHER] = list(decision.in_scope_clauses)
            out.first_seen[OTHER] = 0
            explanations.append("intent other: no intent lexicon matched")
        elif not out.by_intent and decision.in_scope_clauses:
            explanations.append("clauses without an intent are context of the clinical request: no other part")
        return out

    def bind_reply(self, missing: str, reply: str, candidates: list[clinics.LocationInfo]) -> str:
        if missing == "location":
            found = locations.resolve(reply, candidates, exclude=self.lexicon.vocabulary, reply=True)
            return found.location_id if found.status == "resolved" and found.level != "only" else ""
        if missing == "specialty":
            match = _lexicon_match(fold(reply), self.lexicon.specialties)
            if match:
                return match[1]
            # The tenant's own name for a specialty ("orthopedics"); the re-routed question reads it.
            named = _specialties_named(reply, sorted({s for loc in candidates for s in loc.specialties}))
            return named[0].replace("_", " ") if len(named) == 1 else ""
        if missing == "appointment":  # "the MRI one", "the cardiology one", "the one at Northgate"
            for table in (self.lexicon.appointment_types, self.lexicon.specialties):
                match = _lexicon_match(fold(reply), table)
                if match:
                    return match[1]
            found = locations.resolve(reply, candidates, exclude=self.lexicon.vocabulary, reply=True)
            resolved = found.status == "resolved" and found.level != "only" and found.location is not None
            return found.location.display_name if resolved else ""
        return ""

    def _clause_intents(self, decision: scope.ScopeDecision, index: int, clause: str) -> list[tuple[Intent, str]]:
        """The analysis' intents of a clause (lexicon override, else the model; see
        understanding/analysis.py), or the lexicon alone when no model decided."""
        analysis = decision.analysis
        if analysis is None or index >= len(analysis.clauses) or analysis.clauses[index].text != clause:
            return detect_intents(clause, self.lexicon)
        decided = analysis.clauses[index]
        if decided.lexicon_hits:
            return [(Intent(name), entry) for name, entry in decided.lexicon_hits]
        return [(Intent(name), f"model {decided.intent_scores.get(name, 0.0):.3f}") for name in decided.intents]

    def _entities(self, in_scope_text: str, result: Route) -> None:
        """Specialty, appointment type and provider, from in-scope text only (a clinical clause is
        never sent anywhere)."""
        lexicon = self.lexicon
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

    def _tenant_specialty(self, in_scope_text: str, permitted: list[clinics.LocationInfo] | None,
                          result: Route) -> None:
        """The specialty in the tenant's own terms. The lexicon names a specialty by a fixed ID
        ("physiotherapy"); a tenant may list it under another ("physical_therapy", "general_practice"),
        and then its patients were told "Physiotherapy is not offered here" beside an offer of
        "physical therapy". A lexicon specialty no clinic lists becomes the tenant's specialty whose
        name is one of its synonyms; with none named, a tenant specialty whose name the question uses
        ("orthopedics", "sports medicine") is the one asked for."""
        offered = sorted({s for loc in permitted or [] for s in loc.specialties})
        if not offered or result.specialty in offered:
            return
        if result.specialty:
            synonyms = {_stems(word) for word in self.lexicon.specialties.get(result.specialty, ())}
            tenant = next((s for s in offered if _stems(s.replace("_", " ")) in synonyms), None)
            if tenant is not None:
                result.explanations.append(f"specialty {result.specialty}: the tenant's name for it is {tenant}")
                result.lexicon_specialty, result.specialty = result.specialty, tenant
                result.entities = [dataclasses.replace(e, value=tenant) if e.kind == "specialty" else e
                                   for e in result.entities]
            return
        named = _specialties_named(in_scope_text, offered)
        if len(named) == 1:
            result.specialty = named[0]
            result.entities.append(Entity("specialty", named[0].replace("_", " "), named[0], 1.0,
                                          "the tenant's own specialty name"))

    def _tenant_appointment_type(self, permitted: list[clinics.LocationInfo] | None, result: Route) -> None:
        """The appointment type in the tenant's own IDs, as _tenant_specialty: the lexicon's "mri" or
        "new_patient" is the tenant's type whose ID has those words ("mri_scan", "ortho_new_patient");
        several such types (a new-patient visit per specialty) are told apart by the specialty asked
        for (_shares_a_stem_start: "ortho" and "orthopedics", "pt" and "physical_therapy"). Asked for
        the lexicon's ID, the scheduler had "no appointments of that type" at a tenant that has them."""
        offered = sorted({t for loc in permitted or [] for t in loc.appointment_types})
        lexicon_type = result.appointment_type
        if not lexicon_type or not offered or lexicon_type in offered:
            return
        forms = {_stems(word) for word in (lexicon_type.replace("_", " "), *self.lexicon.appointment_types.get(
            lexicon_type, ()))}
        matching = [t for t in offered if any(f" {form} " in f" {_stems(t.replace('_', ' '))} " for form in forms)]
        if len(matching) > 1 and result.specialty:
            matching = [t for t in matching if _shares_a_stem_start(t, result.specialty)]
        if len(matching) != 1:
            return
        result.explanations.append(f"appointment type {lexicon_type}: the tenant's name for it is {matching[0]}")
        result.appointment_type = matching[0]
        result.entities = [dataclasses.replace(e, value=matching[0]) if e.kind == "appointment_type" else e
                           for e in result.entities]

    def _locate(self, in_scope_text: str, permitted: list[clinics.LocationInfo] | None, hint: str,
                result: Route) -> tuple[clinics.LocationInfo, ...]:
        """The clinic (understanding/locations.py: exact beats canonical beats word beats fuzzy; the
        request's location_id settles an ambiguity among its candidates). Returns the candidates
        when the clinic is still ambiguous: every clinic-dependent part then asks the same question."""
        if permitted is None:
            if hint:
                result.explanations.append("locations unavailable: the request's location hint is passed through "
                                           "unverified")
            return ()
        result.clinic_choices = tuple(permitted)
        found = locations.resolve(in_scope_text, permitted, location_id=hint, exclude=self.lexicon.vocabulary)
        if found.status == "resolved":
            result.location = found.location
            result.entities.append(Entity("location", found.surface, found.location.location_id,
                                          1.0 if found.level != "fuzzy" else 0.9, found.explanation))
            return ()
        if found.status == "ambiguous":
            result.explanations.append(f"location ambiguous: {found.explanation} "
                                       f"({', '.join(c.location_id for c in found.candidates)})")
            return found.candidates
        offering = [loc for loc in permitted if result.specialty and result.specialty in loc.specialties]
        if len(offering) == 1:
            result.location = offering[0]
            result.entities.append(Entity("location", "", offering[0].location_id, 1.0,
                                          f"the only permitted location offering {result.specialty}"))
        return ()

    def _parts(self, found: _Intents, decision: scope.ScopeDecision, result: Route,
               date_range: dates.DateRange | None, as_of: dt.datetime,
               permitted: list[clinics.LocationInfo] | None, ambiguous: tuple[clinics.LocationInfo, ...]) -> None:
        """Parts in the order the question asked them; the clinical boundary where it was asked."""
        order = sorted(found.by_intent, key=lambda i: (found.first_seen[i], INTENT_ORDER.index(i)))
        plans: list[tuple[int, PartPlan]] = []
        context = found.context
        for intent in order:
            clauses = found.by_intent[intent]
            if intent != AVAILABILITY and context and found.clinical_index is None and set(context) - set(clauses):
                # "My child is ill. Do I pay the fee if I cancel today?": a clause with no intent of
                # its own is context of the policy question (its search and its answer), in order.
                clauses = [c for c in decision.in_scope_clauses if c in context or c in clauses]
                result.explanations.append(f"{intent}: {len(context)} clause(s) without an intent are its context")
            plan = PartPlan("", intent, PART_KIND[intent], clauses)
            plan.query = _query(plan.clauses, result)
            if intent == AVAILABILITY:
                _plan_slots(plan, result, date_range, as_of, self.horizon_days, permitted, ambiguous)
            else:
                plan.search_intents = _search_intents(intent, found.by_intent, result.explanations)
                if ambiguous:
                    # No part answers for several clinics: the policy part asks what the slot part asks.
                    plan.clarification = Clarification("which_clinic_of", "location", result.specialty,
                                                       options=tuple(c.display_name for c in ambiguous))
                    plan.missing.append("location")
            plans.append((found.first_seen[intent], plan))
            result.intents.append(intent)
        if found.clinical_index is not None:
            plans.append((found.clinical_index,
                          PartPlan("", CLINICAL, PART_KIND[CLINICAL], [], boundary=decision.boundary)))
            result.intents.append(CLINICAL)
        plans.sort(key=lambda item: item[0])
        if _names_nothing_to_book(plans, found, result):
            plans.append((len(decision.clauses), _policy_reading(decision.in_scope_clauses, result)))
        for number, (_, plan) in enumerate(plans, start=1):
            plan.part_id = f"p{number}"
            result.parts.append(plan)


@dataclasses.dataclass
class _Intents:
    by_intent: dict[Intent, list[str]] = dataclasses.field(default_factory=dict)
    first_seen: dict[Intent, int] = dataclasses.field(default_factory=dict)
    clinical_index: int | None = None
    context: list[str] = dataclasses.field(default_factory=list)  # in-scope clauses that match no intent


# A statement that asks for something: "I need to cancel", "I'd like to book", "please move it".
_REQUEST = re.compile(r"\b(need|needs|want|wants|wanna|would like|'d like|id like|like to|please|pls|plz|have to|"
                      r"has to|got to|gotta|must|looking to|hoping to|can'?t make|cannot make|can not make|"
                      r"cancel|reschedule|book|move|change|må|trenger|vil|ønsker)\b")


def _a_sentence_of_its_own(decision: scope.ScopeDecision, index: int) -> bool:
    """The clause ends its sentence (a full stop, a question or exclamation mark, or the end of the
    question after it), so it is not the first half of a question ("Any family medicine slots
    tomorrow, and how early should I get there?"). Unknown without the analysis' spans."""
    analysis = decision.analysis
    if analysis is None or index >= len(analysis.clauses):
        return False
    clause = analysis.clauses[index]
    if clause.text != decision.clauses[index].clause:  # the analysis read other clauses
        return False
    following = analysis.clauses[index + 1].start if index + 1 < len(analysis.clauses) else len(analysis.question)
    return index + 1 == len(analysis.clauses) or bool(re.search(r"[.!?]", analysis.question[clause.start:following]))


def _courtesy_only(clause: str) -> bool:
    """A clause with words, all of them greeting, thanks or softeners (COURTESY)."""
    found = textnorm.tokens(clause)
    return bool(found) and all(w in COURTESY or w in textnorm.STOPWORDS for w in found)


def _names_nothing_to_book(plans: list[tuple[int, PartPlan]], found: _Intents, result: Route) -> bool:
    """A question whose only part is a slot request that names no doctor and no specialty the caller's
    clinics offer: "Do I need to book for the Saturday doctor or can I just turn up?", "had bloods
    taken monday, when should I expect to know", "does my daughter need a letter from her gp or can i
    just book her in?" (a GP where none is offered) read as booking requests to a lexicon ("book") or
    the intent model, but they ask what a policy says."""
    if len(plans) != 1 or found.clinical_index is not None or result.provider:
        return False
    plan = plans[0][1]
    return plan.intent == AVAILABILITY and plan.clarification is not None and \
        plan.clarification.kind in ("which_specialty", "specialty_not_offered")


def _policy_reading(clauses: list[str], result: Route) -> PartPlan:
    """The policy part of a slot request that names nothing to book (see _names_nothing_to_book):
    it searches every policy intent, only a lead the generator is confident in may answer
    (GenerateRequest.confident_only), and it is shown only when it answers; the slot part still asks
    what to book."""
    plan = PartPlan("", OTHER, PART_KIND[OTHER], list(clauses), search_intents=POLICY_INTENTS, only_if_answered=True)
    plan.query = _query(plan.clauses, result)
    result.explanations.append("a slot request that names nothing to book may ask a policy question: a policy part "
                               f"searches the policy intents ({', '.join(POLICY_INTENTS)}) and is shown only if "
                               "it answers")
    return plan


def _search_intents(intent: Intent, by_intent: dict[Intent, list[str]], explanations: list[str]) -> tuple[Intent, ...]:
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
    """The search query for a policy part: its clauses without a greeting, a lay description of a
    service read as the service's name (citetrace.lay), plus the entities that narrow the rule."""
    text = lay.clinic_reading(lay.without_greeting(" ".join(clauses)))
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
    plan.clarification = _clarification(result, permitted, ambiguous)
    if plan.clarification is not None:
        plan.missing.append(plan.clarification.missing)


def _clarification(result: Route, permitted: list[clinics.LocationInfo] | None,
                   ambiguous: tuple[clinics.LocationInfo, ...]) -> Clarification | None:
    """The one entity a slot request still needs, if any."""
    offered = tuple(sorted({s for loc in permitted or [] for s in loc.specialties}))
    specialty = result.specialty
    if not specialty:
        return Clarification("which_specialty", "specialty", options=offered)
    if offered and specialty not in offered:
        result.explanations.append(f"specialty {specialty}: offered by none of the caller's locations")
        return Clarification("specialty_not_offered", "specialty", specialty, options=offered)
    if permitted is None:
        return None
    loc = result.location
    if loc is not None and loc.specialties and specialty not in loc.specialties:
        others = tuple(other.display_name for other in permitted if specialty in other.specialties)
        result.explanations.append(f"location {loc.location_id}: does not offer {specialty}")
        return Clarification("location_lacks_specialty", "location", specialty, loc.display_name, others)
    if loc is None:
        if ambiguous:
            return Clarification("which_clinic_of", "location", specialty,
                                 options=tuple(c.display_name for c in ambiguous))
        offering = [other for other in permitted if specialty in other.specialties] or permitted
        if len(offering) > 1:
            return Clarification("which_clinic_for", "location", specialty,
                                 options=tuple(other.display_name for other in offering))
    return None
