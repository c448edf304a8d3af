"""The precise checks of the support decision: the facts a paraphrase may never change.

Owned by the validator (the generator has its own reading of text; only the normalization in
citetrace.textnorm is shared). Every check compares the claim with the cited evidence and reports
what it found; none of them decides alone what is SUPPORTED (that is the learned model's job,
embedded.py), but a conflict found here can only make the verdict more careful.

- quantities: numbers with their unit (15 minutes; 10 kg = 22 lb within conversion rounding;
  "fifteen"; "1.5 million"; 25 %; $25), years, decades ("the 2000s" holds 2001), ranges
  ("1998–2003", "2001–05") and dates in any common order ("15 January 2019", "Tue 15 Jan 2019",
  "January 15, 2019", "2019-01-15", "15/01/2019"). A claim quantity must be stated by the evidence
  sentence its clause is about (a passage may say 30 minutes about MRI and 15 about the rest).
- names: capitalised words and acronyms must be the evidence's own, up to case, spacing
  ("Tech Crunch" / "TechCrunch"), diacritics, hyphens, plural, acronyms ("U.S." / "United States")
  and month/weekday abbreviations ("Tue" / "Tuesday").
- negation: a claim clause and the evidence clause it matches must agree in polarity.
- qualifiers: an "only" / "always" / "never" / "all" the evidence does not say is an addition.
- exceptions: a restriction or exception of the matched evidence sentence the claim leaves out.
- bounds: "under 18" is not "over 18".
- added assertions: a clause of the claim with (almost) nothing behind it in the evidence.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import unicodedata

from citetrace.textnorm import STOPWORDS, fold, stem, tokens

NEGATION_CUES = frozenset({"not", "no", "never", "without", "none", "nor", "neither", "nothing", "cannot"})
EXCEPTION_CUES = frozenset({"except", "unless", "excluding", "exception", "exceptions", "however", "but"})
RESTRICTION_CUES = frozenset({"only", "solely", "exclusively"})
ADDED_QUALIFIER_CUES = RESTRICTION_CUES | frozenset({"always", "every", "all", "never"})
BOUND_WORDS = frozenset({"under", "over", "less", "more", "fewer", "least", "most", "before", "after",
                         "within", "until", "above", "below", "maximum", "minimum"})

# --- sentences and clauses ------------------------------------------------------------------------

# Sentence ends, blank lines, list items and table rows end a sentence; a wrapped line does not.
_SENTENCE_END = re.compile(r"[.!?][\"”')\]]?(?=\s+[\"“(\[]?[A-Z0-9\u00C0-\u024F])|\n\s*\n|"
                           r"\n(?=\s*(?:[-*+•]|\d+[.)]|\||#)\s)")
_ABBREVIATION = re.compile(r"(?:^|[\s(])(?:e\.g|i\.e|dr|mr|mrs|ms|prof|st|vs|etc|no|jan|feb|mar|apr|jun|jul|aug|sep|"
                           r"sept|oct|nov|dec|u\.s|a\.m|p\.m|approx|inc|jr|sr|mt|ft|lb|lbs|oz)\.$", re.IGNORECASE)
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#+)\s+")


_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _tables_as_rows(text: str) -> str:
    """A markdown table becomes one line per data row with its header: "Exam: MRI; Fasting: none"
    (a row states its facts only together with the header that names them)."""
    out: list[str] = []
    header: list[str] | None = None
    for line in text.split("\n"):
        if line.lstrip().startswith("|"):
            if _TABLE_RULE.match(line):
                continue
            if header is None:
                header = _cells(line)
                continue
            cells = _cells(line)
            out.append("\n" + "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=False) if c)
                       + "\n")
        else:
            header = None
            out.append(line)
    return "\n".join(out)


def sentences(text: str) -> list[str]:
    """Sentences, list items, table rows (with their header) and lines of an evidence text (source
    wording, whitespace collapsed)."""
    if "|" in text:
        text = _tables_as_rows(text)
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if match.group()[0] in ".!?" and _ABBREVIATION.search(text[max(0, end - 8):end]):
            continue
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    cleaned = []
    for piece in pieces:
        piece = _LIST_MARK.sub("", " ".join(piece.split())).strip(" |")
        if piece:
            cleaned.append(piece)
    return cleaned


# Clause boundaries: punctuation (not inside numbers or after titles) and coordinating words.
_PUNCT = r"(?:[;!?()\[\]–—]|[,:](?!\d)|(?<!\bDr)(?<!\bMr)(?<!\bMs)(?<!\bMrs)(?<!\bSt)\.(?!\d))"
_CLAUSE_SPLIT = re.compile(
    _PUNCT.join([r"\s*(?:", r"|\band\b|\bor\b|\bplus\b|\bas well as\b|\balso\b|\bwhile\b|\bwhich\b|\bwho\b|"
                 r"\bwhere\b|\bwhen\b|\bwhereas\b|\bbut\b)\s*"]), re.IGNORECASE)
_POLARITY_SPLIT = re.compile(
    _PUNCT.join([r"\s*(?:", r"|\bbut\b|\bhowever\b|\bexcept\b|\bunless\b|\bwhile\b|\bwhereas\b)\s*"]),
    re.IGNORECASE)


def content(text: str) -> list[str]:
    """Stemmed content words in order; negation and qualifier words are kept (they change a rule)."""
    return [stem_word(t) for t in tokens(text) if t not in STOPWORDS and not (len(t) == 1 and t.isalpha())]


_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "thousand": 1000, "dozen": 12, "twice": 2, "half": 0.5,
}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
             "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12}


@functools.lru_cache(maxsize=65536)
def stem_word(token: str) -> str:
    """A token's stem, a number word as its digits ("two" -> "2"; "half" stays a word)."""
    if token in _NUMBER_WORDS and token not in {"half"}:
        value = _NUMBER_WORDS[token]
        return str(int(value))
    return stem(token)


