"""Relevance before citation (seed 000: "ranking first is no reason to be cited"). A sentence that
is true and well cited may still not answer the question asked; such a sentence is never shown.

One rule, two signals, both explainable from the question and the offered passages alone:

1. Coverage. The question's KEY TERMS are its stemmed content words minus stop words (English and
   Norwegian function words), minus generic words that say nothing about the topic ("clinic",
   "appointment", "happen", numbers), minus the words that only say which KIND of question it is
   (the part's intent vocabulary: "arrive", "early" for arrival; "cancel", "fee" for
   cancellation). A candidate sentence covers a key term when the term occurs in the sentence or
   in its passage's title or heading path (the same stem, or one word a prefix of the other with at
   least 5 letters: inflections the English stemmer does not know, "avbestiller"/"avbestilling").
   coverage = covered key terms / key terms (1.0 when the question has none), the better of the whole
   question's and its asking clauses' alone (`asked_clauses`: a statement beside the question is
   context, "I'm due for my review after my heart attack - where do I check in?"). A sentence may become
   a claim only when coverage >= the threshold (services/generation/settings.py
   `relevance_threshold`, chosen on the eval's "should answer" vs "should abstain" cases).
2. Named entities. A provider named with a title ("Dr. Quinn Nobody") or a place named with a place
   noun ("Cedar Main Street Clinic") whose distinctive words occur in none of the offered passages
   means the evidence is about someone or somewhere else: no claim at all.
3. The thing asked for. A question whether the clinic offers or has something ("Do you offer teeth
   whitening?", "Is there an EV charger in the lot?", "Can I get my COVID booster there?", "Har dere
   ...?") names it; when the offered passages never mention its informative words, nothing offered
   can confirm or deny it, however close the topic ("Parking in the plaza lot is free"): no claim at
   all (`missing_asked_thing`).

If no sentence qualifies, the generator returns no claims and the part abstains honestly.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata

from citetrace import lay
from citetrace.idf import shipped as shipped_idf
from citetrace.textnorm import thing_absent

from services.generation import claimtext

_STEM = claimtext.stem
# Chosen on the eval's cases (tests/eval/cases.yaml, "should answer" vs "should abstain"): see
# bench/results/relevance-threshold.json and the report in the commit that set it.
DEFAULT_THRESHOLD = 0.25


def _stems(words: str) -> frozenset[str]:
    return frozenset(_STEM(w) for w in words.split())


# Words of a question that say nothing about what it is about.
GENERIC = _stems(
    """what when where which who how why need do does i i'm im my me is are there tell know want would like
    anything something everything anyone anybody someone thing question clinic clinics appointment
    appointments visit visits center centre office happen happens happened run running get go going come
    coming take give let make say ask still ok okay allowed allow able possible way best usually really
    exactly ever already yet just now time times please thanks thank hi hello dr family much many often
    long soon far simply
    work works seen see accept accepts book booking bookings regular normal usual general
    year years month months week weeks day days today tomorrow yesterday last next
    u ye ya yous youse yall y'all ur appt appts appmt apt pls plz tmrw tmr tmw 2moro 2day thx
    hey hiya lol haha omg btw supposed meant gotta gonna wanna hafta slot slots
    kia ora howdy g'day gday cheers""")
# (The last line: "you" and "your" as patients type them, "do u need", "can ye"; a key term of them
# was the whole topic of "How much notice do ye need if I have to cancel?", and no sentence covered it;
# and the generic words above as patients abbreviate them: "how early b4 my appt"; chat greetings and
# fillers (greetings of the locales the probes write in: "kia ora", "g'day"), and obligation said as patients say it ("how much notice r u supposed to give", "do i gotta"),
# which say nothing of the topic; a slot is the appointment's time: "15 mins after my slot".)
# Stop words after stemming: fragments such as "ins" of "walk-ins" stem to one ("in").
_STOP_STEMS = frozenset(_STEM(w) for w in claimtext.STOPWORDS)
# Norwegian (nb-NO) function words and generic words ("time"/"timen" = the appointment).
NORWEGIAN = _stems(
    """hva hvor hvordan hvilken hvilke hvem når jeg meg min mitt mine du deg din ditt vi oss er var det
    den de dette på til ved hos i og for om hvis en et ei som av å kan må skal vil bør har ha få fikk
    noe noen ikke nå da så eller men fra etter timen timer time klinikken klinikk""")
