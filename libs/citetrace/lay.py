"""Lay phrasings of a clinic service read as the clinic's own word (data/lay_en_phrases.tsv).

A patient describes what a service does ("can you get someone to sign for him?") where the clinic's
page names the service ("Interpreters"). The shipped MiniLM does not bridge the two (0.25 against
0.64 for "can you get an interpreter for her?"), and neither do words. `clinic_reading` rewrites the
description as the service's name, for the readers that match a question to passages: the policy
part's search query (orchestrator) and the extractive generator's question reading. What is shown
and recorded as the question stays as the patient wrote it.

The phrase list is data, versioned by its digest (`version`), which the generator's settings name."""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

PHRASE_FILE = Path(__file__).resolve().parent / "data" / "lay_en_phrases.tsv"


@functools.lru_cache(maxsize=1)
def _entries() -> tuple[str, tuple[tuple[re.Pattern[str], str], ...]]:
    """(digest, (pattern, replacement) in file order) from PHRASE_FILE."""
    raw = PHRASE_FILE.read_bytes()
    entries = []
    for number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            raise ValueError(f"{PHRASE_FILE.name} line {number}: expected 'regular expression<TAB>replacement'")
        try:
            entries.append((re.compile(fields[0].strip(), re.IGNORECASE), fields[1].strip()))
        except re.error as err:
            raise ValueError(f"{PHRASE_FILE.name} line {number}: {err}") from None
    return hashlib.sha256(raw).hexdigest()[:12], tuple(entries)


def version() -> str:
    """The phrase list's version (its digest)."""
    return f"lay-en-{_entries()[0]}"


@functools.lru_cache(maxsize=4096)
def clinic_reading(text: str) -> str:
    """The text with each lay description of a service replaced by the service's name (English)."""
    for pattern, replacement in _entries()[1]:
        text = pattern.sub(replacement, text)
    return text


# A greeting or thanks opening a sentence ("Kia ora, my nana and my aunty both want to come in with me",
# "Hi there! how early should I come? Thanks!"): read whole, "Kia ora, ..." was nearest to a guide's
# "Kia ora, and welcome." (the Tōtara probe's q37), in the search and in the generator alike.
_GREETING = re.compile(r"^\s*(?:(?:hi|hello|hey|hiya|heya|howdy|hallo|hei|heisann|kia ora(?: koutou| kōrua)?|"
                       r"g'?day(?: mate)?|good (?:morning|afternoon|evening|day)|morning|evening|greetings|"
                       r"thanks|thank you|cheers|ta)(?:\s+(?:there|all|team|guys|folks))?\s*[,.!:;-]+\s*)+",
                       re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def without_greeting(text: str) -> str:
    """The text without the greeting or thanks that opens any of its sentences; the text itself when
    that is all it says."""
    kept = [_GREETING.sub("", part) for part in _SENTENCE_END.split(text)]
    return " ".join(part for part in kept if part.strip()) or text
