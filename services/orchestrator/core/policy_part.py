"""A policy part (DESIGN.md §4 steps 4-7): search the tenant's approved documents within every
scope filter, check the top hits for two current documents that disagree, answer from the
passages through the generate-and-validate loop, and settle the outcome: answered, partially
answered, a conflict shown as such, or an honest abstention (the wording file's fixed message)."""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from typing import NamedTuple

from citetrace import textnorm
from citetrace.identity import pinned_link
from citetrace.idf import shipped as shipped_idf
from citetrace.kit.errors import DomainError
from citetrace.kit.metrics import PASSAGES_OFFERED

from services.orchestrator.core import conflicts
from services.orchestrator.core.clinics import GENERIC_WORDS, LocationInfo
from services.orchestrator.core.grounding import (
    LOCAL_PREFIX,
    Attempt,
    Grounded,
    GroundedAnswerer,
    failure_reasons,
    only_local,
    prefer_local,
    without_overridden,
)
from services.orchestrator.core.model import (
    AnsweredClaim,
    Citation,
    Claim,
    ConflictingSource,
    Hit,
    LabelledPassage,
    NextAction,
    Outcome,
    PartKind,
    PartResult,
    SearchQuery,
    SearchResult,
    Support,
    VersionInfo,
    VersionStatus,
    WithheldClaim,
)
from services.orchestrator.core.parts import PartContext, unavailable
from services.orchestrator.core.ports import Retrieval
from services.orchestrator.core.router import POLICY_INTENTS, Lexicon
from services.orchestrator.core.routing import Clarification, PartPlan, Route, clarification_text

log = logging.getLogger("citetrace.orchestrator")

# What a caller can do when a policy part abstains: read the applicable policy where there is one.
ABSTAIN_ACTION = {PartKind.CANCELLATION_RESCHEDULING: NextAction.VIEW_POLICY}
CANCELLATION_POLICY = "cancellation_policy"


@dataclasses.dataclass(frozen=True)
class PolicySettings:
    search_k: int = 8
    conflict_top_n: int = 4
    # The relevance decision (issue 15 point 2), used when retrieval reports a relevance model:
    # "abstain": a part none of whose hits answers the question abstains (ABSTAINED_NO_EVIDENCE);
    # "off": hits are offered whatever their relevance. relevance_offer: "relevant" offers only the
    # hits judged relevant (rank order), "all" every hit.
    relevance_gate: str = "abstain"
    relevance_offer: str = "relevant"
    # A question with no clinic named, answered from tenant-wide passages, is also asked of this
    # many of the clinics' own passages (rank order) to find a clinic whose rule differs.
    clinic_rules_asked: int = 3
    # No clinic named and the caller has several: the search goes this deep, so that a clinic's own
    # rule ranked below the tenant-wide passages (fewer of the question's words) is still set aside
    # and checked against the answer; only search_k tenant-wide passages are offered.
    clinic_rules_search_k: int = 16


@dataclasses.dataclass(frozen=True)
class ClinicRules:
    """The hits scoped to a location, set aside when no clinic was named (with every hit's scope
    from the store of record): never offered, but an answer is checked against them."""

    hits: tuple[Hit, ...] = ()
    scopes: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # Scoped hits ranked below search_k (the deeper search): only the quantity check reads them, a
    # precise comparison; the reading of a clinic's passage in words stays with the top ranks.
    deeper: tuple[Hit, ...] = ()


def relevance_gate(found: SearchResult, hits: tuple[Hit, ...], offer: str) -> tuple[tuple[Hit, ...], str]:
    """The hits to offer and, when none answers the question, why not (the part abstains). Only
    when retrieval judged relevance (its settings name the model); the scores stay on the hits of the
    retrieved set in the trace."""
    settings = found.settings
    if settings is None or not settings.relevance_model or not hits:
        return hits, ""
    best = max(hits, key=lambda h: h.relevance)
    # The best hit this part may use needs only the lower bar (retrieval's own best may have been
    # narrowed away here, e.g. another clinic's passage).
    relevant = tuple(h for h in hits if h.relevant or (h is best and h.relevance >= settings.relevance_best_threshold))
    if not relevant:
        return (), (f"relevance: no passage found answers the question (best {best.passage.identity.passage_id} "
                    f"{best.relevance:.3f} < {settings.relevance_best_threshold:.3f}; any other relevant at >= "
                    f"{settings.relevance_threshold:.3f}, {settings.relevance_model})")
    return (relevant if offer == "relevant" else hits), ""


# GenerateRequest.place_names takes at most this many (the caller's spelling first).
MAX_PLACE_NAMES = 100


class GeneratorQuestion(NamedTuple):
    text: str
    # The clinic the route resolved, as the text names it and as the tenant does (its name and
    # aliases): GenerateRequest.place_names, where and not what is asked.
    place_names: tuple[str, ...] = ()
    # The names of the caller's other clinics, when one was resolved: GenerateRequest.other_place_names.
    other_place_names: tuple[str, ...] = ()


def _asked_qualifiers(route: Route) -> frozenset[str]:
    """The specialty and appointment type the question asked for, in the tenant's and the lexicon's IDs."""
    return frozenset(v for v in (route.specialty, route.lexicon_specialty, route.appointment_type) if v)


