"""Text analysis of the generator (no grpc, no model): how it reads passages into answerable units.

- ``units(text)``: a passage split into answerable units — sentences, list items, table rows —
  with a rule's qualifier or exception kept with it ("Except ...", "However, ...", "Unless ...",
  an "Exception:" paragraph after its rule, a lead-in sentence ending in ":" with its list, a
  table header with each row). Unit text is the source text (whitespace collapsed; a table row
  is rendered as "header: cell; header: cell"), never new wording.
- ``content_stems``: lower-cased, Snowball-stemmed content words (stop words removed, but
  negations, qualifiers and numbers kept: they change what a rule says).
- ``quantities``: numbers and times with their unit ("15 minutes", "7:30 am", "$25", "fifteen").
- ``negations`` / ``qualifiers``: the cue words that flip or restrict a rule.
- ``looks_like_instruction``: a sentence addressed to an assistant ("ignore previous
  instructions ..."): passages are data, such sentences are never answer material.
"""

from __future__ import annotations

import dataclasses
import re

from citetrace import textnorm

NEGATION_CUES = frozenset({"not", "no", "never", "cannot", "without", "none", "nor", "neither", "nothing"})
EXCEPTION_CUES = frozenset({"except", "unless", "excluding", "exception", "exceptions", "however", "but"})
RESTRICTION_CUES = frozenset({"only", "solely", "exclusively"})
UNIVERSAL_CUES = frozenset({"always", "every", "all"})
QUALIFIER_CUES = EXCEPTION_CUES | RESTRICTION_CUES | UNIVERSAL_CUES

# Function words. Negations, qualifiers, modals that carry obligation ("must", "may") and
# numbers are deliberately NOT here.
STOPWORDS = textnorm.STOPWORDS

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "forty-five": 45, "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100,
    "half": 0.5, "once": 1, "twice": 2, "single": 1, "double": 2,
}
_UNIT_STEMS = {
    "minut": "minute", "min": "minute", "mins": "minute", "hour": "hour", "hr": "hour", "hrs": "hour",
    "day": "day", "week": "week", "month": "month", "year": "year", "dollar": "usd", "usd": "usd",
    "nok": "nok", "kr": "nok", "nzd": "nzd", "percent": "percent", "am": "clock", "pm": "clock",
    "time": "times", "visit": "visit", "appoint": "appointment", "fee": "fee",
}
_QUANTITY = re.compile(
    r"(?P<cur>[$€£])?\s?(?P<num>(?<![\d.,:])\d{1,2}:\d{2}(?![\d.,:]?\d)|\d+(?:[.,]\d+)?)\s?(?P<pct>%)?"
    r"|(?P<word>\b(?:" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b)",
    re.IGNORECASE,
)

_INSTRUCTION = re.compile(
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|any|other|your)\b"
    r".{0,30}\b(instructions?|rules|prompts?|guidelines|directions)\b"
    r"|\b(you are|act as|pretend to be|as an?)\s+(an?\s+)?(ai|assistant|language model|chatbot|llm)\b"
    r"|\bsystem prompt\b|\b(assistants?|ai|chatbots?|language models?|llms?)\s*(must|should|shall|are to)\b"
    r"|\b(tell|inform)\s+(the\s+)?(patients?|users?|callers?)\s+(that\s+)?\w+"
    r"|\b(respond|reply|answer)\s+(only\s+)?with\b",
    re.IGNORECASE | re.DOTALL,
)