# The vocabulary that only says which kind of question a part is (its intent), never the topic.
INTENT_WORDS: dict[str, frozenset[str]] = {
    "ARRIVAL_PREPARATION": _stems(
        """arrive arrival arriving early earlier earliest latest late before minutes minute check checkin prepare preparation
        bring wear fast fasting come present komme tidlig møte oppmøte ta med sent turn show reach"""),
    "CANCELLATION_RESCHEDULING": _stems(
        """cancel cancelled cancelling cancellation reschedule rescheduling change move fee fees charge charged
        latest deadline
        pay cost costs notice hours advance late miss missed no-show show turn avbestille avbestiller avbestilling
        gebyr flytte koster betale sent"""),
    "PROVIDER_INFORMATION": _stems(
        """dr doctor provider physician specialist clinician"""),
    "AVAILABILITY": _stems("""book booking available availability slot slots open"""),
}
#: Every intent's vocabulary: the words that say what kind of question it is.
# What kind of price is asked ("the self pay price", "out of pocket", "privately") says how it is paid, not
# what for: "Self-pay price: $245" for a visit is no price of a cortisone shot.
_PRICE_KIND = _stems("price prices priced pricing self private privately pocket insured uninsured rebate")
KIND_WORDS = frozenset().union(*INTENT_WORDS.values(), _PRICE_KIND)
# A place noun ends a place name; these words of a place name are not distinctive on their own.
_PLACE_NOUNS = ("clinic", "center", "centre", "hospital", "street", "practice", "surgery")
# Words of a place's name that name no place alone; "one" of a nickname ("the hospital one", "the town
# centre one": Morven's "One adult may come in with you" read as naming its hospital ward).
_PLACE_GENERIC = frozenset({"clinic", "center", "centre", "hospital", "street", "practice", "surgery", "family",
                            "imaging", "medical", "health", "main", "the", "at", "of", "one", "ones", "by", "near"})
_NAME_FUNCTION_WORDS = frozenset({"the", "at", "of", "on", "in", "and"})
_CAP = r"[A-ZÆØÅÀ-ÖØ-Þ][\w'-]*"
_TITLED = re.compile(rf"\b(?:Dr\.?|Doctor)\s+({_CAP}(?:\s+{_CAP})*)")
_PLACE = re.compile(rf"\b((?:{_CAP}\s+){{1,4}})(?:{'|'.join(n.capitalize() for n in _PLACE_NOUNS)})\b")
_SENTENCE = re.compile(r"(?<=[.!?。？！])\s*")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def question_sentences(question: str) -> str:
    """The question without sentences addressed to an assistant ("Ignore previous instructions ...") and
    without a greeting or thanks of its own."""
    parts = [p for p in _SENTENCE.split(unicodedata.normalize("NFC", question)) if p.strip()]
    kept = [p for p in parts if not claimtext.looks_like_instruction(p)]
    return lay.without_greeting(" ".join(kept or parts))


_CJK_RUN = re.compile(r"[\u3040-\u30FF\u4E00-\u9FFF]+")


def terms(text: str) -> frozenset[str]:
    """claimtext.content_set, with each run of Chinese/Japanese characters (no spaces between
    words) as its character bigrams ("免费口译" -> 免费, 费口, 口译) instead of one long token, and
    the thing a word says is absent ("cashless", "smokefree") beside the word: "The clinic is
    cashless" is about cash."""
    runs = _CJK_RUN.findall(text)
    base = claimtext.content_set(_CJK_RUN.sub(" ", text) if runs else text) | _absent_things(text)
    if not runs:
        return base
    grams = {run[i:i + 2] for run in runs for i in range(max(1, len(run) - 1))}
    return base | frozenset(grams)


def _absent_things(text: str) -> frozenset[str]:
    """The stems of X in "Xless" and "Xfree" (cashless, paperless, smokefree), content words only."""
    return claimtext.content_set(" ".join(filter(None, map(thing_absent, claimtext.tokens(text)))))


# Questions whose answer is an amount (answer typing, as in question answering): a duration or a
# time, or a price. "How much notice do you need?" is not answered by "the same notice
# applies", nor by the fee for less notice, however close in meaning; "How long is a first physio
# session?" not by what to wear.
_ASKS_DURATION = re.compile(
    r"\bhow (?:long|early|late|soon|far ahead|far in advance)\b|\bhow (?:much|many) (?:\w+ ){0,2}?"
    r"(?:notice|time|warning|minutes|hours|days|weeks|before|earlier|ahead|in advance)\b|\bwhat time\b|\bby when\b"
    r"|\bwhat(?:'s|s| is)? (?:the )?notice\b|\bnotice period\b"
    # a deadline or the first moment asked for ("what's the latest I can cancel", "the earliest we can come")
    r"|\b(?:latest|earliest|soonest)\b(?= (?:i|we|you|u|ye|they|he|she|my|time|possible|point|day|moment)\b)"
    r"|\bdeadline\b"
    r"|\bhvor (?:lenge|tidlig|sent)\b|\bhvor mye (?:\w+ )?(?:varsel|tid)\b|\bnår må\b", re.IGNORECASE)
