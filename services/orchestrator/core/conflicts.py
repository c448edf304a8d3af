"""Conflict detection among the top hits of a policy part (DESIGN.md §3: two current approved
versions from the same authority that disagree are shown and routed to the policy owner; the
generator is never asked to choose). The rule, kept simple and explainable:

Two of the top N hits conflict when
  1. they come from different documents, and from the same authority: the same source class, or
     two classes that are both authorities for the asked rule (AUTHORITIES, mirroring the
     validator's source policy: e.g. an arrival rule may come from scheduling_policy or
     preparation_instructions);
  2. both state the asked rule: a sentence with a topic word of the part's intent and a
     rule quantity (arrival: a lead time "N minutes before/early"; cancellation: a notice period
     "N hours before/notice", or a fee);
  3. they are about the same thing: each names a qualifier the question asked for (specialty or
     appointment type, from title, headings or text), or, when none was asked, both name the same
     qualifiers; and they are equally specific (both for every location, or both scoped to
     overlapping locations; a location-specific rule overrides a tenant-wide one, not a conflict);
  4. they disagree: the rule quantities differ;
  5. the question asks for that quantity (QUESTION_ASKS: "when should I arrive" asks for the lead
     time, "what does it cost" for the fee); "Do I take off my jewellery for the MRI?" asks for
     none, so two MRI documents that disagree on the lead time are no conflict for it.
An override (`overrides`: a clinic's own rule against the tenant-wide one) needs no common authority
(condition 1): a clinic's page that may not establish the rule (a handbook's "48 hours' notice at this
clinic") still says the tenant-wide rule does not hold there, so the answer depends on the clinic.
Pure: candidates are plain data."""

from __future__ import annotations

import dataclasses
import itertools
import re

AUTHORITIES = {
    "arrival_preparation": frozenset({"scheduling_policy", "preparation_instructions"}),
    "cancellation_rescheduling": frozenset({"cancellation_policy", "scheduling_policy"}),
}
# The unit may carry a possessive ("48 hours' notice", "a day's notice"); bokmål units too ("48 timer").
# A day may be qualified, once or twice ("3 business days' notice", "two full business days", "to
# virkedager"): a working day is read as a day (the values compared are what the documents say, not a
# calendar).
_DURATION = (r"(\d+(?:\.\d+)?)[ -]?(?:(?:business|working|clear|full|calendar|virke|arbeids)[ -]?){0,2}"
             r"(minutes?|mins?|hours?|hrs?|days?|minutter|minutt|timer|time|dager|dag|døgn)['’]?")
RULES = {
    "arrival_preparation": (
        re.compile(r"\b(arriv\w*|check[- ]?in|come in|be here|be there|møt\w*|oppmøte)\b"),
        {"lead time": re.compile(rf"\b{_DURATION} (?:before|beforehand|early|prior|ahead|in advance|før|i forveien)\b")},
    ),
    "cancellation_rescheduling": (
        re.compile(r"\b(cancel\w*|reschedul\w*|notice|no[- ]?shows?|miss(?:ed|es|ing)?|did not (?:attend|come)|"
                   r"avbestill\w*|avlys\w*|flytt\w*|beskjed|varsel|gebyr\w*|ikke[- ]møtt\w*)\b"),
        {
            "notice period": re.compile(rf"\b{_DURATION} (?:before|beforehand|in advance|notice|prior|ahead|før|i forveien|"
                                        rf"på forhånd|varsel)\b|\bnotice of {_DURATION}"),
            "fee": re.compile(r"(?:\$|usd |nok |nzd |kr\.? ?)(\d+(?:\.\d\d)?)|\b(\d+(?:\.\d\d)?) ?(?:usd|nok|nzd|kr|dollars)\b"),
        },
    ),
}
# What a question must say to ask for a rule quantity (English and nb-NO).
QUESTION_ASKS = {
    "lead time": re.compile(r"\b(arriv\w*|early|earlier|when|what time|how (long|far|many minutes)|ahead|before|"
                            r"check[- ]?in|come in|get there|be there|oppmøte|møte opp|møt opp|tidlig|når|hvor lenge|"
                            r"være der|før)\b"),
    "notice period": re.compile(r"\b(notice|when|how (late|long|far|many hours|many days)|ahead|before|in advance|"
                                r"deadline|latest|senest|frist|når|hvor (sent|lenge|mange timer|mange dager)|"
                                r"i forveien|på forhånd|før)\b"),
    "fee": re.compile(r"\b(fee|fees|cost|costs|charge\w*|pay|price|penalty|gebyr|koster|betale)\b"),
}
_UNIT_MINUTES = {"mi": 1, "ho": 60, "hr": 60, "da": 1440, "ti": 60, "dø": 1440}
_WORDS = {"fifteen": "15", "thirty": "30", "forty-five": "45", "sixty": "60", "ten": "10", "twenty": "20",
          "twenty-four": "24", "forty-eight": "48", "seventy-two": "72", "five": "5", "one": "1", "two": "2",
          "three": "3", "four": "4", "seven": "7", "fourteen": "14"}