# A sentence that opens with one of these qualifies the sentence before it.
_QUALIFIER_OPENING = re.compile(
    r"^\W*(except|excepting|exception|exceptions|however|unless|but|this (rule )?does not apply|"
    r"this does not|the only exception|note:|not for|excluding|otherwise|instead|in that case|"
    r"for (these|those|such) (appointments|patients|visits)|the same applies)\b",
    re.IGNORECASE,
)
_PRONOUN_OPENING = re.compile(r"^(she|he|they|it|his|her|their|its)\b", re.IGNORECASE)
# A full stop after one of these ends no sentence; bokmål's too ("etter kl. 22", "ca. 20 minutter",
# "f.eks. pass", "tlf. 22 ...").
_ABBREVIATION_END = re.compile(r"(?:^|[\s(])(?:e\.g|i\.e|dr|mr|mrs|ms|prof|a\.m|p\.m|approx|no|st|vs|etc"
                               r"|kl|ca|tlf|evt|nr|f\.eks|bl\.a|dvs|osv|mht|jf|ev)\.$", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_URL = re.compile(r"(https?://|www\.)\S+|\b[\w.-]+\.(com|org|net|no|nz|io)(/\S*)?\b", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Unit:
    """One answerable piece of a passage: its text (source wording) and character span."""

    text: str
    start: int
    end: int
    kind: str  # sentence | list | table_row
    # For a table row: its own cells only (the header is shared by every row, so it says nothing
    # about which row answers).
    cells: str = ""


tokens = textnorm.tokens
stem = textnorm.stem


_DIGIT_WORDS = {w: str(int(v)) for w, v in NUMBER_WORDS.items() if w not in {"one", "once", "single", "double", "half"}}


def content_stems(text: str) -> list[str]:
    """Content words, stemmed, in order (duplicates kept); number words become digits ("four" -> "4")."""
    return [
        _DIGIT_WORDS.get(t) or stem(t)
        for t in tokens(text)
        if t not in STOPWORDS and not (len(t) == 1 and t.isalpha())
    ]


def content_set(text: str) -> frozenset[str]:
    return frozenset(content_stems(text))


def negations(text: str) -> int:
    return sum(1 for t in tokens(text) if t in NEGATION_CUES)


def qualifiers(text: str) -> frozenset[str]:
    return frozenset(t for t in tokens(text) if t in QUALIFIER_CUES)


def _number_value(raw: str) -> str:
    raw = raw.lower()
    if raw in NUMBER_WORDS:
        value = NUMBER_WORDS[raw]
        return str(int(value)) if float(value).is_integer() else str(value)
    if ":" in raw:
        # A clock time ("7:30"); anything else with a colon ("1.04:95", a ratio) is not one.
        hours, minutes = raw.split(":", 1)
        if hours.isdigit() and minutes.isdigit() and int(hours) <= 24 and len(minutes) == 2:
            return f"{int(hours)}:{minutes}"
        return raw
    raw = raw.replace(",", ".") if raw.count(",") == 1 and len(raw.split(",")[1]) != 3 else raw.replace(",", "")
    try:
        value = float(raw)
    except ValueError:
        return raw
    return str(int(value)) if value.is_integer() else str(value)


def quantities(text: str) -> frozenset[tuple[str, str]]:
    """(value, unit) pairs; unit is "" when none follows. "15 minutes" -> ("15", "minute");
    "7:30 am" -> ("7:30", "clock"); "$25" -> ("25", "usd"); "fifteen" -> ("15", "")."""
    found: set[tuple[str, str]] = set()
    for match in _QUANTITY.finditer(text):
        raw = match.group("num") or match.group("word")
        if not raw:
            continue
        value = _number_value(raw)
        unit = ""
        if match.group("cur"):
            unit = {"$": "usd", "€": "eur", "£": "gbp"}[match.group("cur")]
        elif match.group("pct"):
            unit = "percent"
        else:
            following = tokens(text[match.end() : match.end() + 24])
            if following and following[0] in {"-", "to"}:
                following = following[1:]
            if following:
                unit = _UNIT_STEMS.get(stem(following[0]), "")
        if match.group("word") and raw.lower() in {"once", "single", "double", "one"} and not unit:
            continue  # "once" / "one of" are rarely quantities without a unit
        found.add((value, unit))
    return frozenset(found)


def quantity_values(text: str) -> frozenset[str]:
    return frozenset(value for value, _ in quantities(text))


def looks_like_instruction(text: str) -> bool:
    """True for text addressed to an assistant rather than stating a policy."""
    return bool(_INSTRUCTION.search(text))


def contains_link(text: str) -> bool:
    return bool(_URL.search(text))


def starts_with_qualifier(text: str) -> bool:
    return bool(_QUALIFIER_OPENING.match(text.strip()))


def depends_on_previous(text: str) -> bool:
    """A qualifier, or a sentence whose subject is a pronoun for the previous one ("She speaks
    Norwegian."): either is kept with the sentence before it."""
    return starts_with_qualifier(text) or bool(_PRONOUN_OPENING.match(text.strip()))


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _sentence_spans(text: str, offset: int) -> list[tuple[int, int]]:
    """Sentence spans of one paragraph (absolute offsets)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in re.finditer(r"[.!?](?=[\"”')\]]?\s+[\"“(\[]?[A-Z0-9\u00C0-\u024F\u2600-\u27BF\U0001F300-\U0001FAFF])", text):
        end = match.end()
        if _ABBREVIATION_END.search(text[max(0, end - 8) : end]):
            continue
        spans.append((start, end))
        start = end
    spans.append((start, len(text)))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((offset + s, offset + e))
    return out


def _blocks(text: str) -> list[tuple[int, int]]:
    """Blank-line separated blocks as spans."""
    blocks = []
    for match in re.finditer(r"(?:[^\n]*\S[^\n]*(?:\n|$))+", text):
        blocks.append((match.start(), match.end()))
    return blocks


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def units(text: str) -> list[Unit]:
    """The answerable units of a passage, in text order (see the module docstring)."""
    out: list[Unit] = []
    for b_start, b_end in _blocks(text):
        block = text[b_start:b_end]
        lines = []
        pos = b_start
        for raw in block.split("\n"):
            if raw.strip():
                lines.append((pos, pos + len(raw), raw))
            pos += len(raw) + 1
        if all(line.lstrip().startswith("#") for _, _, line in lines):
            continue  # headings give context, they are not answers
        if all(line.lstrip().startswith("|") for _, _, line in lines):
            out.extend(_table_units(lines))
            continue
        paragraph: list[tuple[int, int, str]] = []
        items: list[tuple[int, int, str]] = []
        for line in lines:
            if line[2].lstrip().startswith("#"):
                continue
            if _LIST_ITEM.match(line[2]):
                items.append(line)
            elif items and not paragraph:
                items[-1] = (items[-1][0], line[1], text[items[-1][0] : line[1]])  # wrapped list item
            else:
                if items:
                    _emit_list(out, items)
                    items = []
                paragraph.append(line)
        if paragraph:
            start, end = paragraph[0][0], paragraph[-1][1]
            _emit_paragraph(out, text, start, end)
        if items:
            _emit_list(out, items)
    return out


def _attach(out: list[Unit], unit: Unit, text_source: str | None = None) -> None:
    """Appends a unit, merging it into the previous one when it qualifies it."""
    if out and depends_on_previous(unit.text):
        prev = out[-1]
        out[-1] = Unit(f"{prev.text} {unit.text}", prev.start, unit.end, prev.kind)
        return
    out.append(unit)


def _emit_paragraph(out: list[Unit], text: str, start: int, end: int) -> None:
    pending: Unit | None = None  # a bare "No." / "Yes." answer goes with the sentence that follows it
    for s, e in _sentence_spans(text[start:end], start):
        unit = Unit(_collapse(text[s:e]), s, e, "sentence")
        if pending is not None:
            unit = Unit(f"{pending.text} {unit.text}", pending.start, unit.end, "sentence")
            pending = None
        if len(content_stems(unit.text)) < 2 and not depends_on_previous(unit.text):
            pending = unit
            continue
        _attach(out, unit)
    if pending is not None:
        _attach(out, pending)


def _emit_list(out: list[Unit], items: list[tuple[int, int, str]]) -> None:
    cleaned = [(s, e, _collapse(_LIST_ITEM.sub("", line))) for s, e, line in items]
    if out and out[-1].text.endswith(":"):
        lead = out[-1]
        joined = "; ".join(c for _, _, c in cleaned)
        out[-1] = Unit(f"{lead.text} {joined}", lead.start, cleaned[-1][1], "list")
        return
    for s, e, c in cleaned:
        _attach(out, Unit(c, s, e, "list"))


def _table_units(lines: list[tuple[int, int, str]]) -> list[Unit]:
    rows = [(s, e, _cells(line)) for s, e, line in lines if not _TABLE_SEPARATOR.match(line)]
    if len(rows) < 2:
        return []
    header = rows[0][2]
    result = []
    for s, e, cells in rows[1:]:
        pairs = [f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=False) if c]
        if pairs:
            result.append(Unit("; ".join(pairs), s, e, "table_row", " ; ".join(c for c in cells if c)))
    return result
