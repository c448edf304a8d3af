"""The extractive backend: deterministic, offline. It never writes new text — every claim is a
unit (sentence with its qualifiers, list with its lead-in, table row with its header) of an
offered passage, cited with the label(s) of the passage(s) containing it.

Selection: units are scored by stemmed content-word overlap with the question (IDF-weighted over
the offered units), plus intent cue words and the passage's heading context; instruction-like
sentences ("ignore previous instructions ...") are data addressed to an assistant and are never
answer material. Candidates get stable claim IDs c1..cm in score order, so validator feedback on
any attempt names the same units: rejected units (and, for passage-level reasons, every unit of
the rejected passage) are left out of the next attempt.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import math
import re

from citetrace import gloss, language, lay

from services.generation import claimtext, relevance
from services.generation.core import Claim, Generated, GenerationRequest, infer_claim_type
from services.generation.lead import LeadGate
from services.generation.semantic import UnitSimilarity, reads_english, unit_reading

PROMPT_VERSION = "extractive-v1"
MODEL_ID = "citetrace-extractive-v1"
# With a UnitSimilarity (the default the bootstrap builds): units are ranked by meaning first.
SEMANTIC_PROMPT_VERSION = "extractive-v2-semantic"
# How much a unit's word overlap (scaled to the best unit's) adds to its similarity to the question.
LEXICAL_WEIGHT = 0.2
# Similarity at which a unit answers the question although it shares no key term with it (the lead
# claim's gate, beside word coverage), and the least a further claim needs. Chosen on the tune half
# of tests/relevance/relevance_labelled.yaml: a labelled passage whose best unit scores >= 0.5 is a
# relevant one for 75% of the tune pairs it admits. bench/generation_selection.py measures the lead
# claim with it (relevant / irrelevant / abstained, every question has an answer): tune 36/2/5 and
# test 30/5/8, against 29/4/10 and 27/6/10 by words alone (with relevance.coverage's topic rule;
# 37/2/4 and 31/7/5 before it).
SEMANTIC_LEAD = 0.5
SEMANTIC_FOLLOW = 0.35
# With a similarity, even a lead that covers the question's key terms needs this much meaning: a
# clinic's generic name word ("practice") is no answer about its parking.
SEMANTIC_FLOOR = 0.15
# A unit says the asked-for thing in other words at this similarity of the thing's own words to it
# (_says_in_other_words). On the written pairs of tests/generation/test_asked_thing.py
# (test_a_thing_said_in_other_words_reads_near_it), things said in other words read 0.51-0.58
# ("translators" / "Interpreters can be arranged ..."), things not said 0.02-0.14 ("video appointments" /
# "The nurse line gives advice only"): the midpoint, (0.14 + 0.51) / 2.
THING_SAID = 0.32
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
# A heading phrased as a question ("What to bring", "Who can come with you", "Hva du bør ta med").
_ASKING_HEADING = re.compile(r"\s*(what|which|who|when|where|how|hva|hvem|hvilke|når|hvor|hvordan)\b", re.I)
# A further claim is shown only when it is about as relevant as the lead (relevance within this).
FOLLOW_MARGIN = 0.2
# What a unit of a passage that names the place the question was resolved to (GenerateRequest.
# place_names) adds to its relevance: that place's own passage holds the rule that applies there (a
# clinic's own rule overrides the tenant-wide one), so among units about as close to the question,
# its unit leads. Not enough to lift a unit of no meaning in common past the lead gate.
PLACE_PRIOR = 0.1

# Words of a question that say nothing about its topic.
_QUESTION_NOISE = frozenset(claimtext.stem(w) for w in (
    "what", "when", "how", "where", "which", "who", "need", "do", "i", "my", "is", "there", "tell", "know",
    "want", "would", "like", "anything", "thing", "question", "clinic", "appointment",
))
_INTENT_CUES: dict[str, frozenset[str]] = {
    "ARRIVAL_PREPARATION": frozenset(claimtext.stem(w) for w in (
        "arrive", "arrival", "early", "before", "minutes", "bring", "check", "prepare", "fast", "wear")),
    "CANCELLATION_RESCHEDULING": frozenset(claimtext.stem(w) for w in (
        "cancel", "cancellation", "reschedule", "fee", "notice", "hours", "charge", "change", "no-show")),
    "PROVIDER_INFORMATION": frozenset(claimtext.stem(w) for w in (
        "specialist", "cardiologist", "dermatologist", "physician", "doctor", "provider", "languages", "speaks",
        "experience", "treats", "sees", "accepts")),
    "AVAILABILITY": frozenset(claimtext.stem(w) for w in ("book", "booking", "walk-in", "open", "hours", "slot")),
}
# Negations and qualifiers matter to the validator, not to what a question is about.
_CUE_STEMS = frozenset(claimtext.stem(w) for w in claimtext.NEGATION_CUES | claimtext.QUALIFIER_CUES)
# Validator reasons that condemn the passage, not just the sentence.
_PASSAGE_REASONS = frozenset({
    "VERSION_MISMATCH", "SPAN_DIGEST_MISMATCH", "LOCATOR_MISMATCH", "STALE_VERSION", "SCOPE_VIOLATION",
    "DANGLING_EVIDENCE_REF", "DUPLICATE_PASSAGE_ID",
})


@dataclasses.dataclass
class _Candidate:
    text: str
    labels: list[str]
    source_class: str
    score: float
    rank: int  # best passage rank containing it
    position: int
    table: int = -1  # passage rank of the table a row belongs to; -1 for other units
    own: float = 0.0  # score from the unit's own words (a row's cells)
    direct: float = 0.0  # score from the question's own words
    coverage: float = 0.0  # share of the question's key terms the unit (with its title/heading) covers
    reading: str = ""  # the unit under its section heading, as the similarity reads it
    matched: str = ""  # the unit as matching reads it: its English gloss in a bokmål passage, else itself
    sem: float = 0.0  # similarity of the question to the reading (0 without a UnitSimilarity)
    relevance: float = 0.0  # sem + LEXICAL_WEIGHT * score / the best score (the semantic ranking)
    key_terms: bool = True  # the question has key terms (without any, coverage is 1.0 and says nothing)
    readable: bool = False  # read by the similarity (English or undetermined); else words alone judge it
    own_place: bool = False  # its passage names the place the question was resolved to
    # A list item: which list (passage rank, n-th list of the passage), and whether its section's
    # heading names as much of what is asked as the item itself ("What to bring" for "what do I
    # bring?"): then the question asks for the list, not for one item of it.
    list_id: tuple[int, int] | None = None
    list_asked: bool = False
    paragraph: int = 0  # which paragraph of its passage (blank-line separated) the unit is in
    kind: str = "sentence"  # claimtext.Unit.kind
    only_in_list: bool = False  # touches nothing asked: a candidate only as an item of its whole list


def _about_other_places(units: list, breaks: list[int], place_names: tuple[str, ...],
                        other_names: tuple[str, ...]) -> set[int]:
    """The positions of the units that speak of another of the caller's clinics, in a passage that
    speaks of several, the asked one among them: a unit that names another clinic and not the asked
    one, and the units after it in its paragraph that name none, up to the next that names the asked
    one ("Cedar Mill has a free patient lot ... Quayside has no lot of its own. There is metered
    parking on Brackett Street"; "**Ferris Corners.** Park for free ..." beside "**Beaumont Street.**
    There is no parking at the building"). A passage that never names the asked clinic is left whole:
    its unnamed sentences may be for every clinic ("At Bayside arrive 30 minutes early. Everywhere
    else, 15 minutes")."""
    if not place_names or not other_names:
        return set()
    own = [relevance.place_words(n) for n in place_names]
    # A name of another clinic that says no more than a name of the asked one names that one too.
    others = tuple(n for n in other_names if not any(relevance.place_words(n) <= words for words in own if words))
    paragraphs: dict[int, list[int]] = {}
    for position, unit in enumerate(units):
        if unit.kind != "table_row":  # rows: ExtractiveGenerator._without_other_places_rows
            paragraphs.setdefault(bisect.bisect_right(breaks, unit.start), []).append(position)
    asked = {p: relevance.names_a_place(units[p].text, place_names) for ps in paragraphs.values() for p in ps}
    if not any(asked.values()):
        return set()
    out: set[int] = set()
    for positions in paragraphs.values():
        speaking_of_another = False
        for position in positions:
            if asked[position]:
                speaking_of_another = False
            elif relevance.writes_a_place_name(units[position].text, others):
                speaking_of_another = True
            if speaking_of_another:
                out.add(position)
    return out


@functools.lru_cache(maxsize=4096)
def question_reading(question: str) -> str:
    """The question as matching reads it: its English gloss when it is bokmål (citetrace.gloss), with
    a lay description of a service read as the service's name (citetrace.lay: "someone to sign for
    him" is an interpreter)."""
    return lay.clinic_reading(gloss.english_reading(question, language.identify(question).code))


def passage_reader(text: str):
    """str -> str: how the pieces of a passage (its units, headings, title) are matched: through the
    English gloss when the passage is bokmål, else as written."""
    return _bokmal_reading if _is_bokmal(text) else _as_written


@functools.lru_cache(maxsize=4096)
def _is_bokmal(text: str) -> bool:
    # The same passages are offered again and again; identifying one costs about 0.1 ms.
    return language.identify(text).code == "nb"


def _as_written(text: str) -> str:
    return text


# Units, headings and whole passages (the "around" context) of the passages offered lately: a few MB.
@functools.lru_cache(maxsize=8192)
def _bokmal_reading(text: str) -> str:
    return gloss.english_reading(text, "nb")


def _subject(passage) -> str:
    """A provider profile's sentences often have no subject ("Cardiologist at Northside ...");
    the section heading names it. The claim is then "<heading>: <sentence>", both source wording."""
    if passage.source_class != "provider_profile" or not passage.heading_context:
        return ""
    last = passage.heading_context.split(" > ")[-1].strip()
    return last if last and last != passage.title else ""


class ExtractiveBackend:
    name = "extractive"

    def __init__(self, max_claims: int = 3, selection_ratio: float = 0.45,
                 relevance_threshold: float = relevance.DEFAULT_THRESHOLD,
                 similarity: UnitSimilarity | None = None, lead_gate: LeadGate | None = None,
                 max_list_claims: int = 8) -> None:
        self.max_claims = max_claims
        self.max_list_claims = max_list_claims  # a list asked for as a whole is given whole, up to this
        self.selection_ratio = selection_ratio
        self.relevance_threshold = relevance_threshold
        self.similarity = similarity
        # The learned veto on the lead claim (lead.py); it reads meaning, so only with a similarity.
        self.lead_gate = lead_gate if similarity is not None else None

    def warm_up(self) -> None:
        # The bokmål reading's glossary and phrases are read (and checked) at start, not on the first
        # request that needs them.
        gloss.reading_version()
        lay.version()
        if self.similarity is not None:
            self.similarity.warm_up()
        if self.lead_gate is not None:
            self.lead_gate.warm_up()

    def close(self) -> None:
        """In process: nothing to release."""

    def settings(self) -> dict[str, str]:
        out = {"max_claims": str(self.max_claims), "max_list_claims": str(self.max_list_claims),
               "selection_ratio": str(self.selection_ratio),
               "relevance_threshold": str(self.relevance_threshold),
               # how bokmål is read (the glossary and the phrases, by digest): it moves the ranking
               "bokmal_reading": gloss.reading_version(),
               # how a lay description of a service is read (the phrase list, by digest)
               "lay_reading": lay.version()}
        if self.similarity is not None:
            out.update({"similarity_model": self.similarity.version, "lexical_weight": str(LEXICAL_WEIGHT),
                        "semantic_lead": str(SEMANTIC_LEAD), "semantic_follow": str(SEMANTIC_FOLLOW),
                        "follow_margin": str(FOLLOW_MARGIN), "place_prior": str(PLACE_PRIOR)})
        if self.lead_gate is not None:
            out.update({"lead_model": self.lead_gate.version, "lead_threshold": str(self.lead_gate.threshold),
                        "lead_confident_threshold": str(self.lead_gate.confident_threshold)})
        return out

    def _by_meaning(self, request: GenerationRequest) -> bool:
        return self.similarity is not None and reads_english(question_reading(request.question))

    def candidates(self, request: GenerationRequest) -> list[tuple[str, _Candidate]]:
        """Every answerable unit that touches the question, best first, with its stable claim ID."""
        # A sentence of the question addressed to an assistant ("Ignore previous instructions ...")
        # is not what the question asks about.
        # A bokmål question and bokmål passages are matched through their English gloss (the claims
        # keep the passages' own words): the stems, key terms and the similarity are English ones.
        asked = question_reading(request.question)
        question = relevance.terms(relevance.question_sentences(asked)) - _QUESTION_NOISE - _CUE_STEMS
        key_terms = relevance.key_terms(asked, request.intent, request.place_names)
        asked_terms = relevance.asked_key_terms(asked, request.intent, request.place_names)
        cues = _INTENT_CUES.get(request.intent, frozenset()) - question
        merged: dict[str, _Candidate] = {}
        unit_sets: list[tuple[_Candidate, frozenset[str], frozenset[str], frozenset[str], frozenset[str],
                              frozenset[str]]] = []
        for rank, passage in enumerate(request.passages):
            # The passage around a unit (its heading, title and other sentences) is context:
            # "Which languages does Dr. Lindqvist speak?" -> "She speaks ..." in Dr. Lindqvist's passage.
            read = passage_reader(passage.text)
            around = relevance.terms(read(f"{passage.title} {passage.heading_context} {passage.text}"))
            heading = claimtext.content_set(read(passage.heading_context))
            labelled = claimtext.content_set(read(f"{passage.title} {passage.heading_context}"))
            # A heading that asks the question ("Do you accept walk-ins?") makes its text the answer.
            asks = passage.heading_context.rstrip().endswith("?") and bool(question) and \
                len(question & heading) * 2 >= len(question)
            # So does, when no unit shares a word with the question, a section heading that names
            # everything it asks about ("Do you take walk-ins?" -> section "Walk-ins"): the section's
            # sentences answer in words of their own ("We do not see patients without a booking").
            last_heading = read(passage.heading_context.split(" > ")[-1])
            section = claimtext.content_set(last_heading)
            names_topic = bool(key_terms) and all(relevance.covers(t, section) for t in key_terms)
            # A section heading that asks ("What to bring") most of whose words the question says ("what
            # should I bring to my appointment?") names what a list under it answers, though the shared
            # words only say what kind of question it is (no key term). A topic heading ("Cancelling")
            # does not: its list is one part of the answer, an exception may follow it.
            heading_asked = bool(section) and _ASKING_HEADING.match(last_heading) is not None and \
                len(section & question) * 2 >= len(section)
            subject = _subject(passage)
            names_place = relevance.names_a_place(f"{passage.title} {passage.heading_context} {passage.text}",
                                                  request.place_names)
            lists, previous_kind = -1, ""
            breaks = [m.end() for m in _PARAGRAPH_BREAK.finditer(passage.text)]  # where each paragraph begins
            raw_units = claimtext.units(passage.text)
            elsewhere = _about_other_places(raw_units, breaks, request.place_names, request.other_place_names)
            for position, raw_unit in enumerate(raw_units):
                if position in elsewhere:
                    continue
                if raw_unit.kind == "list" and previous_kind != "list":
                    lists += 1
                previous_kind = raw_unit.kind
                unit = raw_unit
                if subject and not raw_unit.text.startswith(subject):
                    unit = claimtext.Unit(f"{subject}: {raw_unit.text}", raw_unit.start, raw_unit.end, raw_unit.kind)
                if claimtext.looks_like_instruction(unit.text) or claimtext.contains_link(unit.text):
                    continue
                if len(claimtext.content_stems(unit.text)) < 2:
                    continue
                key = unit.text.casefold()
                if key in merged:  # the same wording in two offered passages: cite both
                    if passage.label not in merged[key].labels:
                        merged[key].labels.append(passage.label)
                    continue
                candidate = _Candidate(unit.text, [passage.label], passage.source_class, 0.0, rank, position,
                                       reading=unit_reading(read(passage.heading_context), read(passage.title),
                                                            read(unit.text)),
                                       matched=read(unit.text), own_place=names_place,
                                       paragraph=bisect.bisect_right(breaks, raw_unit.start),
                                       kind=raw_unit.kind)
                covered = relevance.terms(candidate.matched) | labelled
                candidate.coverage = relevance.coverage(key_terms, covered)
                candidate.key_terms = bool(key_terms) or bool(asked_terms)
                if asked_terms is not None:  # or what the asking clauses alone ask (relevance.asked_clauses)
                    candidate.coverage = max(candidate.coverage, relevance.coverage(asked_terms, covered))
                merged[key] = candidate
                stems = relevance.terms(read(raw_unit.cells) if raw_unit.cells else candidate.matched)
                # A table row's header words count, but less than its own cells: the header is the
                # same for every row.
                shared = (claimtext.content_set(candidate.matched) - stems) if raw_unit.cells else frozenset()
                candidate.table = rank if raw_unit.kind == "table_row" else -1
                if raw_unit.kind == "list":
                    candidate.list_id = (rank, lists)
                    named = sum(relevance.covers(t, section) for t in key_terms)
                    candidate.list_asked = (named > 0 or heading_asked) and \
                        named >= sum(relevance.covers(t, stems) for t in key_terms)
                unit_sets.append((candidate, stems, around, (heading if asks else frozenset()), shared,
                                  (heading if names_topic else frozenset())))
        unit_sets = self._without_other_places_rows(unit_sets, request.place_names)
        if not unit_sets:
            return []
        df: dict[str, int] = {}
        for _, stems, _, _, _, _ in unit_sets:
            for s in stems:
                df[s] = df.get(s, 0) + 1
        n = len(unit_sets)

        def idf(term: str) -> float:
            return math.log(1.0 + n / df.get(term, 1))

        rows_hit: set[int] = set()
        # The section-heading fallback only when no unit shares a word with the question (directly or
        # under a heading that asks it): otherwise it would flatten a ranking that has evidence.
        use_sections = not any(question & (stems | asked) for _, stems, _, asked, _, _ in unit_sets)
        for candidate, stems, around, asked, shared, names in unit_sets:
            if use_sections:
                asked = asked | names
            own = sum(idf(t) for t in question & (stems | asked))
            direct = own + 0.6 * sum(idf(t) for t in (question - stems - asked) & shared)
            # Intent cue words hint, they do not answer (and alone they only count when no unit
            # shares a word with the question).
            cue = 0.25 * sum(idf(t) for t in cues & (stems | shared))
            context = 0.4 * sum(idf(t) for t in (question - stems - asked - shared) & around)
            score = direct + cue + context
            candidate.own = own
            if candidate.table >= 0 and own > 0:
                rows_hit.add(candidate.table)
            if direct == 0 and cue == 0:
                score = 0.0  # a heading match alone does not make a sentence an answer
            candidate.direct = direct
            # Long units collect overlap by size alone: damp gently.
            # Retrieval's rank is a mild prior (the ranking is no reason to be cited on its own).
            candidate.score = score / (1.0 + 0.01 * max(0, len(stems) - 12)) / (1.0 + 0.05 * candidate.rank)
        units = [c for c, *_ in unit_sets]
        if self._by_meaning(request):
            ranked = self._ranked_by_meaning(request, units, rows_hit)
        else:
            # Units that share no word with the question answer it only when no unit does.
            any_direct = any(c.direct > 0 for c in units)
            ranked = sorted(
                # When the question names a row ("MRI"), the table's other rows do not answer it.
                (c for c in units
                 if c.score > 0 and not (c.table in rows_hit and c.own == 0) and (c.direct > 0 or not any_direct)),
                key=lambda c: (-round(c.score, 9), c.rank, c.position),
            )
        return [(f"c{i}", c) for i, c in enumerate(ranked + self._rest_of_lists(units, ranked), start=1)]

    @staticmethod
    def _without_other_places_rows(unit_sets: list, place_names: tuple[str, ...]) -> list:
        """Without the rows of a table, one row per clinic, that are not the asked clinic's: when some
        row of a table names the place the question was resolved to, its other rows are about other
        places ("what time should I show up" at Orchard Plaza was answered with Beaumont Street's
        opening hours)."""
        if not place_names:
            return unit_sets
        rows = [u[0] for u in unit_sets if u[0].kind == "table_row"]
        tables = {c.table for c in rows if relevance.names_a_place(c.text, place_names)}
        return [u for u in unit_sets if u[0].kind != "table_row" or u[0].table not in tables or
                relevance.names_a_place(u[0].text, place_names)]

    @staticmethod
    def _rest_of_lists(units: list[_Candidate], ranked: list[_Candidate]) -> list[_Candidate]:
        """The items of a ranked item's list that touch nothing asked, after every ranked unit (so
        the claim IDs of the ranking stay as they were): given only with their whole list."""
        lists = {c.list_id for c in ranked if c.list_asked}
        chosen = {id(c) for c in ranked}
        rest = [c for c in units if c.list_id in lists and id(c) not in chosen]
        for candidate in rest:
            candidate.only_in_list = True
        return sorted(rest, key=lambda c: (c.rank, c.position))

    @staticmethod
    def meaning_question(request: GenerationRequest) -> str:
        """The question as meaning reads it: its asking clauses, without the names of whom or where."""
        asked = question_reading(request.question)
        question = relevance.asked_clauses(asked)
        # An asking clause that names nothing ("Will you still see me?" after "I'm stuck in traffic and will
        # be about 12 minutes late.") means the statement: read the whole question then.
        if not question or not relevance.key_terms(question, request.intent, request.place_names):
            question = relevance.question_sentences(asked)
        # Which provider or place it asks about is signal 2's business (relevance.missing_entities);
        # left in, a clinic's name makes every unit naming that clinic look like an answer.
        return relevance.without_entity_names(question, request.place_names)

    def _ranked_by_meaning(self, request: GenerationRequest, units: list[_Candidate],
                           rows_hit: set[int]) -> list[_Candidate]:
        """Every unit scored by its similarity to the question plus a share of its word overlap; a
        unit with no overlap is a candidate when its similarity alone reaches SEMANTIC_LEAD."""
        # What the asking clauses ask, when a statement stands beside them ("I was told to arrive
        # 15 minutes before. Is there a creche?"): the statement is context, not the question.
        question = self.meaning_question(request)
        readable = [c for c in units if reads_english(c.matched)]
        for candidate in readable:
            candidate.readable = True
        for candidate, sem in zip(readable, self.similarity.similarities(question, [c.reading for c in readable]),
                                  strict=True):
            candidate.sem = sem
        best = max((c.score for c in units), default=0.0) or 1.0
        for candidate in units:
            candidate.relevance = (candidate.sem + LEXICAL_WEIGHT * candidate.score / best
                                   + (PLACE_PRIOR if candidate.own_place else 0.0))
        return sorted(
            (c for c in units
             if (c.score > 0 and not (c.table in rows_hit and c.own == 0)) or c.sem >= SEMANTIC_LEAD),
            key=lambda c: (-round(c.relevance, 9), c.rank, c.position),
        )

    def generate(self, request: GenerationRequest) -> Generated:
        offered = {p.label: p for p in request.passages}
        # Evidence about someone or somewhere else answers nothing (relevance.py, signal 2).
        read = [f"{p.title} {p.heading_context} {p.text}" for p in request.passages]
        if relevance.missing_entities(request.question, read):
            return Generated([], MODEL_ID, self._prompt_version(self._by_meaning(request)), self.settings())
        meaning = self._by_meaning(request)
        candidates = self.candidates(request)
        # Nor does evidence that never mentions the thing asked for (signal 3), unless a unit says it
        # in other words ("translators" answered by "Interpreters").
        # Read with the lay phrase list (a house call asked for as "come out to the house" is a home visit).
        missing = relevance.missing_asked_thing(lay.clinic_reading(request.question), read, request.place_names)
        if missing:
            # A unit with every word of the thing apart does not say it in other words either: it reads
            # near the thing by those very words ("Most first visits end with ... a home program").
            others = [(i, c) for i, c in candidates if not relevance.says_apart(missing, c.matched, request.place_names)]
            if not self._says_in_other_words(relevance.unsaid_words(missing, read), others, meaning):
                return Generated([], MODEL_ID, self._prompt_version(meaning), self.settings())
            candidates = others  # and it answers nothing about the thing: it may not lead
        by_id = dict(candidates)
        excluded_ids: set[str] = set()
        excluded_labels: set[str] = set()
        for item in request.feedback:
            if item.support == "SUPPORTED" and not item.reasons:
                continue
            excluded_ids.add(item.claim_id)
            if set(item.reasons) & _PASSAGE_REASONS and item.claim_id in by_id:
                excluded_labels.update(by_id[item.claim_id].labels)
        excluded_ids |= self._refused_alike(request, candidates)
        claims: list[Claim] = []
        top = None
        if request.confident_only and (not meaning or self.lead_gate is None):
            # A confident lead is the lead model's judgement; without it (no similarity, a question
            # that does not read as English) nothing is confident.
            return Generated([], MODEL_ID, self._prompt_version(meaning), self.settings())
        lead_probability = self._lead_probabilities(request, candidates) if meaning else (lambda _rank: None)
        vetoed = self._veto_at(lead_probability, request.confident_only)

        # A claim the validator withheld because its source may not state that kind of rule (a handbook,
        # an arrival rule) is replaced as the lead only by a claim of the same kind: the next unit near
        # "before your appointment" was an interpreter's notice, an answer to another question.
        # (The feedback names only the claims not shown; the lead withheld is the unit that leads
        # without any exclusion.)
        def answers(rank: int, candidate: _Candidate) -> bool:
            return not candidate.only_in_list and self._answers(candidate, meaning, vacuous_ok=True) and \
                not vetoed(rank)

        first_lead = next((claim_id for rank, (claim_id, c) in enumerate(candidates) if answers(rank, c)),
                          None) if request.feedback else None  # a first attempt has nothing withheld
        withheld = any(item.claim_id == first_lead and "AUTHORITY_MISMATCH" in item.reasons for item in request.feedback)
        same_kind = infer_claim_type(by_id[first_lead].text, by_id[first_lead].source_class, request.intent) \
            if withheld else None
        # And it is a second choice: shown only when the lead model is confident it answers (Tōtara q03: "If
        # you're really uncomfortable you can let a little out" led "how early do I need to arrive?" once
        # the handbook's arrival rule was withheld).
        unsure = self._veto_at(lead_probability, True) if withheld else (lambda _rank: False)

        def may_lead(rank: int, claim_id: str, candidate: _Candidate) -> bool:
            # True and cited is not enough: the answer's lead claim must cover the question (in words,
            # or in meaning; relevance.py, signal 1) and pass the learned veto (lead.py); the claims
            # after it qualify it.
            return claim_id not in excluded_ids and answers(rank, candidate) and not unsure(rank) and \
                (same_kind is None or
                 infer_claim_type(candidate.text, candidate.source_class, request.intent) == same_kind) and \
                any(label in offered and label not in excluded_labels for label in candidate.labels)

        # A question that asks for an amount is led by the first unit that may lead and states one (or
        # whose paragraph, following it, does); the units ahead of it only talk about the amount.
        amount = self.amount_asked(request)

        def answers_the_amount(candidate: _Candidate) -> bool:
            # The lead states it, or the sentences that will follow it in its paragraph do ("We provide
            # interpreters ... Please ask at least two working days before"): the lead says yes, they
            # say how far ahead.
            if relevance.states_amount(candidate.text, amount):
                return True
            return meaning and any(relevance.states_amount(claim.text, amount) for claim in
                                   self._rest_of_its_paragraph(request, candidates, candidate, excluded_ids,
                                                               excluded_labels))

        amount_lead = next((rank for rank, (claim_id, candidate) in enumerate(candidates)
                            if may_lead(rank, claim_id, candidate) and answers_the_amount(candidate)),
                           None) if amount else None
        if amount and amount_lead is None:
            # Asked for an amount, and nothing that may lead states one: any lead would talk around
            # the amount ("Wear loose clothing" for "what would the physio cost me?"). No claim: the
            # part abstains honestly rather than show an answer to another question.
            return Generated([], MODEL_ID, self._prompt_version(meaning), self.settings())
        for rank, (claim_id, candidate) in enumerate(candidates):
            if claim_id in excluded_ids or candidate.only_in_list or any(c.claim_id == claim_id for c in claims):
                continue
            if top is None and ((amount_lead is not None and rank < amount_lead) or
                                not may_lead(rank, claim_id, candidate)):
                continue
            labels = [label for label in candidate.labels if label in offered and label not in excluded_labels]
            if not labels:
                continue
            if top is None:
                top = candidate.relevance if meaning else candidate.score
            elif meaning:
                if candidate.relevance < top - FOLLOW_MARGIN:
                    break
                # Each further claim answers too (in words or in meaning), not only sits near the lead.
                # A unit of the lead's own passage qualifies it ("Tell me about Dr. Sample": the rest of
                # her profile); one of another passage must answer the question itself (else "Tell me
                # about Dr." matches every profile once the name is set aside).
                same_passage = bool(set(candidate.labels) & set(claims[0].evidence_labels))
                floor = SEMANTIC_FLOOR if same_passage else SEMANTIC_FOLLOW
                if (candidate.readable and candidate.sem < floor) or \
                        not self._answers(candidate, meaning, vacuous_ok=same_passage):
                    continue
            elif candidate.score < self.selection_ratio * top:
                break
            claim_type = infer_claim_type(candidate.text, candidate.source_class, request.intent)
            claims.append(Claim(claim_id, candidate.text, labels, claim_type))
            if len(claims) == 1 and candidate.list_asked:
                claims = self._whole_list(request, candidates, claims[0], candidate, excluded_ids, excluded_labels)
                break
            if len(claims) == 1 and meaning:
                claims += self._rest_of_its_paragraph(request, candidates, candidate, excluded_ids, excluded_labels)
            if len(claims) >= self.max_claims:
                break
        return Generated(claims, MODEL_ID, self._prompt_version(meaning), self.settings())

    @staticmethod
    def _refused_alike(request: GenerationRequest, candidates: list[tuple[str, _Candidate]]) -> set[str]:
        """The claims the validator will refuse as it refused one before: the source policy is a matter of
        the claim's kind and its source's class, so once a handbook's arrival rule was withheld for
        AUTHORITY_MISMATCH, every other arrival rule of a handbook will be too. Left in, one led the next
        attempt or vouched for a lead's amount and was withheld in turn (Cedarbrook q07: "Our travel
        nurses work to a tight schedule ..." shown alone for "how early should I arrive?", its paragraph's
        "more than 10 minutes late" withheld)."""
        by_id = dict(candidates)
        refused = {(infer_claim_type(c.text, c.source_class, request.intent), c.source_class)
                   for item in request.feedback if "AUTHORITY_MISMATCH" in item.reasons
                   and (c := by_id.get(item.claim_id)) is not None}
        return {claim_id for claim_id, c in candidates
                if (infer_claim_type(c.text, c.source_class, request.intent), c.source_class) in refused} if refused else set()

    def _says_in_other_words(self, thing: str, candidates: list[tuple[str, _Candidate]], meaning: bool) -> bool:
        """Whether some unit says the thing asked for in other words: the thing's unsaid words
        (relevance.unsaid_words; not the whole question) read near the unit. The question's topic is
        not the thing: "does the nurse line do video calls?" is close to "The nurse line gives advice
        only" (0.55), "video calls" is not (0.06)."""
        if not meaning or not candidates:
            return False
        readable = [c.reading for _, c in candidates if c.readable]
        return bool(readable) and max(self.similarity.similarities(thing, readable)) >= THING_SAID

    def _rest_of_its_paragraph(self, request: GenerationRequest, candidates: list[tuple[str, _Candidate]],
                               lead: _Candidate, excluded_ids: set[str], excluded_labels: set[str]) -> list[Claim]:
        """The sentences that follow the lead in its own paragraph, in the document's order, while each
        still reads near the question: a paragraph answers as a whole ("Riverside does not have its own
        parking lot. Metered street parking is available on Mill Street ... The Second Street ramp is
        one block east"), and the lead alone said only what there is not. Up to max_claims with the
        lead; a sentence that reads as unrelated, or a gap in the run, ends it (another subject)."""
        if lead.kind != "sentence":
            return []
        offered = {p.label for p in request.passages}
        by_position = {c.position: (claim_id, c) for claim_id, c in candidates
                       if c.rank == lead.rank and c.paragraph == lead.paragraph and c.kind == "sentence"}
        out: list[Claim] = []
        position = lead.position + 1
        while position in by_position and len(out) + 1 < self.max_claims:
            claim_id, unit = by_position[position]
            labels = [label for label in unit.labels if label in offered and label not in excluded_labels]
            # Near the question in meaning and sharing a word it asks about (coverage is of the key terms).
            if claim_id in excluded_ids or not labels or (unit.readable and unit.sem < SEMANTIC_FOLLOW) or \
                    unit.coverage <= 0.0:
                break
            out.append(Claim(claim_id, unit.text, labels, infer_claim_type(unit.text, unit.source_class,
                                                                           request.intent)))
            position += 1
        return out

    def _whole_list(self, request: GenerationRequest, candidates: list[tuple[str, _Candidate]], lead: Claim,
                    lead_candidate: _Candidate, excluded_ids: set[str], excluded_labels: set[str]) -> list[Claim]:
        """The lead is an item of a list its section heading names what is asked about ("What to
        bring"): the answer is that list, every item in the document's order (up to max_list_claims),
        not the few items nearest the question's words (which left out the photo ID)."""
        offered = {p.label for p in request.passages}
        items = sorted((c.position, claim_id, c) for claim_id, c in candidates
                       if c.list_id == lead_candidate.list_id and claim_id not in excluded_ids)
        claims = []
        for _, claim_id, item in items[: self.max_list_claims]:
            labels = [label for label in item.labels if label in offered and label not in excluded_labels]
            if claim_id == lead.claim_id:
                claims.append(lead)
            elif labels:
                claims.append(Claim(claim_id, item.text, labels,
                                    infer_claim_type(item.text, item.source_class, request.intent)))
        return claims

    def _lead_probabilities(self, request: GenerationRequest, candidates: list[tuple[str, _Candidate]]):
        """rank -> the learned veto's probability that the candidate answers as the lead (None without a
        gate): one encoder run for the question, on first use, and each rank computed once, whichever
        operating points read it (_veto_at)."""
        gate = self.lead_gate
        if gate is None or not candidates:
            return lambda _rank: None
        best = max(c.score for _, c in candidates)
        terms = None
        known: dict[int, float] = {}

        def probability(rank: int) -> float:
            nonlocal terms
            if rank not in known:
                if terms is None:  # only when a lead is considered
                    terms = gate.terms(self.meaning_question(request), self.lead_key_terms(request))
                known[rank] = gate.probability(candidates[rank][1], rank, best, terms)
            return known[rank]

        return probability

    def _veto_at(self, probability, confident: bool):
        """rank -> whether the learned veto refuses that candidate as the lead (never without a gate), at
        its confident operating point when `confident`."""
        if self.lead_gate is None:
            return lambda _rank: False
        threshold = self.lead_gate.confident_threshold if confident else self.lead_gate.threshold
        return lambda rank: (p := probability(rank)) is not None and p < threshold

    @staticmethod
    def amount_asked(request: GenerationRequest) -> str:
        """The kind of amount the question asks for ("duration", "price" or ""), as written or, for a
        bokmål question, as its gloss reads ("hvor lenge" is typed as written, "hva koster" too)."""
        return relevance.asked_amount(request.question) or relevance.asked_amount(question_reading(request.question))

    @staticmethod
    def lead_key_terms(request: GenerationRequest) -> frozenset[str]:
        """The key terms the learned veto reads (of the question as matching reads it)."""
        return relevance.key_terms(question_reading(request.question), request.intent, request.place_names)

    def _prompt_version(self, meaning: bool) -> str:
        """extractive-v2-semantic when this answer was ranked by meaning (a similarity, and a
        question that reads as English); extractive-v1 otherwise."""
        return SEMANTIC_PROMPT_VERSION if meaning else PROMPT_VERSION

    def _answers(self, candidate: _Candidate, meaning: bool, vacuous_ok: bool) -> bool:
        """May this unit lead the answer: it covers the question's key terms, or (with a similarity)
        its meaning is close enough; with a similarity, never a unit of no meaning in common. A
        question of intent words only ("How do I reschedule?") has no key terms: any unit covers it,
        which lets the best lead (and the lead's own passage qualify it) but says nothing for a
        further claim from another passage."""
        covered = candidate.coverage >= self.relevance_threshold
        if not meaning or not candidate.readable:
            return covered
        if candidate.sem >= SEMANTIC_LEAD:
            return True
        return covered and (vacuous_ok or candidate.key_terms) and candidate.sem >= SEMANTIC_FLOOR