def question_for_generation(plan: PartPlan, route: Route, offered: tuple[LabelledPassage, ...]) -> GeneratorQuestion:
    """The part's clauses as the generator reads them: without the name of the clinic the route
    resolved when no offered passage names that clinic. Retrieval kept only that clinic's passages
    and the tenant-wide ones, so then every passage offered applies there and the name tells none
    apart; left in, it makes the generator refuse the tenant-wide rules (they name no clinic) as
    evidence about somewhere else. When a passage names the clinic (an hours table with a row per
    clinic) the name picks the answer and stays. Every name of the resolved clinic is handed over
    as a place name: a sentence that only names the clinic ("Our Riverbend clinic is on the first
    floor") does not answer what is asked about it, and a passage that names it, by any of its
    names, is that clinic's own. A place the route did not resolve always stays, as no place name:
    the generator must refuse to answer for it."""
    question = " ".join(plan.clauses)
    if route.location is None:
        return GeneratorQuestion(question)
    written = set()
    for lp in offered:
        written.update(_words(f"{lp.passage.title} {lp.passage.heading_context} {lp.passage.text}"))
    names = []
    for entity in route.entities:
        words = _words(entity.surface)
        if entity.kind != "location" or entity.value != route.location.location_id or not words:
            continue
        if set(words) <= written:
            names.append(entity.surface)
            continue
        name = re.compile(r"\b" + r"\W+".join(re.escape(w) for w in words) + r"\b", re.IGNORECASE)
        question = " ".join(name.sub(" ", question).split())
    known = (route.location.name, route.location.clinic_name, *route.location.aliases)
    place_names = tuple(dict.fromkeys(n for n in (*names, *known) if n.strip()))
    return GeneratorQuestion(question, place_names[:MAX_PLACE_NAMES], _other_place_names(route, place_names))


def _other_place_names(route: Route, place_names: tuple[str, ...]) -> tuple[str, ...]:
    """The names and aliases of the caller's clinics other than the resolved one, without a name the
    resolved clinic also goes by."""
    own = {n.casefold() for n in place_names}
    others = (n for c in route.clinic_choices if route.location and c.location_id != route.location.location_id
              for n in (c.name, c.clinic_name, *c.aliases) if n.strip() and n.casefold() not in own)
    return tuple(dict.fromkeys(others))[:MAX_PLACE_NAMES]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


# A word that names a specific thing ("allergy" 6.4, "retina" 6.0), not how a question is asked
# ("early" 2.3, "bring" 3.8) or what every rule is about: the IDF floor of the generator's asked
# thing (services/generation/relevance.py, THING_IDF_FLOOR), chosen there.
SPECIFIC_IDF = 5.0
# Words every policy sentence may use, which say nothing of what its rule is about.
_UNSPECIFIC_STEMS = frozenset(textnorm.stem(w) for w in GENERIC_WORDS | {"appointment", "patient"})


def _shown_texts(best: Attempt) -> list[str]:
    return [c.text for c in best.generated.claims if c.claim_id in best.shown]


def overridden_claims(grounded: Grounded, intent, qualifiers_of) -> frozenset[str]:
    """The shown general claims a location's own shown claim overrides: both state the asked rule's
    quantity of one kind (conflicts.rule_quantities: a notice period, a fee, a lead time) with no
    value in common ("24 timer" tenant-wide, "48 timer" at Holmvik), for the same thing
    (`qualifiers_of`: the specialties and appointment types a claim names; an MRI rule is no general
    rule's override). At that location its own rule holds (DESIGN.md §3: a location-scoped rule
    overrides a tenant-wide one); shown together they contradict. Each claim is read with its cited
    passages' title and headings."""
    stated = claim_quantities(grounded, intent)
    local = [(qualifiers_of(claim_id), quantities) for claim_id, quantities in stated.items()
             if claim_id.startswith(LOCAL_PREFIX)]
    return frozenset(claim_id for claim_id, general in stated.items()
                     if not claim_id.startswith(LOCAL_PREFIX)
                     and any(about == qualifiers_of(claim_id) and kind in own and values and own[kind]
                             and not values & own[kind]
                             for about, own in local for kind, values in general.items()))


def claim_quantities(grounded: Grounded, intent) -> dict[str, dict[str, frozenset[str]]]:
    """claim ID -> the asked rule's quantities each shown factual claim states (conflicts.rule_quantities),
    read with its cited passages' title and headings."""
    best = grounded.best
    if best is None:
        return {}
    return {claim.claim_id: conflicts.rule_quantities(claim.text, intent, cited_context(best, claim.claim_id))
            for claim in best.generated.claims
            if claim.claim_id in best.shown and claim.factual and claim.claim_id in best.by_claim}


def cited_context(best: Attempt, claim_id: str) -> str:
    """The title and headings of the passages a claim cites (what its rule is about and for)."""
    passages = {lp.passage.identity.passage_id: lp.passage for lp in best.given}
    return " ".join(f"{passages[c.passage_id].title} > {passages[c.passage_id].heading_context}"
                    for c in best.by_claim[claim_id].citations if c.passage_id in passages)


def _list_items(text: str) -> list[str]:
    """The items of a list the generator gave as one claim (its lead-in, a colon, items joined by "; "),
    each with the lead-in; any other text whole."""
    lead, colon, rest = text.partition(": ")
    if not colon or "; " not in rest:
        return [text]
    return [f"{lead}: {item}" for item in rest.split("; ")]


def _content_stems(text: str) -> frozenset[str]:
    """The stems of a text's content words, digits and amounts aside (a number is a quantity, the
    quantity check's business)."""
    words = [w for w in textnorm.content_words(text) if w.isalpha() and len(w) > 2]
    # "cashless" shares its subject with "we take cash"
    words += [t for t in map(textnorm.thing_absent, words) if t]
    return frozenset(textnorm.stem(w) for w in words) - _UNSPECIFIC_STEMS