# "How much" asks a price when nothing but an amount of money can follow it ("how much is it", "how
# much for a filling", "how much does it cost", "how much will medicare give me back", "how much
# money"), not an amount of something else ("how much water do I drink", "how much blood do they
# take", "how much do I need to drink").
_ASKS_PRICE = re.compile(
    r"\bhow much\b(?=\s*(?:[?.!,]|$|is\b|are\b|was\b|were\b|'s\b|s\b|for\b|to\b|it\b|that\b|this\b|money\b|cash\b"
    r"|roughly\b|approx\w*|about\b|extra\b|more\b|altogether\b|in total\b|[$£€]|would (?:it|that|this|i|we) (?:be|cost|pay)\b"
    r"|will (?:it|that|this|i|we) (?:be|cost|pay)\b|(?:do|does|did|would|will|can|could|should) \w+"
    r"[^?.!]{0,40}\b(?:cost|costs|charge|charges|pay|paid|set me back|owe|give (?:me |us |you )?back|get back|claim back"
    r"|refund\w*|rebate\w*|reimburs\w*|cover|covers|subsidi[sz]e\w*)\b))"
    r"|\bwhat(?:'s|s| is| are| does)? (?:the |it )?(?:fee|fees|cost|costs|charge|charges|price|prices)\b"
    r"|\bwhat (?:would|will|does|do|did) (?:it|that|this|you|ye|u) (?:\w+ )?(?:cost|charge)\b"
    r"|\bhva koster\b|\bhvor mye\b(?=\s*(?:[?.!,]|$|koster\b|er (?:det|den|prisen|egenandelen)\b|blir (?:det|den|prisen)\b"
    r"|tar (?:dere|de|du)\b|må (?:jeg|vi) (?:betale|ut med)\b|betal\w*|kr\b|penger\b))", re.IGNORECASE)
_DURATION_UNITS = frozenset({"minute", "hour", "day", "week", "month", "year", "clock"})
_PRICE_UNITS = frozenset({"usd", "eur", "gbp", "nok", "nzd"})
# A price in words of its own or a currency sign ("free of charge", "no fee", "kr").
_PRICE_WORDS = re.compile(r"\b(?:free|no (?:charge|fee|cost)|at no cost|without charge|gratis|kostnadsfri)\b"
                          r"|[$€£]|\b(?:nz\$|kr|nok|usd|eur|gbp)\b", re.IGNORECASE)
# A duration in words: a time unit with a word that measures it ("within 5 working days", "a week", "the
# same day"; not "once in each calendar year"), or a time of day, in figures or in words ("9:00 to 17:00",
# "8am", "noon", "kl. 22"), a number in figures or words (en, nb: "fifteen minutes", "fem minutter").
_NUMBER_WORDS = (r"two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|"
                 r"forty-five|sixty|ninety|tre|fem|seks|sju|syv|åtte|ni|ti|tolv|femten|tjue|tretti|"
                 r"førtifem|seksti")
_TIME_WORDS = re.compile(r"\b(?:\d+|a|an|few|couple of|several|same|the|within|one|en|et|noen|samme|"
                         rf"{_NUMBER_WORDS})\s+(?:\w+\s+)?"
                         r"(?:minutes?|mins?|hours?|hrs?|days?|weeks?|fortnights?|months?|years?|minutt(?:er)?|"
                         r"time|timer|dager?|virkedager?|arbeidsdager?|hverdager?|døgn|uker?|måneder?)\b|\b(?:noon|midday|midnight)\b"
                         r"|\b\d{1,2}[:.]\d{2}\b|\b\d{1,2} ?(?:am|pm|a\.m\.|p\.m\.)|\b(?:kl\.?|klokka|klokken) ?\d{1,2}\b",
                         re.IGNORECASE)


# How far ahead of the appointment ("how early should I rock up?", "how long before do I need to be there"):
# a duration, which opening hours ("Monday to Friday, 7:30 am - 6 pm") do not state.
_ASKS_LEAD_TIME = re.compile(r"\bhow (?:early|far ahead|far in advance)\b|\bhow (?:long|much|many) (?:\w+ ){0,2}?"
                             r"(?:before|earlier|ahead|in advance|prior)\b|\bhvor tidlig\b", re.IGNORECASE)
# A span of clock times: opening hours, not a time to come.
_CLOCK = r"(?:\d{1,2}(?:[:.]\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)?|noon|midday|midnight)"
_CLOCK_RANGE = re.compile(rf"\b{_CLOCK}\s?(?:-|\u2013|\u2014|to|until|till|til)\s?{_CLOCK}(?![\w:])", re.IGNORECASE)


def asked_amount(question: str) -> str:
    """What kind of amount the question's asking clauses ask for: "lead time" (how early, how long
    before), "duration" (how long, how much notice, what time), "price" (how much, what's the fee), or
    "". (Not "how many" or "how often": "as often as you like" answers them without a number.)"""
    asked = asked_clauses(question) or question_sentences(question)
    for kind, pattern in (("lead time", _ASKS_LEAD_TIME), ("duration", _ASKS_DURATION), ("price", _ASKS_PRICE)):
        if pattern.search(asked):
            return kind
    return ""