@dataclasses.dataclass(frozen=True)
class Candidate:
    label: str
    passage_id: str
    document_id: str
    version_id: str
    source_class: str
    text: str
    context: str = ""  # title and heading path: qualifiers only, never quantities
    location_scope: tuple[str, ...] | None = None  # None: not known
    # For a rule scoped to locations: every specialty those locations offer (empty: not known). Naming
    # all of them narrows nothing there ("48 hours' notice to cancel a scan" at an imaging center);
    # an appointment type still does ("an MRI appointment at Harbor Imaging").
    offers: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class Conflict:
    first: Candidate
    second: Candidate
    explanation: str


def _prepare(text: str) -> str:
    text = " ".join(text.lower().split())
    for word, digits in _WORDS.items():
        text = re.sub(rf"\b{word}\b", digits, text)
    return text


def _value(groups: tuple[str, ...]) -> str:
    values = [g for g in groups if g]
    if len(values) >= 2 and values[1][:2] in _UNIT_MINUTES:
        return f"{float(values[0]) * _UNIT_MINUTES[values[1][:2]]:g}min"
    return values[0] if values else ""


def rule_quantities(text: str, intent: str, context: str = "") -> dict[str, frozenset[str]]:
    """The asked rule's quantities the text states, by kind (lead time, notice period, fee):
    only from sentences that also carry a topic word of the intent, or from every sentence when
    the passage's title or heading (`context`) does ("When to arrive": "Aim to get to reception
    about 15 minutes before your appointment time")."""
    return _quantities(_rule_sentences(text, intent, context))


def _quantities(sentences: list[tuple[str, dict[str, set[str]]]]) -> dict[str, frozenset[str]]:
    """What the rule sentences state together, by kind."""
    found: dict[str, set[str]] = {}
    for _, stated in sentences:
        for kind, values in stated.items():
            found.setdefault(kind, set()).update(values)
    return {k: frozenset(v) for k, v in found.items()}


def _units(text: str) -> list[str]:
    """The sentences of a text, a table row being one ("| Missed appointment | $60 |": the item and
    its amount stay together; a row's cells are not sentences of their own)."""
    units = []
    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            units.append(_prepare(line.replace("|", " ; ")).strip(" ;"))
        else:
            units.extend(re.split(r"(?<=[.!?])\s+", _prepare(line)))
    return [u for u in units if u and not re.fullmatch(r"[\s;:-]*", u)]