def _offered_at(known: dict[str, LocationInfo], location_ids: tuple[str, ...]) -> frozenset[str]:
    """Every specialty the locations offer (`known`: the caller's clinics by ID; empty when any of
    them is not among those, or states none)."""
    if not location_ids or any(loc not in known or not known[loc].specialties for loc in location_ids):
        return frozenset()
    return frozenset(s for loc in location_ids for s in known[loc].specialties)


def citation_for(label: str, hit: Hit) -> Citation:
    """A citation of a whole retrieved passage (the conflict view: no validator verdict to take)."""
    ident = hit.passage.identity
    return Citation(label, ident.passage_id, ident.document_id, ident.version_id, ident.start, ident.end,
                    ident.content_sha256, ident.source_anchor, ident.source_class,
                    pinned_link(ident.document_id, ident.version_id, ident.start, ident.end, page=ident.page_start),
                    hit.passage.title, ident.page_start, ident.page_end, ident.page_label_start,
                    ident.page_label_end)


def policy_link(hits: tuple[Hit, ...]) -> str:
    """The applicable policy, pinned to its version: the best-ranked cancellation policy."""
    policy = next((h for h in hits if h.passage.identity.source_class == CANCELLATION_POLICY), hits[0])
    return pinned_link(policy.passage.identity.document_id, policy.passage.identity.version_id)


