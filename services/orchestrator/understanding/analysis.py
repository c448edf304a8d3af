"""Question understanding in one pass (issue 14): language, clauses, the clinical boundary per clause
and the intents per clause, from ONE encoder run over the normalized question (and one over its English
gloss when the glossary replaced a word of it: features.with_gloss).

The boundary (recall first), per clause:
  1. the model: emergency when p(emergency) >= T_e; else clinical when p(emergency) + p(clinical) >= T_b
     (T_e, T_b: the thresholds of the question's language, en or nb-NO, chosen on its tune half;
     an undetermined language takes the thresholds chosen over both);
  2. the versioned rules (rules.py) add: a red flag that stands makes the clause an emergency, a
     clinical pattern makes a logistics clause clinical; nothing a rule says ever turns a model's
     emergency decision into logistics. One rule reads a clause the model called clinical as
     logistics: a question of money about a clinical thing with no advice asked ("what does a crown
     cost", rules.asks_only_money; the issue's boundary may move clinical advice, never an emergency);
  3. any emergency clause (or a red flag across clauses) makes the whole question an emergency;
  4. a language the heads were not trained on (language.py: not en, nb or undetermined) takes the
     conservative fallback: emergency at the lower threshold T_e_fallback or on any red flag of the
     multilingual list, otherwise the whole question gets the clinical boundary (never answered as
     logistics), and the route says so.

Intents, per in-scope clause: the lexicon (versioned) overrides when one of its entries matches,
except the entries the model file lists as measured below the override precision on the tune half;
otherwise the model's best intent, plus every further intent scoring at least `accept`; a best
score below `other_below` means the clause names no intent (other). Decision and scores go into the
route for every clause."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from citetrace import language as lang
from citetrace import textnorm

from services.orchestrator.core.text import fold, normalize, split_clauses
from services.orchestrator.understanding.encoder import QuestionEncoder
from services.orchestrator.understanding.model import Heads, load_heads
from services.orchestrator.understanding.rules import BoundaryRules, load_rules

EMERGENCY = "emergency"
CLINICAL = "clinical"
LOGISTICS = "logistics"


@dataclasses.dataclass(frozen=True)
class ClauseAnalysis:
    text: str
    start: int
    end: int
    boundary: str  # emergency | clinical | logistics
    boundary_source: str  # model | rule:<id> | fallback:<language>
    scores: dict[str, float]  # boundary class probabilities
    red_flags_discarded: tuple[tuple[str, str], ...] = ()
    intents: tuple[str, ...] = ()
    intent_source: str = ""  # lexicon:<entry> | model | none
    intent_scores: dict[str, float] = dataclasses.field(default_factory=dict)
    lexicon_hits: tuple[tuple[str, str], ...] = ()  # (intent, entry) when the lexicon decided

    @property
    def in_scope(self) -> bool:
        return self.boundary == LOGISTICS


@dataclasses.dataclass(frozen=True)
class Analysis:
    version: str  # model version + rules version + encoder
    question: str  # normalized
    language: lang.LanguageGuess
    fallback: bool
    emergency: bool
    clauses: tuple[ClauseAnalysis, ...]
    emergency_reason: str = ""  # set when no single clause was the emergency

    @property
    def in_scope(self) -> bool:
        return not self.emergency and all(c.in_scope for c in self.clauses)

    def explanations(self) -> list[str]:
        """The decision and its scores, per clause, for the route (never the question text)."""
        out = [f"understanding {self.version}; language {self.language.code} ({self.language.explanation})"]
        if self.fallback:
            out.append(f"language {self.language.code} is not one the classifiers were trained on (en, nb-NO): "
                       "conservative fallback, emergency at the lower threshold or on a red flag, else the "
                       "clinical boundary for the whole question")
        for index, clause in enumerate(self.clauses, start=1):
            scores = ", ".join(f"{k} {v:.3f}" for k, v in clause.scores.items())
            line = f"clause {index}: boundary {clause.boundary} by {clause.boundary_source} ({scores})"
            if clause.red_flags_discarded:
                line += "; red flags not counted: " + ", ".join(f"{r} {why}" for r, why in clause.red_flags_discarded)
            out.append(line)
            if clause.intent_scores:
                iscores = ", ".join(f"{k} {v:.3f}" for k, v in clause.intent_scores.items())
                out.append(f"clause {index}: intents {', '.join(clause.intents) or 'none'} by {clause.intent_source} "
                           f"({iscores})")
        if self.emergency_reason:
            out.append(f"emergency: {self.emergency_reason}")
        return out


def clause_spans(text: str, clauses: list[str]) -> list[tuple[int, int]]:
    """Character spans of the clauses in the normalized text they were split from, in order."""
    spans, cursor = [], 0
    for clause in clauses:
        at = text.find(clause, cursor)
        if at < 0:
            at = cursor
        spans.append((at, at + len(clause)))
        cursor = at + len(clause)
    return spans


#: (clause, entries not to use) -> (intent, entry) per intent the router's lexicon finds in the clause.
LexiconMatcher = Callable[[str, frozenset[str]], list[tuple[str, str]]]


class QuestionAnalyzer:
    """Built at the orchestrator's entry point; ``warm_up`` loads the encoder. Thread-safe."""

    def __init__(self, encoder: QuestionEncoder, heads: Heads | None = None, rules: BoundaryRules | None = None,
                 lexicon: LexiconMatcher | None = None) -> None:
        self.encoder = encoder
        self.heads = heads or load_heads()
        self.rules = rules or load_rules()
        self._lexicon = lexicon

    @property
    def version(self) -> str:
        return f"{self.heads.version}+{self.rules.version}+{self.encoder.model_id}"

    def warm_up(self) -> None:
        self.encoder.warm_up()

    def analyze(self, question: str) -> Analysis:
        text = normalize(question)
        return self.analyze_clauses(split_clauses(text) or [text])

    def analyze_clauses(self, clauses: list[str] | tuple[str, ...]) -> Analysis:
        """The clauses of one question as the routing stage split them (one encoder run)."""
        clauses = list(clauses)
        text = " ".join(clauses)
        spans = clause_spans(text, clauses)
        guess = lang.identify(text)
        fallback = not guess.supported
        encoded = self.heads.read(text, self.encoder.encode, guess.code)
        t = self.heads.boundary_thresholds
        t_emergency, t_boundary = t.for_language(guess.code)
        results: list[ClauseAnalysis] = []
        for clause, (start, end) in zip(clauses, spans, strict=True):
            vector = self.heads.vector(encoded, start, end)
            scores = self.heads.boundary_scores(vector)
            folded = fold(clause)
            check = self.rules.check_emergency(folded)
            e_threshold = t.emergency_fallback if fallback else t_emergency
            if scores[EMERGENCY] >= e_threshold:
                label, source = EMERGENCY, "model"
            elif check.hit is not None:
                label, source = EMERGENCY, f"rule:{check.hit.rule_id}"
            elif fallback:
                label, source = CLINICAL, f"fallback:{guess.code}"
            elif scores[EMERGENCY] + scores[CLINICAL] >= t_boundary:
                label, source = CLINICAL, "model"
                if self.rules.asks_only_money(folded):  # a price, not advice (rules.asks_only_money)
                    label, source = LOGISTICS, "rule:money_question"
            elif (rule := self.rules.check_clinical(folded)) is not None:
                label, source = CLINICAL, f"rule:{rule}"
            else:
                label, source = LOGISTICS, "model"
            intents, intent_source, intent_scores, hits = (), "", {}, ()
            if label == LOGISTICS:
                intents, intent_source, intent_scores, hits = self._intents(clause, vector)
            results.append(ClauseAnalysis(clause, start, end, label, source, scores, check.discarded,
                                          intents, intent_source, intent_scores, hits))
        results = self._statements_as_context(results, encoded, t_emergency, t_boundary)
        results = self._follow_ups_read_with_their_clause(results, encoded, t_emergency, t_boundary)
        # The whole question is an emergency when any clause is, or when the question read as one is
        # (the model on the whole question's vector, or a red flag that spans two clauses: "I fainted.
        # Twice, with chest pain.").
        emergency = any(c.boundary == EMERGENCY for c in results)
        why = ""
        if not emergency and len(clauses) > 1:
            whole_scores = self.heads.boundary_scores(self.heads.vector(encoded))
            whole = self.rules.check_emergency(fold(text))
            e_threshold = t.emergency_fallback if fallback else t_emergency
            if whole_scores[EMERGENCY] >= e_threshold:
                emergency, why = True, f"model on the whole question ({whole_scores[EMERGENCY]:.3f})"
            elif whole.hit is not None:
                emergency, why = True, f"red flag {whole.hit.rule_id} across clauses"
        return Analysis(self.version, text, guess, fallback, emergency, tuple(results), why)

    def _statements_as_context(self, results: list[ClauseAnalysis], encoded, t_emergency: float,
                               t_boundary: float) -> list[ClauseAnalysis]:
        """A statement the model called clinical ("I take insulin for diabetes.") right before a
        logistics question is context of that question when the two read together are logistics
        (the model on their joint span: "... How do I prepare for my CT?"); so is one right after a
        logistics question that says nothing but how the patient feels about the visit ("can my
        husband come in the room with me? i get really nervous"; rules.only_a_feeling). A clinical
        rule on the statement, or a question form, keeps it clinical; an emergency is never read down."""
        out = list(results)
        for i, clause in enumerate(results):
            if clause.boundary != CLINICAL or clause.boundary_source != "model":
                continue
            if not is_statement(clause.text) or self.rules.check_clinical(fold(clause.text)) is not None:
                continue
            after = (i - 1,) if self.rules.only_a_feeling(fold(clause.text)) else ()
            for j in (i + 1, *after):  # the question it leads into first, else the one a feeling follows
                if 0 <= j < len(results) and results[j].boundary == LOGISTICS and (j == i + 1 or not is_statement(results[j].text)):
                    start, end = min(clause.start, results[j].start), max(clause.end, results[j].end)
                    out[i] = self._context_if_read_together(clause, encoded, start, end, t_emergency, t_boundary,
                                                            f"context of clause {j + 1}")
                    break
        return out

    def _follow_ups_read_with_their_clause(self, results: list[ClauseAnalysis], encoded, t_emergency: float,
                                           t_boundary: float) -> list[ClauseAnalysis]:
        """A follow-up that only points back ("how many times can I do that?", "is that ok?") says
        nothing alone: read alone the model called "how many times can i do that" clinical (0.9, as a
        dose), after "if i push it back again is there a charge?". Read with the clause before it
        (the model on their joint span): logistics there makes it that clause's context. A model
        decision only; a rule's or an emergency is never read down."""
        out = list(results)
        for i in range(1, len(out)):
            clause, before = out[i], out[i - 1]
            if clause.boundary != CLINICAL or clause.boundary_source != "model" or before.boundary != LOGISTICS:
                continue
            if leans_on_what_came_before(clause.text):
                out[i] = self._context_if_read_together(clause, encoded, before.start, clause.end, t_emergency,
                                                        t_boundary, f"a follow-up of clause {i}")
        return out

    def _context_if_read_together(self, clause: ClauseAnalysis, encoded, start: int, end: int, t_emergency: float,
                                  t_boundary: float, why: str) -> ClauseAnalysis:
        """The clause as context (logistics, no intent of its own) when the model reads the joint span
        start..end as logistics (_reads_as_logistics); else the clause unchanged."""
        joint = self.heads.boundary_scores(self.heads.vector(encoded, start, end))
        if not _reads_as_logistics(joint, t_emergency, t_boundary):
            return clause
        return dataclasses.replace(clause, boundary=LOGISTICS, intents=(), intent_source="context",
                                   boundary_source=f"model: {why} (joint logistics {joint[LOGISTICS]:.3f})")

    def _intents(self, clause: str, vector) -> tuple[tuple[str, ...], str, dict[str, float],
                                                     tuple[tuple[str, str], ...]]:
        scores = self.heads.intent_scores(vector)
        if self._lexicon is not None:
            found = tuple(self._lexicon(clause, self.heads.lexicon_untrusted))
            if found:
                return (tuple(dict.fromkeys(i for i, _ in found)), "lexicon:" + "; ".join(e for _, e in found),
                        scores, found)
        thresholds = self.heads.intent_thresholds
        intents = decide_intents(scores, thresholds.accept, thresholds.other_below)
        if "availability" in intents and self.rules.asks_price_not_booking(fold(clause)):
            # A price, not a booking (rules.asks_price_not_booking): the policy part answers it.
            intents = tuple(i for i in intents if i != "availability") or ("other",)
            return intents, "model; availability read down: a price, not a booking (rule:price_not_booking)", scores, ()
        return intents, "model", scores, ()


