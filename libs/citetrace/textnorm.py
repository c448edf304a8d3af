"""Text normalization shared by every service that reads words (generator, validator, relevance,
rerank): word tokens, English stems, the function-word list. Normalization only: no decision is
made here (what counts as a rule, a number, a negation or an answer belongs to each deciding
component, which keeps the generator and the judge independent)."""

from __future__ import annotations

import functools
import re
import unicodedata

import Stemmer

_STEMMER = Stemmer.Stemmer("english")
WORD = re.compile(r"[A-Za-z\u00C0-\u024F\u0370-\u1FFF\u3040-\u30FF\u4E00-\u9FFF]+(?:'[A-Za-z]+)?|\d+(?:[.,:]\d+)*")

# Function words. Negations, qualifiers, modals that carry obligation ("must", "may") and
# numbers are deliberately NOT here; nor are "before"/"after"/"within"/"during"/"between"/"over"/
# "under", which matter for rules ("24 hours before").
STOPWORDS = frozenset(
    """a an the and or of to in on at by for from with as is are was were be been being am do does did
    this that these those it its it's their there they them we our ours you your yours i me my he she his
    her him which who whom whose what when where why how if then than so such into onto
    about above below up down out off again further once here also too very can will would could
    shall should just own same other some more most both each few s t d ll re ve m o y has have had
    having get gets got please via per upon while through
    s1 s2 s3 s4 s5 s6 s7 s8 s9""".split()  # noqa: SIM905
)


def fold(text: str) -> str:
    """NFKC + casefold + curly quotes straightened: the form two spellings are compared in."""
    return unicodedata.normalize("NFKC", text).replace("’", "'").casefold()


def tokens(text: str) -> list[str]:
    """Lower-case word tokens; "n't" and "cannot" become "not"."""
    lowered = text.lower().replace("’", "'").replace("cannot", "can not").replace("n't", " not")
    return WORD.findall(lowered)


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return _STEMMER.stemWord(word)


_ABSENT = re.compile(r"([a-z]{3,})(?:less|free)")


def thing_absent(word: str) -> str:
    """The thing a word says is absent: "cash" of "cashless", "smoke" of "smokefree" ("" otherwise)."""
    found = _ABSENT.fullmatch(word)
    return found[1] if found and found[1] not in STOPWORDS else ""


def content_words(text: str) -> list[str]:
    """Tokens minus function words and single letters, in order."""
    return [t for t in tokens(text) if t not in STOPWORDS and not (len(t) == 1 and t.isalpha())]