def states_amount(text: str, kind: str) -> bool:
    """Whether the text states an amount of that kind (asked_amount's): a number with a time unit, a
    time unit or a time of day for a duration (for a lead time, not a span of clock times: opening
    hours); a currency, or a price in words ("free of charge"), for a price."""
    if kind == "lead time":
        return states_amount(_CLOCK_RANGE.sub(" ", text), "duration")
    units = {unit for _, unit in claimtext.quantities(text)}
    if kind == "duration":
        return bool(units & _DURATION_UNITS) or bool(_TIME_WORDS.search(text))
    if kind == "price":
        return bool(units & _PRICE_UNITS) or bool(_PRICE_WORDS.search(text))
    return False


# Clause ends inside a sentence: "I'm due for my review - where do I check in?"
_CLAUSE = re.compile(r"(?<=[.!?;:])\s+|\s+[-\u2013\u2014]+\s+")
_INTERROGATIVE = re.compile(
    r"^(?:what|when|where|which|who|whom|whose|how|why|is|are|am|was|do|does|did|can|could|will|would|should|"
    r"shall|may|might|must|hva|hvor|hvordan|hvilken|hvilke|hvem|når|kan|må|skal|bør|er)\b", re.IGNORECASE)


# A clause that tells something has a person in it ("I'm due for my review", "my son has a fever",
# "you said 15 minutes"); one without a person names the topic the question asks about.
_PERSON = re.compile(
    r"\b(?:i|i'm|im|i've|ive|i'll|i'd|me|my|mine|myself|we|we're|our|us|you|your|he|she|his|her|him|they|their|"
    r"them|jeg|meg|min|mitt|mine|vi|oss|vår|vårt|han|hun|hans|hennes|dem|deres)\b", re.IGNORECASE)


def asked_clauses(question: str) -> str:
    """The clauses of the question that ask something, with the topic fragments they refer to, or
    "" when that is the whole question. A statement beside a question ("I'm due for my yearly
    review after last year's heart attack - where do I check in?") is context: it may say why the
    patient asks (a sick child for a late cancellation), or only tell a story. A fragment without a
    person is no statement but what is asked about ("parking at Quarry St - is it free?": without
    it, "is it free?" asks about anything free)."""
    text = question_sentences(question)
    clauses = [c.strip() for c in _CLAUSE.split(text) if c.strip()]
    asking = [c for c in clauses if c.endswith("?") or _INTERROGATIVE.match(c)]
    kept = [c for c in clauses if c in asking or not _PERSON.search(c)]
    return " ".join(kept) if asking and len(kept) < len(clauses) else ""


def key_terms(question: str, intent: str, place_names: tuple[str, ...] = ()) -> frozenset[str]:
    """What the question asks ABOUT. The names of the provider or place it asks about are not
    among them: signal 2 checks those; coverage is about what is asked of them ("parking" at
    Northgate, not "Northgate"). `place_names`: how the question names the place its passages were
    chosen for (the caller resolved it, written any way: "the riverbend hub"), likewise no topic."""
    return _key_terms(question_sentences(question), question, intent, place_names)