def _rule_sentences(text: str, intent: str, context: str) -> list[tuple[str, dict[str, set[str]]]]:
    """The sentences that state the asked rule's quantities, each with what it states."""
    spec = RULES.get(intent)
    if spec is None:
        return []
    topic, kinds = spec
    headed = bool(context) and bool(topic.search(_prepare(context)))
    out = []
    for sentence in _units(text):
        if not headed and not topic.search(sentence):
            continue
        stated: dict[str, set[str]] = {}
        for kind, pattern in kinds.items():
            for match in pattern.finditer(sentence):
                value = _value(match.groups())
                if value and not _when_a_message_is_sent(sentence, match.start()):
                    stated.setdefault(kind, set()).add(value)
        if stated:
            out.append((sentence, stated))
    return out


# A time before the appointment at which the clinic sends something ("We send a reminder text 3 days
# before every appointment", "your reminder texts, which arrive 3 days before each appointment") is
# when a message goes out, no lead time or notice period of the patient's: read as one, it "conflicted"
# with "arrive 10 minutes before" and with "cancel at least 24 hours before".
_MESSAGE_SENT = re.compile(
    r"\b(we|we'll|we will|the (app|clinic|practice|surgery|system)|it|they) (\w+ ){0,2}"
    r"(send|sends|text|texts|call|calls|ring|rings|phone|phones|email|emails|remind|reminds|message|messages)\b"
    r"|\b(reminders?|texts?|sms|messages?|letters?|e-?mails?|notifications?|calls?)\b[^.;]{0,30}?"
    r"\b(arrive|arrives|go out|goes out|are sent|is sent|come|comes|get sent|gets sent|will be sent)\b"
    r"|\b(send|sends|sent) (you )?(an? |your )?(reminder|text|sms|message|letter|e-?mail)")


def _when_a_message_is_sent(sentence: str, start: int) -> bool:
    """Whether the duration at `start` times a message the clinic sends: a sending ends at most 30
    characters before it, within the same clause."""
    before = sentence[max(0, start - 120):start]
    for cue in _MESSAGE_SENT.finditer(before):
        between = before[cue.end():]
        if len(between) <= 30 and not re.search(r"[.;]", between):
            return True
    return False


# Where a sentence turns from a reason to its rule or back: "X, so we need 48 hours' notice", "..., so
# that ...", "... because X", "... since X".
_CONNECTIVE = re.compile(r",\s*so\s+(?:that\s+)?|\s+so that\s+|,?\s+\b(?:because|since)\b\s+")


def _stating_clauses(sentence: str, intent: str) -> str:
    """The clauses of a rule sentence that state its quantity, without the reason beside them: "Physio
    and evening appointments here have long waiting lists, so we need at least 48 hours' notice" is a
    notice period for every appointment there, not a physiotherapy rule."""
    kinds = RULES[intent][1]
    stating = [clause for clause in _CONNECTIVE.split(sentence) if any(p.search(clause) for p in kinds.values())]
    return " ".join(stating) or sentence


# A proper name with a place noun or an ampersand: capitalised words joined by "&", "and", "of",
# "at", "the" ("Harbor Imaging Center", "Aspen Ridge Orthopedics & Imaging", "St. Olav Hospital").
_CAPITALISED = r"[A-Z][\w'.-]*"
_NAME = re.compile(
    rf"\b{_CAPITALISED}(?:\s+(?:&|and|of|at|the|{_CAPITALISED}))*\s+(?:&\s+{_CAPITALISED}|"
    r"(?:Center|Centre|Clinic|Clinics|Hospital|Practice|Campus|Surgery|Group|Partners|Associates|Health)\b)")


_NAME_FILLERS = frozenset({"&", "and", "of", "at", "the", "center", "centre", "clinic", "clinics", "hospital",
                           "practice", "campus", "surgery", "group", "partners", "associates", "health"})


def _unless_a_service(match: re.Match[str], vocabulary_words: set[str]) -> str:
    """A name's words go unless all of them are a service's ("Cardiology Clinic", "Imaging Center")."""
    words = [w.strip(".,'").lower() for w in match.group(0).split()]
    proper = [w for w in words if w not in _NAME_FILLERS and w not in vocabulary_words]
    return " " if proper else match.group(0)