def clauses(text: str, polarity: bool = False) -> list[str]:
    parts = (_POLARITY_SPLIT if polarity else _CLAUSE_SPLIT).split(text)
    return [p for p in parts if p and content(p)]


# --- quantities -----------------------------------------------------------------------------------

_MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"])}
_MONTH_ABBR = {m[:3]: i for m, i in _MONTHS.items()} | {"sept": 9}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH_RE = r"(?:" + "|".join(sorted(list(_MONTHS) + list(_MONTH_ABBR), key=len, reverse=True)) + r")\.?"
_WEEKDAY_RE = r"(?:(?:" + "|".join(list(_WEEKDAYS) + [d[:3] for d in _WEEKDAYS] + ["tues", "thur", "thurs"]) + r")\.?,?\s+)?"
_DAY_RE = r"(?P<d>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR_RE = r"(?P<y>1\d{3}|20\d{2})"
_DATE_PATTERNS = [
    re.compile(r"\b(?P<y>\d{4})-(?P<m>[01]\d)-(?P<d>[0-3]\d)\b"),
    re.compile(rf"\b{_WEEKDAY_RE}{_DAY_RE}\s+(?:of\s+)?(?P<mon>{_MONTH_RE})(?:,?\s+{_YEAR_RE})?\b", re.IGNORECASE),
    re.compile(rf"\b{_WEEKDAY_RE}(?P<mon>{_MONTH_RE})\s+{_DAY_RE}(?:,?\s+{_YEAR_RE})?\b(?!\s*(?:%|percent))",
               re.IGNORECASE),
    re.compile(rf"\b(?P<mon>{_MONTH_RE})\s+(?:of\s+)?{_YEAR_RE}\b", re.IGNORECASE),
    re.compile(r"\b(?P<a>[0-3]?\d)[/.](?P<b>[01]?\d)[/.](?P<y>(?:1\d|20)\d{2})\b"),
]
_DECADE = re.compile(r"(?<![\w$])(?:the\s+)?(?:(?:early|mid|late)[-\s])?(?P<c>1\d|20)?(?P<d>\d)0\s?['’]?s\b",
                     re.IGNORECASE)
_RANGE_SHORT = re.compile(r"\b(?P<a>(?:1\d|20)\d{2})\s?[–—-]\s?(?P<b>\d{2})\b(?![\d.,:])")
_NUMBER = re.compile(
    r"(?P<cur>US\$|[$€£¥₹])?\s?(?P<num>(?<![\d.,:])\d{1,2}:\d{2}(?![\d.,:]?\d)|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?)"
    r"(?:\s?(?P<mult>million|billion|trillion|thousand|m|bn|k)\b)?\s?(?P<pct>%|percent\b|per cent\b)?"
    r"|(?P<word>\b(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)-(?:one|two|three|four|five|six|seven|"
    r"eight|nine)|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")\b)"
    r"|(?P<ord>\b(?:" + "|".join(_ORDINALS) + r")\b)",
    re.IGNORECASE)
_MULT = {"million": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12, "thousand": 1e3, "k": 1e3}