def asked_key_terms(question: str, intent: str, place_names: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The key terms of the asking clauses alone (None when they are the whole question). A unit
    covering these answers what was asked even when the context clause's story is not in it."""
    asked = asked_clauses(question)
    return _key_terms(asked, question, intent, place_names) if asked else None


# English contractions spelled out before the key terms are read: "can't" would leave "ca", "I'll"
# a term of its own; the words they stand for are function words.
_CONTRACTIONS = (("can't", "can not"), ("won't", "will not"), ("shan't", "shall not"), ("'ll", " will"),
                 ("'re", " are"), ("'ve", " have"), ("'m", " am"), ("'d", " would"))


def _spelled_out(text: str) -> str:
    text = text.replace("\u2019", "'")
    for short, full in _CONTRACTIONS:
        text = re.sub(re.escape(short), full, text, flags=re.IGNORECASE)
    return text


def _key_terms(text: str, question: str, intent: str, place_names: tuple[str, ...]) -> frozenset[str]:
    found = terms(_spelled_out(text))
    drop = GENERIC | NORWEGIAN | INTENT_WORDS.get(intent, frozenset()) | _STOP_STEMS
    drop |= frozenset(_STEM(w) for w in claimtext.NEGATION_CUES | claimtext.QUALIFIER_CUES | {"ikke"})
    drop |= frozenset(_STEM(w) for w in _name_words(question, place_names))
    if intent == "ARRIVAL_PREPARATION" and _ASKS_WHEN_TO_COME.search(question):
        drop |= frozenset(_STEM(w.lower()) for w in _visit_words(_spelled_out(question))) | _WHEN_OF_THE_VISIT
    if intent == "CANCELLATION_RESCHEDULING":
        drop |= frozenset(_STEM(w.lower()) for w in _cancelled_visit_words(_spelled_out(question)))
        if _CANCELLED_VISIT.search(_spelled_out(question)):
            drop |= _WHEN_OF_THE_VISIT
    return frozenset(t for t in found if t not in drop and not any(ch.isdigit() for ch in t))


# The visit a question about when to come is asked for, named after "for/before/to my" ("What time should
# I be at the Tully Street clinic for my eye test?"): the occasion of the question, not its topic. A rule
# for every visit answers it ("Please arrive 10 minutes before your appointment"); a rule for that visit
# still ranks first by its shared words, but the visit's words no longer decide whether a unit may answer
# at all. Only when to come: what to eat, wear or bring before a visit is the visit's own ("stop eating
# before my CT", "what to wear for my knee").
_ASKS_WHEN_TO_COME = re.compile(r"\b(arriv\w*|get (there|here|in)|be (there|here|at|in)|show up|turn up|come in|"
                                r"how early|what time|check in|møte opp|komme)\b", re.IGNORECASE)
_VISIT = re.compile(r"\b(?:for|before|b4|to|til|før)\s+(?:my|his|her|our|their|your|the|a|an|min|mitt|mine)\s+"
                    r"((?:[\w'-]+\s+){0,2}?[\w'-]+)\s*(?=$|[?.!,;]|\s(?:on|at|in|this|next|tomorrow|today|tmrw|"
                    r"tonight|morning|afternoon|with|please|pls)\b)", re.IGNORECASE)


# When the visit is ("booked in at Fennessy Quay tues, how early should I get there?") is its occasion
# too: how early to come does not depend on the day. Only in a question about when to come: in "are
# you open on Saturday?" the day is what is asked.
_WHEN_OF_THE_VISIT = _stems("""monday tuesday wednesday thursday friday saturday sunday mon tue tues wed weds thu
    thur thurs fri sat sun morning mornings afternoon evening arvo tonight""")


def _visit_words(question: str) -> list[str]:
    return [w for m in _VISIT.finditer(question) for w in re.findall(r"[\w'-]+", m.group(1))]


# Likewise the visit a cancellation or a move is for ("need to cancel my coil fitting at Calderbrae next
# week, how much notice do you need?"), and when it is: the notice, the fee and the way to cancel are
# the rule for every appointment unless a rule for that visit says otherwise, and such a rule still
# ranks first by the words it shares.
_CANCELLED_VISIT = re.compile(
    r"\b(?:cancel\w*|move|moving|reschedul\w*|rearrang\w*|change|changing|push(?:ing)? back|call(?:ing)? off|"
    r"pull(?:ing)? out of|miss|missed|missing|skip|skipped|bail on)\s+(?:my|his|her|our|their|the|a|an|this|that|"
    r"tomorrow's|today's|min|mitt)\s+((?:[\w'-]+\s+){0,2}?[\w'-]+)\s*(?=$|[?.!,;]|\s(?:on|at|in|this|next|"
    r"tomorrow|today|tmrw|tonight|morning|afternoon|with|please|pls|for|because|bc|cos|as|and|but|i|if)\b)",
    re.IGNORECASE)


def _cancelled_visit_words(question: str) -> list[str]:
    return [w for m in _CANCELLED_VISIT.finditer(question) for w in re.findall(r"[\w'-]+", m.group(1))]


def covers(term: str, stems: frozenset[str]) -> bool:
    if term in stems:
        return True
    return any(min(len(term), len(s)) >= 5 and (s.startswith(term) or term.startswith(s)) for s in stems)


def coverage(terms: frozenset[str], stems: frozenset[str]) -> float:
    """The share of the question's key terms the unit covers; none when the key terms name a topic
    (words beyond the vocabulary that only says what kind of question it is: bring, fee, book) and
    the unit covers none of the topic: "Bring a photo ID" shares "bring" with "Can I bring my dog?"
    and answers nothing about the dog. The intent a part was routed to drops its own kind words
    before this; a question routed to no intent keeps them, so this is what stops them counting."""
    if not terms:
        return 1.0
    topic = terms - KIND_WORDS
    if topic and not any(covers(t, stems) for t in topic):
        return 0.0
    return sum(covers(t, stems) for t in terms) / len(terms)


@dataclasses.dataclass(frozen=True)
class Entity:
    surface: str
    distinctive: tuple[str, ...]


def named_entities(question: str) -> list[Entity]:
    """Providers named with a title and places named with a place noun."""
    text = question_sentences(unicodedata.normalize("NFC", question))
    found: list[Entity] = []
    for match in _TITLED.finditer(text):
        words = tuple(w.casefold() for w in match[1].split())
        found.append(Entity(match[0], words))
    for match in _PLACE.finditer(text):
        words = tuple(w.casefold() for w in match[1].split() if w.casefold() not in _PLACE_GENERIC)
        # A capitalised sentence opening ("Is Northgate ...") is not part of the name.
        if words:
            found.append(Entity(match[0].strip(), words))
    return found


def _name_words(question: str, place_names: tuple[str, ...]) -> set[str]:
    """The words that name whom or where the question asks about: the distinctive words of the
    providers and places it names, and of the resolved place names given (as for a named place,
    not the generic words of a name: "Center", "Clinic")."""
    words = {w for entity in named_entities(question) for w in entity.distinctive}
    words.update(w for name in place_names for w in place_words(name))
    # A resolved place name the question writes out whole names the place with every word of it,
    # the generic ones too: "Street" in "the Quay Street clinic" is no topic, and left in, every
    # sentence naming Quay Street covered "how early should I get to the Quay Street clinic?".
    written = " ".join(re.findall(r"[\w'-]+", _fold(question)))
    for name in place_names:
        phrase = " ".join(re.findall(r"[\w'-]+", _fold(name)))
        if phrase and re.search(rf"(?<![\w'-]){re.escape(phrase)}(?![\w'-])", written):
            words.update(w for w in phrase.split() if w not in _NAME_FUNCTION_WORDS)
    return words - _CAPITALISED_FUNCTION_WORDS


def names_a_place(text: str, place_names: tuple[str, ...]) -> bool:
    """Whether the text names one of the places (every distinctive word of one of the names)."""
    vocabulary = set(re.findall(r"[\w'-]+", _fold(text)))
    return any(words and words <= vocabulary for words in map(place_words, place_names))


def writes_a_place_name(text: str, place_names: tuple[str, ...]) -> bool:
    """Whether the text writes one of the names as a name: its words in order, its distinctive words
    capitalised ("Quayside has no lot of its own"; not "the main entrance" for a clinic called Main
    Street)."""
    for name in place_names:
        words = re.findall(r"[\w'-]+", name)
        distinctive = place_words(name)
        if not distinctive:
            continue
        for match in re.finditer(r"(?<![\w'-])" + r"\W+".join(map(re.escape, words)) + r"(?![\w'-])", text, re.IGNORECASE):
            written = re.findall(r"[\w'-]+", match.group(0))
            if all(w[:1].isupper() for w in written if _fold(w) in distinctive):
                return True
    return False


def place_words(name: str) -> set[str]:
    return {w for w in re.findall(r"[\w'-]+", _fold(name)) if w not in _PLACE_GENERIC} - _CAPITALISED_FUNCTION_WORDS


def without_entity_names(question: str, place_names: tuple[str, ...] = ()) -> str:
    """The question with the words that name its providers and places taken out."""
    words = _name_words(question, place_names)
    if not words:
        return question
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")\b",
                         re.IGNORECASE)
    return " ".join(pattern.sub(" ", question).split())