def qualifiers(text: str, vocabulary: dict[str, tuple[str, ...]], implies: dict[str, str] | None = None) -> frozenset[str]:
    """Keys of the vocabulary (specialties, appointment types) the text names (plural too), with
    the specialties those types imply. A name is no qualifier: "Imaging" in "Patient FAQ - Aspen
    Ridge Orthopedics & Imaging" or "at Harbor Imaging Center" says whose rule, not for what."""
    vocabulary_words = {w for phrases in vocabulary.values() for p in phrases for w in p.split()}
    lowered = " ".join(_NAME.sub(lambda m: _unless_a_service(m, vocabulary_words), text).lower().split())
    keys = {
        key for key, phrases in vocabulary.items()
        if any(re.search(rf"(?<![\w-]){re.escape(p)}s?(?![\w-])", lowered) for p in phrases)
    }
    for key in list(keys):
        if implies and key in implies:
            keys.add(implies[key])
    return frozenset(keys)


def _same_specificity(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> bool:
    if a is None or b is None:
        return True
    if not a and not b:
        return True
    if bool(a) != bool(b):
        return False  # the location-specific rule overrides the tenant-wide one
    return bool(set(a) & set(b))


# A clinic's sentence that says its rule is the group's ("The fee amounts themselves are the same as at our
# other clinic", "Reglene for fastende prøver er de samme som ellers") states no rule of its own there.
_SAME_AS_ELSEWHERE = re.compile(
    r"\b(the )?same as (at |in |for )?(our|the|all) other (clinics?|offices?|sites?|locations?|practices?|surgery|surgeries)\b|"
    r"\b(the )?same as (elsewhere|everywhere( else)?|at every (clinic|office|site))\b|"
    r"\bas (at|in) (our|all|the) other (clinics?|offices?|sites?|locations?|practices?)\b|"
    r"\b(de|det|den) samme som (ellers|overalt|på (de|våre) andre|ved (de|våre) andre)\b|"
    r"\bsom (ellers|overalt|på (de|våre) andre (legekontorene|kontorene|stedene|klinikkene)|ved (de|våre) andre)\b")


def says_the_same_as_elsewhere(text: str) -> bool:
    """Whether a sentence says the rule it states is the one at the other clinics (no rule of its own)."""
    return bool(_SAME_AS_ELSEWHERE.search(_prepare(text)))


def asked_kinds(question: str) -> frozenset[str]:
    """The rule quantities the question asks for (condition 5: QUESTION_ASKS)."""
    lowered = " ".join(question.lower().split())
    return frozenset(kind for kind, pattern in QUESTION_ASKS.items() if pattern.search(lowered))


def asks_the_rule(question: str, intent: str) -> frozenset[str]:
    """The rule quantities a question asks for when it also names the rule's topic ("how early do I
    have to be there?", "how late can I cancel?"): asked_kinds alone is only a necessary condition
    ("how long do I go without food" asks no arrival lead time)."""
    spec = RULES.get(intent)
    if spec is None or not spec[0].search(_prepare(question)):
        return frozenset()
    return asked_kinds(question) & frozenset(spec[1])


def _for_whom(cand: Candidate, sentences: list[tuple[str, dict[str, set[str]]]], intent: str,
              vocabulary: dict[str, tuple[str, ...]], implies: dict[str, str] | None, overrides: bool) -> frozenset[str]:
    """The specialties and appointment types a passage's rule is for, from its stating sentences.
    A sentence "for every scan - MRI, CT and X-ray" names what it covers, not a subgroup. For an
    override, a passage whose rule holds for everyone in one sentence ("check in 15 minutes before",
    then "new patients should plan on 20 minutes") is a rule for every appointment; otherwise every
    sentence's qualifiers count."""
    per_sentence = []
    for sentence, _ in sentences:
        stated = _stating_clauses(sentence, intent)
        per_sentence.append(frozenset() if _FOR_EVERY.search(stated) else
                            qualifiers(f"{cand.context} {stated}", vocabulary, implies))
    if not per_sentence:
        return frozenset()
    if not overrides:
        return frozenset.union(*per_sentence)
    named = frozenset.intersection(*per_sentence)
    if cand.location_scope and cand.offers and cand.offers <= named:
        named -= cand.offers
    return named


_FOR_EVERY = re.compile(r"\b(?:every|all|any|each)\s+(?:\w+\s+){0,2}?(?:scans?|appointments?|visits?|exams?|"
                        r"examinations?|tests?|procedures?|sessions?|patients?|types?)\b", re.IGNORECASE)


def detect(candidates: list[Candidate], intent: str, vocabulary: dict[str, tuple[str, ...]],
           asked: frozenset[str] = frozenset(), implies: dict[str, str] | None = None,
           top_n: int = 4, question: str | None = None, overrides: bool = False) -> Conflict | None:
    """The first conflicting pair among the top N candidates (rank order), or None. With
    `question`, only the quantities it asks for (condition 5) can conflict. `overrides`: instead,
    the first pair where one rule is scoped to a location and the other is tenant-wide and they
    share no quantity (conditions 1–5 otherwise alike): no conflict, but an answer that depends on
    the clinic ("arrive 30 minutes early at Bayside" beside "15 minutes" for every clinic)."""
    if intent not in RULES:
        return None
    wanted = None if question is None else asked_kinds(question)
    if wanted is not None and not wanted:
        return None
    stating = []
    for cand in candidates[:top_n]:
        sentences = _rule_sentences(cand.text, intent, cand.context)
        found = _quantities(sentences)
        if found:
            # Who a rule is for is read where the rule is stated (its sentences, title and headings),
            # not from a reason elsewhere in the passage ("Many of the appointments at Oakfield are
            # longer physiotherapy and nurse sessions ..." before "give us at least 48 hours' notice").
            stating.append((cand, found, _for_whom(cand, sentences, intent, vocabulary, implies, overrides)))
    authorities = AUTHORITIES.get(intent, frozenset())
    for (a, qa, wa), (b, qb, wb) in itertools.combinations(stating, 2):
        if a.document_id == b.document_id:
            continue
        if not overrides and a.source_class != b.source_class and \
                not {a.source_class, b.source_class} <= authorities:
            continue
        if asked:
            # Both rules must apply to what was asked; for an override, a rule for every appointment
            # (no qualifier) applies to it too ("arrive 10 minutes before" everywhere, "20 minutes"
            # at the unit, for "how early for my scan?").
            if not all(w & asked or (overrides and not w) for w in (wa, wb)):
                continue
        elif wa != wb:
            continue
        if overrides:
            if a.location_scope is None or b.location_scope is None or bool(a.location_scope) == bool(b.location_scope):
                continue
        elif not _same_specificity(a.location_scope, b.location_scope):
            continue
        for kind in sorted(set(qa) & set(qb)):
            if wanted is not None and kind not in wanted:
                continue
            # An override is a clinic's rule that shares no quantity with the tenant-wide one: where
            # they share one (15 minutes everywhere, 30 at Northgate for new patients only) which
            # applies turns on who asks, which these quantities alone cannot tell.
            if qa[kind] != qb[kind] and not (overrides and qa[kind] & qb[kind]):
                about = ", ".join(sorted((wa & asked) if asked else wa)) or "no qualifier"
                scope = " (one scoped to a location, one tenant-wide)" if overrides else ""
                return Conflict(a, b, (
                    f"{a.label} ({a.document_id}, {a.source_class}) and {b.label} ({b.document_id}, "
                    f"{b.source_class}): same authority for the {intent} rule ({about}){scope}, {kind} "
                    f"{'/'.join(sorted(qa[kind]))} vs {'/'.join(sorted(qb[kind]))}"))
    return None