class PolicyPart:
    def __init__(self, retrieval: Retrieval, answerer: GroundedAnswerer, lexicon: Lexicon,
                 settings: PolicySettings | None = None) -> None:
        self.retrieval = retrieval
        self.answerer = answerer
        self.lexicon = lexicon
        self.settings = settings or PolicySettings()

    @functools.cached_property
    def _qualifier_vocabulary(self) -> dict[str, tuple[str, ...]]:
        """Specialties and appointment types: what a rule can be for (the lexicon is fixed)."""
        return {**self.lexicon.specialties, **self.lexicon.appointment_types}

    def answer(self, plan: PartPlan, ctx: PartContext, out: PartResult) -> PartResult:
        route, request = ctx.route, ctx.request
        if plan.clarification is not None:  # the clinic is ambiguous: the same question as every part
            out.clarification_question = clarification_text(plan.clarification, ctx.wording)
            return out.settle(Outcome.NEEDS_CLARIFICATION, out.clarification_question, NextAction.ANSWER_CLARIFICATION)
        locations: tuple[str, ...] = ()
        if route.location is not None:
            locations = (route.location.location_id,)
        elif request.location_id and not route.locations_known:
            locations = (request.location_id,)
        any_clinic = route.location is None and len(route.clinic_choices) > 1
        depth = max(self.settings.search_k, self.settings.clinic_rules_search_k) if any_clinic else self.settings.search_k
        query = SearchQuery(plan.query, tuple(plan.search_intents or (plan.intent,)),
                            depth, request.as_of, locations, request.locale)
        try:
            found = ctx.calls("retrieval", "retrieval.search", self.retrieval.search, query)
        except DomainError as err:
            return unavailable(out, ctx, "retrieval", err)
        out.retrieval = found
        hits = found.hits
        aside = ClinicRules()
        if not hits:  # never relax a filter: no eligible evidence means abstain
            return self._abstain(out, plan, ctx, ())
        if any_clinic:
            narrowed = self._tenant_wide(plan, ctx, found, out)
            if isinstance(narrowed, PartResult):
                return narrowed
            hits, aside = narrowed
            if not hits:
                return self._abstain(out, plan, ctx, ())
            if conflicts.asks_the_rule(" ".join(plan.clauses), plan.intent):  # the only reader of them
                aside = self._with_clinic_pages_of_other_intents(ctx, query, aside)
        if self.settings.relevance_gate == "abstain":
            hits, why = relevance_gate(found, hits, self.settings.relevance_offer)
            if not hits:
                out.error = why
                return self._abstain(out, plan, ctx, ())
        conflict = self._conflict(plan, ctx, found, hits, out)
        if conflict is not None:
            sources = tuple(ConflictingSource(citation_for(label, hit), hit.passage.text)
                            for label, hit in zip(("S1", "S2"), conflict, strict=True))
            out.conflicts = sources
            out.citations = tuple(s.citation for s in sources)
            return out.settle(Outcome.CONFLICT, ctx.wording.say("conflict"), NextAction.ROUTE_TO_POLICY_OWNER)
        # Every hit is offered in rank order; generation keeps the prefix within its context budget.
        offered = tuple(LabelledPassage(f"S{i}", hit.passage) for i, hit in enumerate(hits, start=1))
        asked = question_for_generation(plan, ctx.route, offered)
        grounded = self.answerer.answer(asked.text, plan.intent, offered, request.as_of, ctx.calls,
                                        place_names=asked.place_names, other_place_names=asked.other_place_names,
                                        confident_only=plan.only_if_answered)
        if route.change is not None and route.location is not None and grounded.unavailable is None:
            grounded = self._location_terms(plan, ctx, found, offered, grounded)
        elif route.location is not None and grounded.unavailable is None:
            grounded = self._own_rule_alone(plan, ctx, found, offered, grounded)
        out.generation = grounded.generation
        out.claim_attempts = grounded.claim_attempts
        out.source_policy_version = grounded.source_policy_version
        if grounded.generation is not None:
            PASSAGES_OFFERED.observe(grounded.generation.passages_offered)
        if grounded.unavailable is not None:
            return unavailable(out, ctx, *grounded.unavailable)
        if grounded.best is None:
            return self._abstain(out, plan, ctx, hits)
        overridden = self._clinic_dependent(plan, ctx, grounded, aside)
        if overridden:
            return self._which_clinic(out, ctx, tuple(c.display_name for c in ctx.route.clinic_choices),
                                      f"location: the answer depends on the clinic and none was named: "
                                      f"{overridden}")
        return self._settle(out, plan, ctx, hits, grounded)

    def _location_terms(self, plan: PartPlan, ctx: PartContext, found: SearchResult,
                        offered: tuple[LabelledPassage, ...], grounded: Grounded) -> Grounded:
        """A change at a location: that location's own rules come first (a location-scoped rule
        overrides a tenant-wide one there, conflicts.py). Offered passages scoped to the location
        (scopes from the store of record) that no shown claim cites are answered from on their own,
        through the same generate-and-validate loop, and their claims lead the part; the
        generator's few claims of the whole offering may have left the location's rule out."""
        best = grounded.best
        # Every offered passage, not only the prefix the generator's context budget kept: a location's
        # own rule ranked below tenant-wide ones (Holmvik's "48 timer" seventh of eight) is still its rule.
        cited = {c.passage_id for cid in (best.shown if best else ()) for c in best.by_claim[cid].citations}
        candidates = [lp for lp in offered if lp.passage.identity.passage_id not in cited]
        if not candidates:
            return grounded
        local_ids = self._scoped_to_the_location(ctx, found, tuple(candidates), "location terms")
        local = tuple(lp for lp in candidates if lp.passage.identity.passage_id in local_ids)
        if not local:
            return grounded
        asked = question_for_generation(plan, ctx.route, local)
        own = self.answerer.answer(asked.text, plan.intent, local, ctx.request.as_of, ctx.calls,
                                   place_names=asked.place_names, other_place_names=asked.other_place_names,
                                   confident_only=plan.only_if_answered)
        merged = prefer_local(own, grounded)
        return without_overridden(merged, overridden_claims(merged, plan.intent, self._claim_qualifiers(merged)))

    def _claim_qualifiers(self, grounded: Grounded):
        """claim ID -> the specialties and appointment types its text and cited passages' title and
        headings name."""
        best = grounded.best
        texts = {c.claim_id: c.text for c in best.generated.claims} if best else {}

        def of(claim_id: str) -> frozenset[str]:
            return conflicts.qualifiers(f"{cited_context(best, claim_id)} {texts[claim_id]}",
                                        self._qualifier_vocabulary, self.lexicon.type_implies_specialty)
        return of

    def _versions_of(self, ctx: PartContext, found: SearchResult, passage_ids: list[str]) -> list[VersionInfo]:
        """The versions (status, location scope) of these hits of `found`, by the store of record:
        as the search admitted them (SearchResponse.versions), or by a GetPassages round trip when
        the search did not say (a retrieval older than that field). Raises DomainError."""
        version_of = {h.passage.identity.passage_id: h.passage.identity.version_id for h in found.hits}
        known = {v.version_id: v for v in found.versions}
        wanted = {version_of.get(pid, "") for pid in passage_ids}
        if wanted <= known.keys():
            return [known[vid] for vid in sorted(wanted)]
        return ctx.calls("retrieval", "retrieval.get_passages", self.retrieval.versions_of, passage_ids)

    def _scoped_to_the_location(self, ctx: PartContext, found: SearchResult, passages: tuple[LabelledPassage, ...],
                                why: str) -> set[str]:
        """The passages (IDs) of approved versions scoped to the route's location, by the store of
        record; none when the scopes cannot be loaded (the part then stands as answered)."""
        try:
            versions = self._versions_of(ctx, found, [lp.passage.identity.passage_id for lp in passages])
        except DomainError as err:
            log.warning("%s: scopes could not be loaded (%s); the part stands as answered", why, err.reason)
            return set()
        location_id = ctx.route.location.location_id
        scoped = {v.version_id for v in versions
                  if v.status == VersionStatus.APPROVED and location_id in v.location_scope}
        return {lp.passage.identity.passage_id for lp in passages if lp.passage.identity.version_id in scoped}

    def _own_rule_alone(self, plan: PartPlan, ctx: PartContext, found: SearchResult,
                        offered: tuple[LabelledPassage, ...], grounded: Grounded) -> Grounded:
        """A question at a named clinic: the clinic's own rule overrides a tenant-wide one there
        (conflicts.py), so an answer that shows a tenant-wide-only claim while the clinic's own
        passages were offered is asked again of those passages alone, through the same
        generate-and-validate loop. Two shapes of answer:
        - mixed: a claim only the clinic's own passage states beside one only tenant-wide passages
          state; shown together they can contradict ("Patients can park free of charge ..." then
          "Harbour Exchange has no parking for clinic patients");
        - unheard: no shown claim cites the clinic's own passages at all, though they were found
          ("check in 10 minutes before" for every clinic, chosen over the clinic's "Arrive 30 minutes
          before", which the generator left out).
        When the pass over the clinic's own passages shows a claim about what was asked (not about a
        specialty or appointment type the question did not ask), it is the answer, and the other
        stays in the evidence unshown; for an unheard answer, unless the tenant-wide claim is the
        more precise rule for what was asked (_more_precise: the generator did not choose the
        clinic's passages, so their rule may be the one for every other appointment). A claim both
        kinds of passage state word for word agrees with the clinic and makes nothing mixed. Scopes
        come from the store of record."""
        best = grounded.best
        if best is None or not best.factual_shown:
            return grounded
        local_ids = self._scoped_to_the_location(ctx, found, offered, "own rule")
        shown = self._shown_factual(best)
        cites = [{c.passage_id for c in best.by_claim[claim.claim_id].citations} for claim in shown]
        # A claim that names the clinic is its own, whatever page states it ("At the Oakfield clinic you can
        # use the Oakfield Shopping Centre car park" on the tenant-wide visiting page).
        the_clinics = [bool(ids & local_ids) or ctx.route.location.named_in(claim.text)
                       for claim, ids in zip(shown, cites, strict=True)]
        general_only = not all(the_clinics)
        mixed = general_only and any(ids <= local_ids for ids in cites)
        unheard = bool(local_ids) and not any(the_clinics)
        if not (mixed or unheard):
            return grounded
        local = tuple(lp for lp in offered if lp.passage.identity.passage_id in local_ids)
        asked = question_for_generation(plan, ctx.route, local)
        own = self._local_answer(plan, ctx, asked.text, local, asked)
        tenant_wide = [claim for claim, ids in zip(shown, cites, strict=True) if not ids & local_ids]
        if own is None:
            # The clinic's counterpart of what the answer states: the tenant-wide claims shown,
            # asked of the clinic's own passages. The claims answer the question; the clinic's
            # version of their rule answers it there ("Everyone under 19 must be brought by a parent
            # or legal guardian" for "Children under 16 must be accompanied by a parent, ... or
            # another adult the parent has named in a signed note"), however differently the
            # question is worded from the clinic's page.
            general = " ".join(claim.text for claim in tenant_wide)
            own = self._local_answer(plan, ctx, general, local, asked)
        if own is None or (unheard and self._more_precise(plan, grounded, own, local, tenant_wide)):
            return grounded
        return only_local(own, grounded)

    def _more_precise(self, plan: PartPlan, general: Grounded, local: Grounded,
                      local_passages: tuple[LabelledPassage, ...], tenant_wide: list[Claim]) -> bool:
        """A tenant-wide claim shown is the rule for what was asked, which the clinic's answer does
        not replace ("where this page says nothing, the group-wide rules apply"):
        - it is for a specialty or appointment type (read from the claim and its passages' title and
          headings) that no claim of the clinic's answer is for; or
        - its passage's title or headings name a specific thing (a word of SPECIFIC_IDF or more, not a
          word of how a question is asked: "early", "bring") that the question names too and none of
          the clinic's own passages mention ("Arrival for allergy skin testing" for "how many minutes
          before allergy skin testing should I arrive?", against the clinic's "For every other
          appointment, arrive 10 minutes early", on a page that says nothing of allergy)."""
        general_of, local_of = self._claim_qualifiers(general), self._claim_qualifiers(local)
        own = {q for claim in self._shown_factual(local.best) for q in local_of(claim.claim_id)}
        if any(general_of(claim.claim_id) - own for claim in tenant_wide):
            return True
        asked = _content_stems(" ".join(plan.clauses))
        subject = _content_stems(" ".join(cited_context(general.best, claim.claim_id) for claim in tenant_wide))
        mentioned = _content_stems(" ".join(f"{lp.passage.title} {lp.passage.heading_context} {lp.passage.text}"
                                            for lp in local_passages))
        idf = shipped_idf()
        return any(idf.idf(term) >= SPECIFIC_IDF for term in (asked & subject) - mentioned)

    @staticmethod
    def _shown_factual(best: Attempt) -> list[Claim]:
        return [claim for claim in best.generated.claims if claim.claim_id in best.shown and claim.factual]

    def _local_answer(self, plan: PartPlan, ctx: PartContext, question: str, local: tuple[LabelledPassage, ...],
                      asked: GeneratorQuestion) -> Grounded | None:
        """The answer from a clinic's own passages alone (the same generate-and-validate loop), or
        None when it shows no claim about what was asked."""
        own = self.answerer.answer(question, plan.intent, local, ctx.request.as_of, ctx.calls,
                                   place_names=asked.place_names, other_place_names=asked.other_place_names,
                                   confident_only=plan.only_if_answered)
        if own.best is None or not any(self._about_what_was_asked(ctx, own.best, claim)
                                       for claim in own.best.generated.claims):
            return None
        return own

    def _about_what_was_asked(self, ctx: PartContext, best: Attempt, claim) -> bool:
        """A shown factual claim none of whose passages is about a specialty or appointment type
        the question did not ask (read from the claim and the passages' title and headings)."""
        if claim.claim_id not in best.shown or not claim.factual:
            return False
        by_label = {lp.label: lp.passage for lp in best.given}
        passages = [by_label[label] for label in claim.evidence_labels if label in by_label]
        return not passages or not all(self._unasked_qualifiers(ctx, p, claim.text) for p in passages)

    def _tenant_wide(self, plan: PartPlan, ctx: PartContext, found: SearchResult,
                     out: PartResult) -> tuple[tuple[Hit, ...], ClinicRules] | PartResult:
        """No clinic resolved and the caller has several: a passage scoped to a location is never
        offered (it could be another clinic's rule); the tenant-wide passages answer, and the
        scoped ones are kept aside (ClinicRules) to check that answer against. When every hit is
        clinic-specific, the question depends on the clinic: ask which one. Scopes come from the
        store of record. `hits` may go deeper than search_k (clinic_rules_search_k): only the top
        search_k are offered or decide "every hit is scoped"; scoped hits below are kept aside for
        the quantity check (ClinicRules.deeper)."""
        hits = found.hits
        try:
            versions = self._versions_of(ctx, found, [h.passage.identity.passage_id for h in hits])
        except DomainError as err:
            return unavailable(out, ctx, "retrieval", err)
        scopes = {v.version_id: v.location_scope for v in versions}
        hits, below = hits[: self.settings.search_k], hits[self.settings.search_k:]
        deeper = tuple(h for h in below if scopes.get(h.passage.identity.version_id, ("?",)))
        scoped = [h for h in hits if scopes.get(h.passage.identity.version_id, ("?",))]
        if scoped and len(scoped) == len(hits):
            named = {loc for h in scoped for loc in scopes.get(h.passage.identity.version_id, ())}
            options = tuple(c.display_name for c in ctx.route.clinic_choices if c.location_id in named) or \
                tuple(c.display_name for c in ctx.route.clinic_choices)
            return self._which_clinic(out, ctx, options,
                                      f"location: every passage found is scoped ({', '.join(sorted(named))}) "
                                      "and no clinic was named")
        return tuple(h for h in hits if h not in scoped), ClinicRules(tuple(scoped), scopes, deeper)

    def _with_clinic_pages_of_other_intents(self, ctx: PartContext, query: SearchQuery,
                                            aside: ClinicRules) -> ClinicRules:
        """The clinics' passages filed under the other policy intents, added to the ones set aside. A
        clinic's page is often filed under one intent and states its other rules too (Morven's hospital
        ward, filed under arrival, says with how much notice and what fee to cancel there): the search
        for this part's intent never finds them, and the group's rule was shown for every clinic. Set
        aside with the deeper hits, never offered (they are no authority for this intent): only the
        quantity check reads them, a precise comparison of the quantity asked (read in words, an
        arrival page's sentences "answered" cancellation questions and asked which clinic needlessly).
        Searched only when the question asks a rule quantity (the check has nothing to compare
        otherwise: a search more per part cost 3 ms of CPU per ask in make bench). A failed search
        leaves the check as it was (it adds a reason to ask, never an answer)."""
        others = tuple(i for i in POLICY_INTENTS if i not in query.intents)
        if not others:
            return aside
        try:
            found = ctx.calls("retrieval", "retrieval.search", self.retrieval.search,
                              dataclasses.replace(query, intents=others, k=self.settings.search_k))
            versions = self._versions_of(ctx, found, [h.passage.identity.passage_id for h in found.hits])
        except DomainError:
            return aside
        scopes = {v.version_id: v.location_scope for v in versions}
        known = {h.passage.identity.passage_id for h in (*aside.hits, *aside.deeper)}
        scoped = tuple(h for h in found.hits if scopes.get(h.passage.identity.version_id)
                       and h.passage.identity.passage_id not in known)
        if not scoped:
            return aside
        return ClinicRules(aside.hits, {**aside.scopes, **scopes}, aside.deeper + scoped)

    def _clinic_dependent(self, plan: PartPlan, ctx: PartContext, grounded: Grounded,
                          aside: ClinicRules) -> str:
        """Why the tenant-wide answer may be the wrong rule for some clinic's patients ("" when it is
        not): a clinic's own rule (kept aside) overrides a rule the answer states with another
        quantity ("15 minutes" for every clinic, "30 minutes" at Bayside), or, whatever its wording
        ("we do not take cash at Riverbend"), a clinic's own passage answers the question by itself.
        Checked only once the answer shows something, so a part that finds nothing to say still
        abstains rather than asking which clinic."""
        best = grounded.best
        if best is None or not (aside.hits or aside.deeper):
            return ""
        overridden = self._overridden_quantity(plan, ctx, best, aside)
        if overridden is not None:
            return overridden.explanation
        return self._clinic_states_it_alone(plan, ctx, grounded, aside) or \
            self._clinic_answers(plan, ctx, aside, _shown_texts(best))

    def _clinic_states_it_alone(self, plan: PartPlan, ctx: PartContext, grounded: Grounded,
                                aside: ClinicRules) -> str:
        """The question asks for a rule quantity (a lead time, a notice period, a fee) that the answer
        shown does not state, and a clinic's own passage states it: the tenant-wide answer ("If your
        doctor has asked for a fasting test, do not eat for 8 hours" for "how early do I have to be
        there?") leaves out what that clinic's patients must do. A passage about a specialty or
        appointment type the question did not ask is no such rule."""
        wanted = conflicts.asks_the_rule(" ".join(plan.clauses), plan.intent)
        if not wanted:
            return ""
        stated = set()
        for kinds in claim_quantities(grounded, plan.intent).values():
            stated.update(kinds)
        missing = wanted - stated
        for hit in (*aside.hits, *aside.deeper):
            passage = hit.passage
            found = conflicts.rule_quantities(passage.text, plan.intent, f"{passage.title} > {passage.heading_context}")
            kinds = sorted(missing & set(found))
            if kinds and not self._unasked_qualifiers(ctx, passage, passage.text):
                named = ", ".join(aside.scopes.get(passage.identity.version_id, ()))
                return (f"a clinic's own passage states the {kinds[0]} the answer does not ({named}): "
                        f"{'/'.join(sorted(found[kinds[0]]))}")
        return ""

    def _clinic_answers(self, plan: PartPlan, ctx: PartContext, aside: ClinicRules, answer: list[str]) -> str:
        """The question asked of the clinics' own passages alone, through the same generate-and-
        validate loop as the answer: a shown claim means some clinic has its own rule on exactly
        this, which the tenant-wide answer does not tell its patients (a quantity check cannot see
        an override in words). The judgment is the generator's and the validator's, not a word list.
        Passages stating the quantity the question asks for are the quantity check's (it compares
        them exactly, and a subgroup's rule that shares the quantity, "new patients at Northgate 30
        minutes, everyone else 15", is no override); a passage stating some other quantity is read
        like any other ("Give us two business days' notice ... Replies to reminder texts can't
        cancel" for "can I text back C to cancel?")."""
        if not self.settings.clinic_rules_asked:
            return ""
        wanted = conflicts.asks_the_rule(" ".join(plan.clauses), plan.intent)
        # A clinic that does not offer the specialty asked about has no rule for it ("what should I
        # wear to physical therapy?" and the imaging center's clothing rule for scans). A specialty
        # no clinic lists narrows nothing.
        choices = ctx.route.clinic_choices
        offering = {c.location_id for c in choices if ctx.route.specialty in c.specialties} or \
            {c.location_id for c in choices}
        readable = [h for h in aside.hits if set(aside.scopes.get(h.passage.identity.version_id, ())) & offering
                    and not wanted & set(conflicts.rule_quantities(
                        h.passage.text, plan.intent, f"{h.passage.title} > {h.passage.heading_context}"))]
        # Passages about a specialty or appointment type the question did not ask go last.
        readable.sort(key=lambda h: bool(self._unasked_qualifiers(ctx, h.passage, h.passage.text)))
        if not readable:
            return ""
        local = tuple(LabelledPassage(f"S{i}", h.passage)
                      for i, h in enumerate(readable[: self.settings.clinic_rules_asked], start=1))
        asked = question_for_generation(plan, ctx.route, local)

        def ask(text: str) -> Grounded:
            return self.answerer.answer(text, plan.intent, local, ctx.request.as_of, ctx.calls,
                                        place_names=asked.place_names, other_place_names=asked.other_place_names,
                                        confident_only=plan.only_if_answered)
        own = ask(asked.text)
        if own.unavailable is None and own.best is None and answer:
            # The clinic's counterpart of the answer shown, asked of its own passages, as
            # _own_rule_alone does: "Parking is free for patients." against the hospital clinic's
            # "Patient parking ... costs $3 per hour" when the question's other words ("coins for a
            # meter", "coming from out of town") kept that sentence from answering it directly.
            own = ask(" ".join(answer))
        if own.unavailable is not None or own.best is None:
            return ""
        best = own.best
        by_label = {lp.label: lp.passage for lp in best.given}
        # A rule for a specialty or appointment type the question did not ask ("Rescheduling an MRI
        # ... needs a coordinator review") is no override of the general one; read from the claim and
        # its passages' title and headings, not from a reason elsewhere in the passage ("... longer
        # physiotherapy and nurse sessions that are hard to fill").
        # An override is of the rule the answer states: the clinic's claim shares a content word with
        # the answer shown ("cash" in "we take cash" / "Oakfield is cashless: card only"). A clinic
        # passage the generator could only draw some sentence from ("Late cancellations cost $60" for
        # the fee of an insurance form) answers another question.
        subject = _content_stems(" ".join(answer))
        claim = next((c for c in best.generated.claims if self._about_what_was_asked(ctx, best, c)
                      and _content_stems(c.text) & subject and not conflicts.says_the_same_as_elsewhere(c.text)),
                     None)
        if claim is None:
            return ""
        versions = {by_label[label].identity.version_id for label in claim.evidence_labels if label in by_label}
        named = sorted({loc for v in versions for loc in aside.scopes.get(v, ())})
        return f"a clinic's own passage answers it ({', '.join(named)}): {claim.text[:120]!r}"

    def _unasked_qualifiers(self, ctx: PartContext, passage, text: str) -> frozenset[str]:
        """The specialties and appointment types the text (under its passage's title and headings)
        names that the question did not ask for."""
        vocabulary = self._qualifier_vocabulary
        asked = _asked_qualifiers(ctx.route)
        # A list given as one claim ("Bring everything on our usual list, plus: photo ID ...; your
        # referral letter, if this is your first visit to a consultant") is about a qualifier only when
        # every item is: one item's condition does not make the photo ID a first visit's rule.
        named = frozenset.intersection(*(
            conflicts.qualifiers(f"{passage.title} > {passage.heading_context} {item}", vocabulary,
                                 self.lexicon.type_implies_specialty) for item in _list_items(text)))
        return named - asked

    def _overridden_quantity(self, plan: PartPlan, ctx: PartContext, best: Attempt,
                             aside: ClinicRules) -> conflicts.Conflict | None:
        # What the answer states, per passage it cites: the rule quantities compared are the ones
        # shown, not everything the cited passage says ("which documents to bring" cites the
        # arrival policy, and states no lead time).
        stated: dict[str, list[str]] = {}
        for claim in best.generated.claims:
            if claim.claim_id in best.shown:
                for citation in best.by_claim[claim.claim_id].citations:
                    stated.setdefault(citation.passage_id, []).append(claim.text)
        answering = [dataclasses.replace(lp.passage, text=" ".join(stated[lp.passage.identity.passage_id]))
                     for lp in best.given if lp.passage.identity.passage_id in stated]
        if not answering:
            return None
        pool = tuple(Hit(p) for p in answering) + aside.hits + aside.deeper
        scopes = {**aside.scopes, **{p.identity.version_id: () for p in answering}}
        return self._detect(plan, ctx, pool, scopes, overrides=True, top_n=len(pool))

    @staticmethod
    def _which_clinic(out: PartResult, ctx: PartContext, options: tuple[str, ...], why: str) -> PartResult:
        clarification = Clarification("which_clinic_of", "location", ctx.route.specialty, options=options)
        out.clarification_question = clarification_text(clarification, ctx.wording)
        out.error = why
        return out.settle(Outcome.NEEDS_CLARIFICATION, out.clarification_question, NextAction.ANSWER_CLARIFICATION)

    def _detect(self, plan: PartPlan, ctx: PartContext, hits: tuple[Hit, ...],
                scopes: dict[str, tuple[str, ...]] | None, overrides: bool = False,
                top_n: int | None = None) -> conflicts.Conflict | None:
        """conflicts.detect over the top hits (`scopes`: version -> location scope from the store of
        record, only the versions that may be cited; None: not known yet)."""
        lexicon = self.lexicon
        vocabulary = self._qualifier_vocabulary
        asked = _asked_qualifiers(ctx.route)
        top = hits[: top_n or self.settings.conflict_top_n]
        known = {c.location_id: c for c in ctx.route.clinic_choices}
        candidates = [conflicts.Candidate(
            f"S{i + 1}", h.passage.identity.passage_id, h.passage.identity.document_id,
            h.passage.identity.version_id, h.passage.identity.source_class, h.passage.text,
            f"{h.passage.title} > {h.passage.heading_context}",
            None if scopes is None else scopes.get(h.passage.identity.version_id, ()),
            _offered_at(known, () if scopes is None else scopes.get(h.passage.identity.version_id, ())),
        ) for i, h in enumerate(top) if scopes is None or h.passage.identity.version_id in scopes]
        return conflicts.detect(candidates, plan.intent, vocabulary, asked, lexicon.type_implies_specialty,
                                len(top), question=" ".join(plan.clauses), overrides=overrides)

    def _conflict(self, plan: PartPlan, ctx: PartContext, found: SearchResult, hits: tuple[Hit, ...],
                  out: PartResult) -> tuple[Hit, Hit] | None:
        top = hits[: self.settings.conflict_top_n]
        conflict = self._detect(plan, ctx, hits, None)
        if conflict is None:
            return None
        # Confirm with the store of record: only approved versions, and their location scopes.
        try:
            versions = self._versions_of(ctx, found, [h.passage.identity.passage_id for h in top])
            conflict = self._detect(plan, ctx, hits, {v.version_id: v.location_scope for v in versions
                                                      if v.status == VersionStatus.APPROVED})
        except DomainError as err:
            log.warning("conflict check could not reload versions (%s); location scopes unverified", err.reason)
        if conflict is None:
            return None
        by_id = {h.passage.identity.passage_id: h for h in top}
        out.error = f"conflict: {conflict.explanation}"
        return by_id[conflict.first.passage_id], by_id[conflict.second.passage_id]

    def _abstain(self, out: PartResult, plan: PartPlan, ctx: PartContext, hits: tuple[Hit, ...],
                 outcome: Outcome = Outcome.ABSTAINED_NO_EVIDENCE) -> PartResult:
        if outcome == Outcome.UNRESOLVED:
            text, action = ctx.wording.say("unresolved"), NextAction.PREPARE_REVIEW_TASK
        else:
            text = ctx.wording.abstain(plan.kind)
            # No policy to point to without a hit: the desk instead.
            action = ABSTAIN_ACTION.get(plan.kind, NextAction.CONTACT_SCHEDULING_DESK) if hits \
                else NextAction.CONTACT_SCHEDULING_DESK
        if plan.kind == PartKind.CANCELLATION_RESCHEDULING and hits:
            out.policy_link = policy_link(hits)
        return out.settle(outcome, text, action)

    def _settle(self, out: PartResult, plan: PartPlan, ctx: PartContext, hits: tuple[Hit, ...],
                grounded: Grounded) -> PartResult:
        best: Attempt = grounded.best
        answered: list[AnsweredClaim] = []
        withheld: list[WithheldClaim] = []
        used: dict[str, Citation] = {}
        reasons: dict = {}
        any_unresolved = False
        for claim in best.generated.claims:
            validation = best.by_claim.get(claim.claim_id)
            if claim.claim_id in best.shown:
                # The validator's citations as it bound them (pinned links and titles included).
                answered.append(AnsweredClaim(claim.claim_id, claim.text, validation.citations, validation.support,
                                              claim.claim_type))
                for citation in validation.citations:
                    used.setdefault(citation.passage_id, citation)
            else:
                any_unresolved |= bool(validation and validation.support == Support.UNRESOLVED)
                why = failure_reasons(validation)
                withheld.append(WithheldClaim(claim.claim_id, why,
                                              validation.support if validation else Support.UNSPECIFIED))
                reasons.update(dict.fromkeys(why))
        out.withheld, out.reasons = tuple(withheld), tuple(reasons)
        factual_shown = best.factual_shown
        if factual_shown:
            out.claims, out.citations = tuple(answered), tuple(used.values())
            text = " ".join(c.text for c in answered)
            if not withheld:
                return out.settle(Outcome.ANSWERED, text, NextAction.NONE)
            action = NextAction.CONTACT_SCHEDULING_DESK
            if plan.kind == PartKind.CANCELLATION_RESCHEDULING:
                action = NextAction.VIEW_POLICY
                out.policy_link = policy_link(hits)
            return out.settle(Outcome.PARTIALLY_ANSWERED, text, action)
        # Nothing factual could be shown: the honest message (withheld claims stay listed).
        return self._abstain(out, plan, ctx, hits, Outcome.UNRESOLVED if any_unresolved else Outcome.ABSTAINED_NO_EVIDENCE)