# unit word (folded, singular) -> (dimension, factor to the dimension's base unit)
_UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001), "millimetre": ("length", 0.001), "millimeter": ("length", 0.001),
    "cm": ("length", 0.01), "centimetre": ("length", 0.01), "centimeter": ("length", 0.01),
    "m": ("length", 1.0), "metre": ("length", 1.0), "meter": ("length", 1.0),
    "km": ("length", 1000.0), "kilometre": ("length", 1000.0), "kilometer": ("length", 1000.0),
    "in": ("length", 0.0254), "inch": ("length", 0.0254), "inches": ("length", 0.0254),
    "ft": ("length", 0.3048), "foot": ("length", 0.3048), "feet": ("length", 0.3048),
    "yd": ("length", 0.9144), "yard": ("length", 0.9144), "mi": ("length", 1609.344), "mile": ("length", 1609.344),
    "mg": ("mass", 1e-6), "g": ("mass", 0.001), "gram": ("mass", 0.001), "kg": ("mass", 1.0),
    "kilogram": ("mass", 1.0), "kilo": ("mass", 1.0), "t": ("mass", 1000.0), "tonne": ("mass", 1000.0),
    "ton": ("mass", 907.185), "lb": ("mass", 0.45359237), "lbs": ("mass", 0.45359237),
    "pound": ("mass", 0.45359237), "oz": ("mass", 0.0283495), "ounce": ("mass", 0.0283495),
    "s": ("time", 1.0), "sec": ("time", 1.0), "second": ("time", 1.0), "min": ("time", 60.0),
    "mins": ("time", 60.0), "minute": ("time", 60.0), "h": ("time", 3600.0), "hr": ("time", 3600.0),
    "hrs": ("time", 3600.0), "hour": ("time", 3600.0), "day": ("time", 86400.0), "week": ("time", 604800.0),
    "fortnight": ("time", 1209600.0), "month": ("time", 2629800.0), "year": ("time", 31557600.0),
    "l": ("volume", 1.0), "litre": ("volume", 1.0), "liter": ("volume", 1.0), "ml": ("volume", 0.001),
    "gallon": ("volume", 3.785), "km/h": ("speed", 1 / 3.6), "kph": ("speed", 1 / 3.6), "mph": ("speed", 0.44704),
    "ha": ("area", 1e4), "hectare": ("area", 1e4), "acre": ("area", 4046.86), "km2": ("area", 1e6),
    "sq": ("area", 0.0), "°c": ("temp_c", 1.0), "°f": ("temp_f", 1.0),
    "usd": ("usd", 1.0), "dollar": ("usd", 1.0), "eur": ("eur", 1.0), "euro": ("eur", 1.0),
    "gbp": ("gbp", 1.0), "nok": ("nok", 1.0), "kr": ("nok", 1.0), "krone": ("nok", 1.0), "kroner": ("nok", 1.0),
    "percent": ("percent", 1.0), "%": ("percent", 1.0),
    "am": ("clock", 0.0), "a.m.": ("clock", 0.0), "pm": ("clock", 12.0), "p.m.": ("clock", 12.0),
}
_CURRENCY_SIGN = {"$": "usd", "us$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "₹": "inr"}
_CONVERSION_TOLERANCE = 0.06  # Wikipedia-style rounded conversions: 10 kg (23 lb) is 4% off


@dataclasses.dataclass(frozen=True)
class Quantity:
    """A number, year, decade, range end or date found in a text."""

    kind: str  # number | year | decade | date
    value: float = 0.0
    unit: str = ""  # the unit word as written ("" when none)
    dimension: str = ""  # length | mass | time | ... | count ("" = bare number)
    base: float = 0.0  # value in the dimension's base unit
    date: tuple[int | None, int | None, int | None] = (None, None, None)  # (year, month, day)
    start: int = 0
    end: int = 0
    text: str = ""

    def describe(self) -> str:
        text = self.text.strip()
        if self.unit and self.dimension not in {"clock", "usd", "eur", "gbp", "percent"} and self.unit not in text:
            text = f"{text} {self.unit}"
        return text


def _to_float(raw: str) -> float | None:
    raw = raw.strip()
    if raw.lower() in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[raw.lower()])
    if "-" in raw and raw.split("-")[0].lower() in _NUMBER_WORDS:
        a, b = raw.lower().split("-", 1)
        return float(_NUMBER_WORDS[a] + _NUMBER_WORDS.get(b, 0))
    if ":" in raw:
        return None
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", raw):
        raw = raw.replace(",", "")
    elif raw.count(",") == 1:
        raw = raw.replace(",", ".")
    try:
        return float(raw)
    except ValueError:
        return None


