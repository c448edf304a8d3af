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
