"""The bokmål -> English glossary (data/nb_en_gloss.tsv) and the word-by-word English gloss of a text.

The shipped MiniLM is an English model: it reads "kan hodepinen min være en hjernesvulst" as sub-word
noise and its gloss, "can headache my be a one brain tumor", as a question about a tumour. Two readers
use the gloss and nothing else from each other: the orchestrator's understanding heads (a feature view
of the question) and the extractive generator (what a bokmål question and bokmål passages are matched
on; the claims it shows keep the passages' own words).

The glossary was written 2026-12-06 by an author briefed only on the domain (appointments,
preparation, symptoms, medicines, emergencies), not on any labelled question: one bokmål word, a TAB,
one to three English words; a word that is also a common English word of another meaning ("min", "i")
carries a third column 'nb' and is glossed only in a text identified as bokmål."""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from pathlib import Path

from citetrace import language

GLOSS_FILE = Path(__file__).resolve().parent / "data" / "nb_en_gloss.tsv"
PHRASE_FILE = Path(__file__).resolve().parent / "data" / "nb_en_phrases.tsv"
_WORD = re.compile(r"\w+", re.UNICODE)
# A compound is split only into parts this long, and a linking s or e may join them ("blodtrykksmedisin").
_MIN_PART = 3
_LINKS = ("", "s", "e")


def _fold(word: str) -> str:
    return unicodedata.normalize("NFKC", word).lower()


def glossary() -> tuple[str, dict[str, tuple[str, ...]]]:
    """(digest, bokmål word -> English words) from GLOSS_FILE (the words marked 'nb' are in
    bokmal_only_glossary, not here)."""
    digest, table, _ = _read_glossary()
    return digest, table


def bokmal_only_glossary() -> dict[str, tuple[str, ...]]:
    """Words that are English words too ("i", "at", "min"): glossed only in a bokmål text's gloss."""
    return _read_glossary()[2]


@functools.lru_cache(maxsize=1)
def _read_glossary() -> tuple[str, dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    raw = GLOSS_FILE.read_bytes()
    table: dict[str, tuple[str, ...]] = {}
    bokmal_only: dict[str, tuple[str, ...]] = {}
    for number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        word = fields[0]
        if len(fields) not in (2, 3) or not word or " " in word or not fields[1].split() or fields[2:] not in ([], ["nb"]):
            raise ValueError(f"{GLOSS_FILE.name} line {number}: expected 'word<TAB>english words[<TAB>nb]'")
        (bokmal_only if fields[2:] else table)[_fold(word)] = tuple(fields[1].split())
    return hashlib.sha256(raw).hexdigest()[:12], table, bokmal_only


@functools.lru_cache(maxsize=65536)
def gloss_word(word: str) -> tuple[str, ...]:
    """The English words for one folded word: the glossary's entry, else the two parts of a compound
    the glossary has (the longest first part), else none."""
    table = glossary()[1]
    if word in table:
        return table[word]
    for cut in range(len(word) - _MIN_PART, _MIN_PART - 1, -1):
        head = word[:cut]
        if head not in table:
            continue
        for link in _LINKS:
            rest = word[cut:]
            if rest.startswith(link) and len(rest) - len(link) >= _MIN_PART and rest[len(link):] in table:
                return table[head] + table[rest[len(link):]]
    return ()


# Inflected forms a document writes and the glossary (written for questions) may lack, tried in order
# for a word it has no entry for: passive "-es" (avbestilles), imperative (bestill, møt), plural and
# definite endings (timer, timene, legen, gebyret).
_ENDINGS = (("es", "e"), ("", "e"), ("ene", "e"), ("ene", ""), ("er", "e"), ("er", ""), ("en", "e"), ("en", ""),
            ("et", "e"), ("et", ""), ("a", "e"), ("e", ""), ("s", ""))


@functools.lru_cache(maxsize=65536)
def gloss_inflected(word: str) -> tuple[str, ...]:
    """gloss_word, or else the gloss of the word with æ, ø, å for ae, oe, aa, or of the first form its
    ending points to (see _ENDINGS), also among the bokmål-only words (this is for text already
    identified as bokmål)."""
    found = gloss_word(word)
    if found:
        return found
    bokmal_only = bokmal_only_glossary()
    # æ, ø and å typed as ae, oe and aa on a keyboard without them ("maa", "foer", "vaere")
    spelled = word.replace("aa", "å").replace("oe", "ø").replace("ae", "æ")
    if spelled != word and (found := bokmal_only.get(spelled) or gloss_inflected(spelled)):
        return found
    for ending, replacement in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= _MIN_PART:
            base = word[: len(word) - len(ending)] + replacement
            if base != word and (found := bokmal_only.get(base) or gloss_word(base)):
                return found
    return ()


def gloss_text(text: str, language_code: str | None = None, inflected: bool = False) -> tuple[str, tuple[int, ...]]:
    """The text with each word the glossary has replaced by its English words (also the bokmål-only
    ones when the text is bokmål: `language_code`, the identifier's reading of it, computed here when
    the caller has none), and for every character offset of the text (and its end) the offset in the
    gloss: a clause's span maps to the same words in the gloss (a replaced word's characters spread
    over its replacement). `inflected`: also the forms gloss_inflected finds (the understanding heads'
    features are computed without them)."""
    code = language.identify(text).code if language_code is None else language_code
    lookup = gloss_inflected if inflected else gloss_word
    bokmal_only = bokmal_only_glossary() if code == "nb" else {}
    out: list[str] = []
    mapping = [0] * (len(text) + 1)
    length = last = 0
    for match in _WORD.finditer(text):
        for k in range(last, match.start()):
            mapping[k] = length + k - last
        length += match.start() - last
        out.append(text[last:match.start()])
        folded = _fold(match.group())
        english = bokmal_only.get(folded) or lookup(folded)
        word = " ".join(english) if english else match.group()
        width = match.end() - match.start()
        for k in range(match.start(), match.end()):
            mapping[k] = length + (k - match.start()) * len(word) // width
        length += len(word)
        out.append(word)
        last = match.end()
    for k in range(last, len(text) + 1):
        mapping[k] = length + k - last
    out.append(text[last:])
    return "".join(out), tuple(mapping)


@functools.lru_cache(maxsize=1)
def _phrases() -> tuple[str, re.Pattern[str] | None, dict[str, str]]:
    """(digest, one pattern over the multi-word expressions longest first, folded phrase -> English)
    from PHRASE_FILE."""
    raw = PHRASE_FILE.read_bytes()
    table: dict[str, str] = {}
    for number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            raise ValueError(f"{PHRASE_FILE.name} line {number}: expected 'bokmål phrase<TAB>english'")
        table[_fold(fields[0].strip())] = fields[1].strip()
    alternatives = "|".join(re.escape(p) for p in sorted(table, key=len, reverse=True))
    pattern = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE) if table else None
    return hashlib.sha256(raw).hexdigest()[:12], pattern, table


def reading_version() -> str:
    """The version of english_reading's resources: the glossary's and the phrase list's digests."""
    return f"nb-en-gloss-{glossary()[0]}+phrases-{_phrases()[0]}+inflected-1"


def english_reading(text: str, language_code: str) -> str:
    """The text as an English reader matches it: its gloss when it is bokmål (its multi-word
    expressions first: "hvor lenge" is "how long", not "where long"), else itself."""
    if language_code != "nb" or not text:
        return text
    _, pattern, english = _phrases()
    if pattern is not None:
        text = pattern.sub(lambda m: english[_fold(m.group())], text)
    return gloss_text(text, "nb", inflected=True)[0]