# A provider named as whom an appointment is with ("at his appointment with Dr Halvorsen") names the
# occasion, not what is asked about: a rule for every appointment answers for that one too.
_OCCASION_WITH = re.compile(r"\b(?:appointments?|appts?|visits?|check-?ups?|consult(?:ation)?s?|sessions?|"
                            r"bookings?|time|timen)\s+(?:with|hos)\s+$", re.IGNORECASE)


def missing_entities(question: str, passage_texts: list[str]) -> list[str]:
    """Named entities of the question of which some distinctive word occurs in no offered passage,
    except a provider named only as whom the appointment is with."""
    vocabulary: set[str] = set()
    for text in passage_texts:
        vocabulary.update(re.findall(r"[\w'-]+", _fold(text)))
    missing = []
    text = question_sentences(unicodedata.normalize("NFC", question))
    # Only when every mention is the occasion ("with Dr. Lee ... does Dr. Lee take new patients" asks about her).
    mentions = [(match[0], bool(_OCCASION_WITH.search(text[: match.start()]))) for match in _TITLED.finditer(text)]
    occasion_only = {name for name, _ in mentions if all(occasion for other, occasion in mentions if other == name)}
    for entity in named_entities(question):
        if entity.surface in occasion_only:
            continue
        words = [w for w in entity.distinctive if w not in _CAPITALISED_FUNCTION_WORDS]
        if words and not all(w in vocabulary for w in words):
            missing.append(entity.surface)
    return missing


# Signal 3: what an offer or existence question asks for ("do you offer X", "is there X", "can I bring
# X", "har dere X", "finnes det X", "kan jeg ta med X"), or what a price question prices, up to the
# first clause boundary. Not "can I
# get / have X": its object is as often what the question is not about ("can I have a coffee before
# my bloods", "could I get a scan done on a Sunday": when, not what).
_YOU = (r"(?:you|ye|u|ya|yous|youse|y'all|you guys|your (?:clinic|practice|surgery|office|team|staff|doctors?|"
        r"nurses?)|the (?:clinic|practice|surgery|office))")