def _unit_after(text: str, end: int) -> tuple[str, str, float]:
    """The unit word following a number (hyphenated "23-pound" too): (unit, dimension, factor)."""
    after = text[end:end + 24]
    match = re.match(r"\s?-?\s?(°\s?[CF]\b|km/h|[A-Za-z.]+)", after)
    if not match:
        return "", "", 0.0
    word = fold(match.group(1)).replace(" ", "")
    if word in _UNITS:
        dim, factor = _UNITS[word]
        return word, dim, factor
    singular = word.rstrip(".")
    for candidate in (singular, singular[:-1] if singular.endswith("s") else "", singular[:-2]
                      if singular.endswith("es") else ""):
        if candidate and candidate in _UNITS:
            dim, factor = _UNITS[candidate]
            return candidate, dim, factor
    if singular and singular.isalpha() and singular not in STOPWORDS and len(singular) > 2:
        return stem(singular), "count", 1.0  # "fifty films": a count of something
    return "", "", 0.0


@functools.lru_cache(maxsize=16384)
def quantities(text: str) -> tuple[Quantity, ...]:
    found: list[Quantity] = []
    taken: list[tuple[int, int]] = []

    def free(s: int, e: int) -> bool:
        return all(e <= a or s >= b for a, b in taken)

    for index, pattern in enumerate(_DATE_PATTERNS):
        for m in pattern.finditer(text):
            if not free(m.start(), m.end()):
                continue
            groups = m.groupdict()
            if index == 4:  # numeric d/m/y or m/d/y: both readings
                a, b, y = int(groups["a"]), int(groups["b"]), int(groups["y"])
                readings = [(y, b, a), (y, a, b)] if a <= 12 and b <= 12 and a != b else [(y, b, a) if b <= 12
                                                                                         else (y, a, b)]
                for y_, m_, d_ in readings:
                    found.append(Quantity("date", date=(y_, m_, d_), start=m.start(), end=m.end(), text=m.group()))
            else:
                month = groups.get("m") or groups.get("mon")
                month_n = int(month) if month and month.isdigit() else _month_number(month)
                day = int(groups["d"]) if groups.get("d") else None
                year = int(groups["y"]) if groups.get("y") else None
                if index == 2 and day is None:
                    continue
                if month_n is None or (day is not None and not 1 <= day <= 31):
                    continue
                if index == 3 and fold(month.rstrip(".")) == "may" and not text[m.start():m.start() + 1].isupper():
                    continue  # "may 2019" lower-case is a modal verb before a number
                found.append(Quantity("date", date=(year, month_n, day), start=m.start(), end=m.end(), text=m.group()))
            taken.append((m.start(), m.end()))
    for m in _DECADE.finditer(text):
        if not free(m.start(), m.end()):
            continue
        century = m.group("c")
        decade = int(m.group("d"))
        if century is None:
            if not re.search(r"['’]\d0s|\bthe\s+\d0s", m.group(), re.IGNORECASE):
                continue  # "20s" of an age ("in her 20s") is not a decade of years
            start_year = (1900 if decade != 0 else 2000) + decade * 10
        else:
            start_year = int(century) * 100 + decade * 10
        found.append(Quantity("decade", value=float(start_year), start=m.start(), end=m.end(), text=m.group()))
        taken.append((m.start(), m.end()))
    for m in _RANGE_SHORT.finditer(text):
        if not free(m.start(), m.end()):
            continue
        first = int(m.group("a"))
        second = first // 100 * 100 + int(m.group("b"))
        if second <= first:
            continue
        for year in (first, second):
            found.append(Quantity("year", value=float(year), start=m.start(), end=m.end(), text=str(year)))
        taken.append((m.start(), m.end()))
    for m in _NUMBER.finditer(text):
        if not free(m.start(), m.end()):
            continue
        if m.group("ord"):
            value = float(_ORDINALS[m.group("ord").lower()])
            found.append(Quantity("number", value=value, dimension="ordinal", base=value, start=m.start(),
                                  end=m.end(), text=m.group()))
            continue
        raw = m.group("num") or m.group("word")
        if raw is None:
            continue
        if m.group("num") and ":" in raw:
            hours, minutes = raw.split(":")
            if int(hours) <= 24:
                unit, dim, factor = _unit_after(text, m.end())
                hour = int(hours) + (12 if unit in {"pm", "p.m."} and int(hours) < 12 else 0)
                value = hour + int(minutes) / 60
                found.append(Quantity("number", value=value, unit="clock", dimension="clock", base=value,
                                      start=m.start(), end=m.end(), text=m.group()))
            continue
        value = _to_float(raw)
        if value is None:
            continue
        if m.group("word") and raw.lower() in {"one", "half"} and _unit_after(text, m.end())[1] not in {
                "time", "length", "mass"}:
            continue  # "one of", "half of": rarely a quantity that can be checked
        if m.group("mult"):
            value *= _MULT[m.group("mult").lower()]
        kind = "year" if m.group("num") and re.fullmatch(r"1\d{3}|20\d{2}", raw) and not m.group("cur") \
            and not m.group("pct") else "number"
        if m.group("cur"):
            unit, dim, factor = m.group("cur").lower(), _CURRENCY_SIGN[m.group("cur").lower()], 1.0
        elif m.group("pct"):
            unit, dim, factor = "percent", "percent", 1.0
        else:
            unit, dim, factor = _unit_after(text, m.end())
            if dim == "clock":
                hour = value + (12 if unit in {"pm", "p.m."} and value < 12 else 0)
                found.append(Quantity("number", value=hour, unit="clock", dimension="clock", base=hour,
                                      start=m.start(), end=m.end(), text=m.group()))
                continue
        if kind == "year" and dim not in {"", "count"}:
            kind = "number"
        found.append(Quantity(kind, value=value, unit=unit, dimension=dim if kind == "number" else "",
                              base=value * factor if dim not in {"temp_c", "temp_f"} else _celsius(value, dim),
                              start=m.start(), end=m.end(), text=m.group()))
    return tuple(sorted(found, key=lambda q: q.start))