_QUESTION_START = frozenset(["can", "could", "should", "shall", "is", "are", "am", "do", "does", "did", "what", "whats", "how", "when", "where", "why", "which", "who", "will", "would", "may", "might", "must", "kan", "skal", "bør", "er", "har", "hva", "hvordan", "når", "hvor", "hvorfor", "hvilken", "hvilke", "må", "vil"])


MAJORITY = 0.5
_POINTING_BACK = frozenset({"that", "it", "this", "those", "them", "so", "det", "dette", "den"})
# Words a follow-up may have besides pointing back: how often, whether it is allowed (en, nb).
_FOLLOW_UP_WORDS = frozenset({"many", "much", "often", "times", "time", "ok", "okay", "fine", "alright", "allowed",
                              "again", "more", "still", "mange", "ganger", "greit", "lov", "igjen", "fortsatt"})


def _reads_as_logistics(joint: dict[str, float], t_emergency: float, t_boundary: float) -> bool:
    """The joint reading that makes a clause the model called clinical another's context: below both
    boundary thresholds and logistics by a majority. A clinical clause (0.999) is not hidden behind a
    joint reading that is mostly clinical still ("my knee aches on the outside after about 5 miles. Is
    it ok to keep running on it until my appointment?": joint logistics 0.36)."""
    return joint[EMERGENCY] < t_emergency and joint[EMERGENCY] + joint[CLINICAL] < t_boundary and \
        joint[LOGISTICS] >= MAJORITY


def leans_on_what_came_before(clause: str) -> bool:
    """A clause that points back ("that", "it") and says nothing of its own but how often or whether
    it is allowed: "how many times can i do that", "is that ok?", "can i do it again"."""
    words = set(textnorm.tokens(clause))
    return bool(words & _POINTING_BACK) and set(textnorm.content_words(clause)) <= _FOLLOW_UP_WORDS


def is_statement(clause: str) -> bool:
    """A clause that states rather than asks (no question mark, no question word first)."""
    words = clause.strip().lower().split()
    return bool(words) and not clause.rstrip().endswith("?") and words[0].strip(",.!") not in _QUESTION_START


def decide_intents(scores: dict[str, float], accept: float, other_below: float) -> tuple[str, ...]:
    """The best intent (other when even the best is below `other_below`) and every further one at
    or above `accept`, best first."""
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    best, best_score = ranked[0]
    if best_score < other_below:
        return ("other",)
    return (best, *(name for name, score in ranked[1:] if score >= accept))