_ASKED_THING = re.compile(
    rf"\b(?:do|does|can|could|will|would)\s+{_YOU}\s+(?:offer|have|do|provide|give|sell|stock|run|fit|perform|"
    r"rent(?: out)?|hire(?: out)?|lend|loan|"
    r"carry out|accept|take)\s+(?P<offer>[^,.;:!?]+)"
    r"|\b(?:is|are)\s+there\s+(?P<there>[^,.;:!?]+)"
    r"|\b(?:can|could|may)\s+(?:i|we)\s+bring\s+(?P<bring>[^,.;:!?]+)"
    r"|\b(?:can|could|may)\s+(?:i|we)\s+(?:borrow|rent|hire)\s+(?P<borrow>[^,.;:!?]+)"
    # and what one would drop in for ("can I just pop into the urgent care for a flu jab on Saturday?")
    r"|\b(?:can|could|may)\s+(?:i|we)\s+(?:just\s+)?(?:pop|drop|walk|swing|nip)\s+(?:in|into|by|round|over|down)\b"
    r"[^,.;:!?]{0,40}?\bfor\s+(?P<pop_in>[^,.;:!?]+)"
    r"|\b(?:does|do|can|could|will|would)\s+(?:the|your|ur|their|this|that|(?:one|any) of (?:your|ur|the))\s+"
    r"(?:[\w'-]+\s+){1,4}?(?:have|do|take|offer|cover|include|"
    r"accept|provide)\s+(?P<of_it>[^,.;:!?]+)"
    r"|\b(?:har|tilbyr|gir|tar)\s+dere\s+(?P<har>[^,.;:!?]+)"
    r"|\bfinnes det\s+(?P<finnes>[^,.;:!?]+)"
    r"|\bkan (?:jeg|vi|eg) ta med\s+(?P<ta_med>[^,.;:!?]+)"
    # and the thing a price question prices ("the self pay price for a cortisone shot", "what does a crown
    # cost", "hva koster en rotfylling"): a price of something else is no answer
    r"|\b(?:price|prices|cost|costs|fee|fees|charge|charges)\s+(?:for|of)\s+(?P<price_of>[^,.;:!?]+)"
    r"|\bwhat\s+(?:does|do|would|will)\s+(?P<what_cost>[^,.;:!?]+?)\s+cost\b"
    r"|\bhow much\s+(?:does|do|would|will)\s+(?P<how_much>[^,.;:!?]+?)\s+cost\b"
    r"|\bhva\s+koster\s+(?P<koster>[^,.;:!?]+)", re.IGNORECASE)
_THING_END = re.compile(
    r"\s(?:and|but|so|because|while|when|if|at|in|into|on|onto|for|with|from|to|during|before|after|by|near|"
    r"between|around|outside|inside|across|ved|mellom|utenfor|"
    r"about|like|who|that|which|where|you|ye|u|i|we|she|he|they|it|og|men|på|i|hos|til|med|når|hvis|fordi|som|"
    r"jeg|eg|vi|hun|han|de|dere)\s", re.IGNORECASE)
# Words of the thing that do not say what it is: determiners, pronouns, "appt", a possibility ("is
# there any chance / way"), when ("åpent fredag ettermiddag", "open on Sunday"), or only the kind of
# question (KIND_WORDS: "is there a fee"), a rule the passages state in their own words ("is there a
# penalty / a time limit": "a $25 fee", "up to two hours"), where ("somewhere close"), or a GP (any
# doctor: "is there a GP who takes new patients").
_THING_FILLER = _stems("""any some a an the my our your his her their this that these those way ways someone
    anyone somebody anybody something anything somewhere anywhere one ones it them appt appts apt chance
    possibility option options point reason need noen noe en et ei min mitt mine sjanse mulighet open opening
    opened åpen åpent
    monday tuesday wednesday thursday friday saturday sunday weekend weekends morning mornings afternoon
    evening evenings night nights arvo tonight tonite mandag tirsdag onsdag torsdag fredag lørdag søndag helg helga helgen morgen
    formiddag ettermiddag kveld kvelden natt
    penalty penalties fine fines limit limits restriction restrictions rule rules requirement requirements minimum
    maximum close near nearby set gp gps""") | KIND_WORDS
# Who a price is for ("a no show fee for kids") is no thing priced; in an existence question it may be
# ("a baby changing room").
_FOR_WHOM = _stems("""kid kids child children adult adults senior seniors pensioner pensioners student students baby
    babies patient patients barn voksne pensjonister studenter""")
_PRICE_GROUPS = frozenset({"price_of", "what_cost", "how_much", "koster"})
# A word of the thing this informative (IDF, citetrace.idf) must occur in the offered passages; a
# thing without one needs its most informative word.
THING_IDF_FLOOR = 5.0