def _celsius(value: float, dim: str) -> float:
    return value if dim == "temp_c" else (value - 32) * 5 / 9


def _month_number(word: str | None) -> int | None:
    if not word:
        return None
    word = fold(word).rstrip(".")
    return _MONTHS.get(word) or _MONTH_ABBR.get(word)


def _close(a: float, b: float, tolerance: float) -> bool:
    if a == b:
        return True
    return tolerance > 0 and abs(a - b) <= tolerance * max(abs(a), abs(b))


def quantity_supported(q: Quantity, evidence: tuple[Quantity, ...]) -> bool:
    """Whether some evidence quantity states the claim's quantity q."""
    for e in evidence:
        if q.kind == "date":
            if e.kind == "date" and all(c is None or c == ec for c, ec in zip(q.date, e.date, strict=True)):
                return True
            continue
        if q.kind == "decade":
            years = [e.value] if e.kind in {"year", "decade"} else [e.date[0]] if e.kind == "date" and e.date[0] else []
            if any(y is not None and q.value <= y <= q.value + 9 for y in years):
                return True
            continue
        if q.kind == "year":
            if (e.kind in {"year"} and e.value == q.value) or (e.kind == "date" and e.date[0] == q.value) or (
                    e.kind == "number" and e.value == q.value):
                return True
            continue
        # a number
        if e.kind == "date":
            if q.dimension in {"", "count", "ordinal"} and q.value in {e.date[1], e.date[2]}:
                return True
            continue
        if e.kind not in {"number", "year"}:
            continue
        same_dimension = q.dimension and q.dimension == e.dimension and q.dimension not in {"count", "ordinal"}
        if same_dimension:
            tolerance = 0.0 if q.unit == e.unit or q.dimension in {"clock", "percent", "usd", "eur", "gbp", "nok"} \
                else _CONVERSION_TOLERANCE
            if _close(q.base, e.base, tolerance):
                return True
            continue
        if q.value == e.value and (not q.dimension or not e.dimension or q.dimension in {"count", "ordinal"}
                                   or e.dimension in {"count", "ordinal"}):
            return True
    return False


def _conversions(qs: tuple[Quantity, ...], text: str) -> set[int]:
    """Indexes of quantities written as a bracketed conversion of the one before ("10 kg (23 lb)")."""
    out = set()
    for i in range(1, len(qs)):
        prev, cur = qs[i - 1], qs[i]
        between = text[prev.end:cur.start]
        if re.fullmatch(r"\s*[(\[]\s*(?:about|approx\.?|c\.|circa|~)?\s*|\s*(?:/|or|,)\s*", between) \
                and prev.dimension and cur.dimension == prev.dimension and cur.unit != prev.unit:
            out.add(i)
    return out


# --- names ----------------------------------------------------------------------------------------

_NAME = re.compile(r"\b(?:[A-Z][a-z\u00C0-\u024F]*[A-Z][\w\u00C0-\u024F]*|[A-Z](?:\.[A-Z])+\.?|[A-Z][\w\u00C0-\u024F'’-]+)")
_NAME_STOP = frozenset({"the", "a", "an", "this", "that", "these", "it", "in", "on", "at", "of", "for", "and", "or",
                        "he", "she", "they", "his", "her", "their", "its", "we", "you", "i", "if", "as", "by",
                        "with", "from", "to", "after", "before", "during", "when", "while", "there", "some",
                        "patients", "please", "no", "not", "all", "every", "each", "only", "however", "but",
                        "also", "both", "do", "does", "is", "are", "was", "were", "be"})