def asked_things(question: str, place_names: tuple[str, ...] = ()) -> list[tuple[str, tuple[str, ...]]]:
    """(the thing, its informative stems) of every offer or existence question it asks."""
    idf = shipped_idf()
    names = _name_words(question, place_names)
    out = []
    for match in _ASKED_THING.finditer(question_sentences(question)):
        thing = next(g for g in match.groups() if g)
        thing = _THING_END.split(f" {thing} ", maxsplit=1)[0].strip()
        priced = match.lastgroup in _PRICE_GROUPS
        stems = [t for t in terms(thing) if t not in GENERIC and t not in NORWEGIAN and t not in _STOP_STEMS
                 and t not in _THING_FILLER and t not in names and not (priced and t in _FOR_WHOM)]
        if not stems:
            continue
        ranked = sorted(stems, key=lambda t: (-idf.idf(t), t))
        informative = tuple(t for t in ranked if idf.idf(t) >= THING_IDF_FLOOR) or tuple(ranked[:1])
        out.append((thing, informative))
    return out


def _mentioned(stem: str, vocabulary: frozenset[str]) -> bool:
    """The stem occurs (covers(): the same stem or a shared prefix of 5+ letters), or a word one
    typing slip away does (6+ letters: "wheelchiar")."""
    if covers(stem, vocabulary):
        return True
    return len(stem) >= 6 and any(abs(len(v) - len(stem)) <= 1 and _one_slip(stem, v) for v in vocabulary)


def _one_slip(a: str, b: str) -> bool:
    """One letter added, dropped, changed, or two neighbours swapped."""
    if len(a) > len(b):
        a, b = b, a
    i = next((k for k in range(len(a)) if a[k] != b[k]), len(a))
    if len(a) < len(b):
        return a[i:] == b[i + 1:]
    return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i:i + 2][::-1])


def missing_asked_thing(question: str, passage_texts: list[str], place_names: tuple[str, ...] = ()) -> str:
    """The thing an offer or existence question asks for whose informative words occur in no
    offered passage, or, when no word of it is informative alone, not together in one ("" when
    there is none)."""
    asked = asked_things(question, place_names)
    if not asked:
        return ""
    vocabulary = frozenset().union(*(terms(text) for text in passage_texts))
    idf = shipped_idf()
    for thing, informative in asked:
        if not all(_mentioned(t, vocabulary) for t in informative):
            return thing
        phrase = _phrase_stems(thing, place_names)
        if len(phrase) >= 2 and all(idf.idf(t) < THING_IDF_FLOOR for t in phrase) and \
                not any(_said_together(phrase, text) for text in passage_texts):
            return thing
    return ""


# A thing none of whose words says much alone ("home visits": a page says "go home" and "your visit"
# anywhere) is said only where its words are said together: within this many words ("home visits",
# "visits at home", "visit you at home"; not "go home and rest after your visit").
PHRASE_WINDOW = 4


def _phrase_stems(thing: str, place_names: tuple[str, ...]) -> tuple[str, ...]:
    """The content stems of an asked-for thing, the generic ones too ("visit" of "home visits"), not
    its numbers ("my 3 year old")."""
    names = _name_words(thing, place_names)
    return tuple(dict.fromkeys(t for t in claimtext.content_stems(thing) if t not in _STOP_STEMS and
                               t not in _THING_FILLER and t not in names and not t.isdigit()))


def says_apart(thing: str, text: str, place_names: tuple[str, ...] = ()) -> bool:
    """Whether the text has a word of a thing of two or more words, but not the thing's words together
    ("Most first visits end with ... a home program", "most patients leave their first visit with two
    or three exercises" for "home visits"): it reads near the thing by that word, and says it in no
    words."""
    phrase = _phrase_stems(thing, place_names)
    if len(phrase) < 2:
        return False
    words = frozenset(_STEM(t) for t in claimtext.tokens(text))
    return any(covers(t, words) for t in phrase) and not _said_together(phrase, text)


def _said_together(phrase: tuple[str, ...], text: str) -> bool:
    said = [claimtext.stem(t) for t in claimtext.tokens(text)]
    for start in range(len(said)):
        window = frozenset(said[start:start + PHRASE_WINDOW])
        if all(covers(t, window) for t in phrase):
            return True
    return False


def unsaid_words(thing: str, passage_texts: list[str]) -> str:
    """The words of an asked-for thing that no offered passage mentions ("travel" of "travel vaccines"
    beside "flu vaccines"): what a unit must say in other words for the thing to be said."""
    vocabulary = frozenset().union(*(terms(text) for text in passage_texts))
    unsaid = [word for word in re.findall(r"[\w'’-]+", thing)
              if (stems := terms(word)) and not all(_mentioned(stem, vocabulary) for stem in stems)]
    return " ".join(unsaid) or thing


# Sentence openings that the place pattern may pick up ("Is Northgate Family Clinic ...").
_CAPITALISED_FUNCTION_WORDS = frozenset(
    ["is", "are", "does", "do", "can", "could", "will", "would", "should", "may", "what", "when", "where", "which", "who", "how", "the", "a", "an", "at", "in", "to", "for", "hva", "hvor", "når", "kan", "er"])