def _ascii(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", fold(text)) if not unicodedata.combining(ch))


def _name_key(word: str) -> str:
    return re.sub(r"['’]s$|[^\w]", "", _ascii(word))


@dataclasses.dataclass(frozen=True)
class EvidenceNames:
    words: frozenset[str]  # name keys of every word
    stems: frozenset[str]
    joined: str  # every word key concatenated with spaces removed, for spacing variants
    acronyms: frozenset[str]  # initials of runs of capitalised words ("United States" -> "us")


@functools.lru_cache(maxsize=4096)
def evidence_names(text: str) -> EvidenceNames:
    words = [_name_key(w) for w in re.findall(r"[\w\u00C0-\u024F'’.-]+", text)]
    words = [w for w in words if w]
    acronyms = set()
    caps = re.findall(r"(?:\b[A-Z][\w\u00C0-\u024F]+(?:\s+(?:of|and|for|the|de)\s+|\s+|-)?){2,}", text)
    for run in caps:
        parts = [p for p in re.split(r"[\s-]+", run) if p and p[0].isupper()]
        initials = "".join(p[0] for p in parts).casefold()
        for i in range(len(initials)):
            for j in range(i + 2, len(initials) + 1):
                acronyms.add(initials[i:j])
    return EvidenceNames(frozenset(words), frozenset(stem(w) for w in words), "".join(words), frozenset(acronyms))


def _calendar(word: str) -> str | None:
    key = word.rstrip(".")
    for full in list(_MONTHS) + list(_WEEKDAYS):
        if len(key) >= 3 and full.startswith(key):
            return full
        if key.endswith("s") and full == key[:-1]:
            return full
    return None


def name_supported(name: str, ev: EvidenceNames) -> bool:
    key = _name_key(name)
    if not key:
        return True
    if key in ev.words or stem(key) in ev.stems or (len(key) > 3 and key in ev.joined):
        return True
    if re.fullmatch(r"(?:[a-z]\.?){2,6}", _ascii(name).replace(".", "")) and name.replace(".", "").isupper():
        return key in ev.acronyms  # "US" / "U.S." for "United States"
    calendar = _calendar(key)
    if calendar and any(_calendar(w) == calendar for w in ev.words if w[:3] == key[:3]):
        return True
    parts = [p for p in re.split(r"[-\s]", _ascii(name)) if p]
    return len(parts) > 1 and all(_name_key(p) in ev.words for p in parts)


def claim_names(claim: str) -> list[str]:
    """Capitalised words and acronyms of the claim that are not sentence openings or function words;
    a run of them that evidence writes as one word ("Tech Crunch") is also tried whole."""
    names = []
    for m in _NAME.finditer(claim):
        word = m.group()
        before = claim[:m.start()].rstrip()
        opening = not before or before[-1] in ".!?:;\"“(" or before.endswith("—")
        if fold(word).strip("'’") in _NAME_STOP or (opening and fold(word) in STOPWORDS):
            continue
        if opening and word.istitle() and (fold(word) in _OPENING_WORDS | BOUND_WORDS | NEGATION_CUES
                                           | EXCEPTION_CUES | ADDED_QUALIFIER_CUES or _common_word(word)):
            continue  # capitalised only because it opens the sentence ("Students are ...")
        if _month_number(word) or word.isdigit():
            continue  # months are checked as dates
        names.append(word)
    return names


def _common_word(word: str) -> bool:
    """A word found in many documents of the shipped frequency table: a common noun or verb, not a name."""
    from citetrace.idf import shipped

    table = shipped()
    return table.df.get(stem(fold(word)), 0) >= COMMON_WORD_DOCUMENTS


COMMON_WORD_DOCUMENTS = 40  # of ~5,500 documents
_OPENING_WORDS = frozenset({"patients", "please", "arrive", "bring", "remove", "wear", "check", "do", "you", "walk-in",
                            "walk-ins", "same-day", "appointments", "rescheduling", "cancelling", "every", "echo",
                            "physiotherapy", "mri", "no", "eat"})


def _missing_names(claim: str, evidence_text: str) -> list[str]:
    ev = evidence_names(evidence_text)
    words = claim_names(claim)
    missing = [w for w in words if not name_supported(w, ev)]
    if not missing:
        return []
    # "Tech Crunch" written "TechCrunch": adjacent capitalised words joined.
    joined_ok = set()
    for a, b in zip(words, words[1:], strict=False):
        if (a in missing or b in missing) and _name_key(a) + _name_key(b) in ev.words:
            joined_ok.update({a, b})
    return [w for w in missing if w not in joined_ok]


# --- the report -----------------------------------------------------------------------------------


@dataclasses.dataclass
class Conflict:
    kind: str  # quantity | quantity_elsewhere | name | bound | negation | qualifier | restriction | exception | addition
    message: str


@dataclasses.dataclass
class CheckReport:
    conflicts: list[Conflict]
    quantities: int = 0  # claim quantities checked
    quantities_missing: int = 0
    quantities_elsewhere: int = 0  # stated in the evidence, but not where the clause is about
    names: int = 0
    names_missing: int = 0
    lexical_coverage: float = 0.0  # share of claim content stems in the evidence (with its context)
    weakest_clause: float = 1.0  # lowest lexical coverage of a claim clause
    clauses: int = 0
    negation_mismatch: int = 0
    qualifier_added: int = 0
    exception_dropped: int = 0
    bound_added: int = 0
    local_coverage: float = 1.0  # lowest share of a claim clause stated by a single evidence sentence
    longest_sentence: int = 0  # content words of the claim's longest sentence (a rule is one short sentence)

    def first(self, kinds: frozenset[str] | set[str]) -> Conflict | None:
        return next((c for c in self.conflicts if c.kind in kinds), None)


def _overlap(a: set[str], b: frozenset[str] | set[str]) -> int:
    return len(a & b)


def check(claim: str, evidence: list[str], context: str = "", clause_floor: float = 0.2) -> CheckReport:
    """Runs every precise check of the claim against its evidence sentences (context: titles and
    headings, which count for words and names but not for numbers or polarity)."""
    report = CheckReport([])
    report.longest_sentence = max((len(content(s)) for s in sentences(claim)), default=0)
    evidence_text = "\n".join(evidence)
    claim_set = set(content(claim))
    context_set = set(content(context))
    evidence_set = frozenset(content(evidence_text)) | context_set
    sentence_sets = [(s, frozenset(content(s))) for s in evidence] or [(evidence_text, evidence_set)]
    if claim_set:
        report.lexical_coverage = len(claim_set & evidence_set) / len(claim_set)

    # Quantities, clause by clause against the evidence sentences the clause is about.
    claim_qs = quantities(claim)
    conversions = _conversions(claim_qs, claim)
    all_evidence_qs = tuple(q for s in evidence for q in quantities(s))
    for clause in clauses(claim, polarity=True) or [claim]:
        # The claim's own quantities that fall in the clause, read in the whole claim: a clause cut at
        # the dot of "8:30 p.m." reads 8:30 alone as the morning.
        offset = claim.find(clause)
        wanted = [(i, cq) for i, cq in enumerate(claim_qs) if offset <= cq.start + (cq.text[:1].isspace())
                  < offset + len(clause)] if offset >= 0 else [(-1, q) for q in quantities(clause)]
        if not wanted:
            continue
        words = {w for w in content(clause) if not w[0].isdigit()}
        overlaps = [_overlap(words, s_set | context_set) for _, s_set in sentence_sets]
        best = max(overlaps) if words and overlaps else 0
        pool = [s for (s, _), n in zip(sentence_sets, overlaps, strict=True) if best and n == best] or evidence
        pool_qs = tuple(q for s in pool for q in quantities(s))
        for index, q in wanted:
            report.quantities += 1
            if index in conversions and quantity_supported(claim_qs[index - 1], all_evidence_qs):
                continue
            if quantity_supported(q, pool_qs):
                continue
            said = ", ".join(dict.fromkeys(e.describe() for e in pool_qs)) or "no number"
            if quantity_supported(q, all_evidence_qs):
                report.quantities_elsewhere += 1
                kind = "quantity_elsewhere"  # stated, but about something else of the passage
            else:
                report.quantities_missing += 1
                kind = "quantity"
            report.conflicts.append(Conflict(kind, f"the claim says {q.describe()} but the cited passage says "
                                                   f"{said} about this"[:300]))
    # Names.
    names = claim_names(claim)
    report.names = len(names)
    missing = _missing_names(claim, f"{evidence_text}\n{context}")
    report.names_missing = len(missing)
    for name in missing[:1]:
        report.conflicts.append(Conflict("name", f"the claim names '{name}', which the cited passage does not"))
    evidence_tokens = set(tokens(evidence_text))
    claim_tokens = set(tokens(claim))
    for word in sorted((claim_tokens & BOUND_WORDS) - evidence_tokens):
        report.bound_added += 1
        report.conflicts.append(Conflict("bound", f"the claim says '{word}', a bound the cited passage does not state"))
    # Polarity, clause by clause against the evidence clause each matches best.
    evidence_clauses = [(c, set(content(c))) for s in evidence for c in clauses(s, polarity=True)]
    for clause in clauses(claim, polarity=True):
        c_set = set(content(clause)) - {stem(w) for w in NEGATION_CUES}
        if not c_set or not evidence_clauses:
            continue
        overlap = max(len(c_set & ec[1]) / len(c_set) for ec in evidence_clauses)
        if overlap < 0.5:
            continue
        # Among the evidence clauses this one restates best, one that agrees in polarity is enough
        # ("CT without contrast" has its own row next to "CT with contrast").
        best = [ec for ec in evidence_clauses if len(c_set & ec[1]) / len(c_set) == overlap]
        claim_negated = _negated(clause)
        if all(_negations(clause) != _negations(ec[0]) for ec in best):
            report.negation_mismatch += 1
            report.conflicts.append(Conflict(
                "negation", "negation disagrees: the claim says '" + ("not" if claim_negated else "affirmative")
                + "' where the cited passage says '" + ("affirmative" if claim_negated else "not") + "'"))
            break
    # Qualifiers the evidence does not make.
    for cue in sorted(ADDED_QUALIFIER_CUES & claim_tokens - evidence_tokens):
        report.qualifier_added += 1
        report.conflicts.append(Conflict("qualifier", f"the claim adds the qualifier '{cue}', which the cited passage "
                                                      "does not state"))
    # Restrictions and exceptions of the matched rules the claim drops (a rule is its sentence with the
    # qualifier sentences after it: "... 30 minutes early. However, patients who ... may arrive 15").
    matched = sorted(rule_units(evidence), key=lambda s: -_overlap(claim_set, s[1]))[:2]
    for sentence, s_set in matched:
        if _overlap(claim_set, s_set) < max(2, 0.5 * len(claim_set)):
            continue
        s_tokens = set(tokens(sentence))
        dropped = (s_tokens & RESTRICTION_CUES) - claim_tokens
        if dropped:
            report.exception_dropped += 1
            report.conflicts.append(Conflict("restriction", f"the claim drops the restriction '{sorted(dropped)[0]}' "
                                                            "of the rule it cites"))
            break
        cues = s_tokens & EXCEPTION_CUES
        if cues and not claim_tokens & EXCEPTION_CUES:
            rule, _, exception = re.split(r"\b(" + "|".join(sorted(cues)) + r")\b", sentence, maxsplit=1,
                                          flags=re.IGNORECASE)
            only_exception = set(content(exception)) - set(content(rule))
            if only_exception and len(only_exception & claim_set) / len(only_exception) < 0.5 \
                    and _overlap(claim_set, frozenset(content(rule))) >= 0.5 * len(claim_set):
                report.exception_dropped += 1
                report.conflicts.append(Conflict("exception", f"the claim drops the exception ('{sorted(cues)[0]} "
                                                              "...') of the rule it cites"))
                break
    # Locality: each polarity clause of the claim stated by ONE sentence (two rules merged into a third,
    # "do not eat" + "you may drink" is not "do not eat or drink").
    local = []
    for clause in clauses(claim, polarity=True) or [claim]:
        c_set = set(content(clause))
        if c_set:
            local.append(max(len(c_set & (s_set | context_set)) / len(c_set) for _, s_set in sentence_sets))
    report.local_coverage = min(local) if local else 1.0
    # Clauses with (almost) nothing behind them: added assertions.
    claim_clauses = clauses(claim)
    report.clauses = len(claim_clauses)
    for clause in claim_clauses:
        c_set = set(content(clause))
        c_cov = len(c_set & evidence_set) / len(c_set)
        report.weakest_clause = min(report.weakest_clause, c_cov)
        if c_cov < clause_floor:
            missing_words = ", ".join(sorted(c_set - evidence_set))
            report.conflicts.append(Conflict("addition", f"the claim adds an assertion the cited passage does not "
                                                         f"make ('{clause.strip()}': {missing_words})"[:300]))
    return report


_QUALIFIER_OPENING = re.compile(r"^\W*(except|exception|exceptions|however|unless|but|note|this does not apply|"
                                r"the only exception|otherwise|instead)\b", re.IGNORECASE)


def rule_units(evidence: list[str]) -> list[tuple[str, frozenset[str]]]:
    """Evidence sentences with the qualifier sentences that follow them attached."""
    units: list[str] = []
    for sentence in evidence:
        if units and _QUALIFIER_OPENING.match(sentence):
            units[-1] = f"{units[-1]} {sentence}"
        else:
            units.append(sentence)
    return [(u, frozenset(content(u))) for u in units]


def _negated(text: str) -> bool:
    return any(t in NEGATION_CUES for t in tokens(text))


def _negations(text: str) -> int:
    """Negation cues of a clause: "can not ... without" (two) is not "can ... without" (one)."""
    return sum(1 for t in tokens(text) if t in NEGATION_CUES)


def idf_weight(df: int, n: int) -> float:
    return math.log((n + 1) / (df + 0.5))
