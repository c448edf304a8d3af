"""What the orchestrator says to a caller, as data: one versioned file per locale
(services/orchestrator/data/wording/<locale>.yaml). The code chooses *which* message and fills in
values; the words, date formats and list conjunctions come from the file, whose locale and version
go into the trace record.

A request's locale picks the file: the exact locale, else a file listing the locale's language,
else English. Every file must have the same keys and the same placeholders as en.yaml (checked at
load, so a missing translation fails at start-up, not in an answer)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
import string
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

WORDING_DIR = Path(__file__).resolve().parent.parent / "data" / "wording"
DEFAULT_LOCALE = "en"
_SPACES = re.compile(r"\s+")


def _fold(value: Any) -> Any:
    if isinstance(value, str):
        return _SPACES.sub(" ", value)
    if isinstance(value, dict):
        return {k: _fold(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fold(v) for v in value]
    return value


def _shape(value: Any, path: str = "") -> dict[str, Any]:
    """key path -> placeholder names (templates) or the kind of value (lists, maps)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_shape(item, f"{path}.{key}" if path else str(key)))
        return out
    if isinstance(value, str):
        return {path: frozenset(name for _, name, _, _ in string.Formatter().parse(value) if name)}
    return {path: f"list of {len(value)}" if isinstance(value, list) else type(value).__name__}


@dataclasses.dataclass(frozen=True)
class Wording:
    """One locale's messages."""

    locale: str
    version: str
    languages: tuple[str, ...]
    messages: dict[str, Any]

    def _get(self, *path: str) -> Any:
        value: Any = self.messages
        for key in path:
            value = value[key]
        return value

    def say(self, *path: str, **values: Any) -> str:
        return self._get(*path).format(**values)

    # -- fixed messages ----------------------------------------------------------------------------

    def boundary(self, kind: str) -> str:
        return self.say("boundary", kind)

    def abstain(self, part_kind: str) -> str:
        table = self.messages["abstain"]
        return table.get(part_kind, table["OTHER_POLICY"])

    def unavailable(self, service: str) -> str:
        return self.say("unavailable", service)

    # -- values inside sentences -------------------------------------------------------------------

    def specialty(self, name: str) -> str:
        return self.messages["specialties"].get(name) or name.replace("_", " ")

    def alternatives(self, names: Iterable[str]) -> str:
        """"A", "A or B", "A, B or C" (sorted, as the caller reads them)."""
        ordered = sorted(names)
        if len(ordered) == 1:
            return ordered[0]
        separator = self.say("lists", "separator")
        return self.say("lists", "last_alternative", items=separator.join(ordered[:-1]), last=ordered[-1])

    def listing(self, items: Sequence[str]) -> str:
        return self.say("lists", "separator").join(items)

    def _date_values(self, value: dt.datetime | dt.date) -> dict[str, Any]:
        out: dict[str, Any] = {
            "weekday": self.messages["dates"]["weekdays"][value.weekday()],
            "month": self.messages["dates"]["months"][value.month - 1],
            "day": value.day, "year": value.year,
        }
        if isinstance(value, dt.datetime):
            out.update(hour=value.hour, minute=value.minute, zone=value.tzname() or "")
        return out

    def date(self, form: str, value: dt.datetime | dt.date) -> str:
        """A date or time in one of the file's forms (dates.day, dates.slot_time, ...)."""
        return self.say("dates", form, **self._date_values(value))


class WordingError(ValueError):
    pass


def _load_file(path: Path) -> Wording:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    try:
        locale, version = str(raw.pop("locale")), str(raw.pop("version"))
        languages = tuple(str(lang).lower() for lang in raw.pop("languages"))
    except KeyError as missing:
        raise WordingError(f"{path}: {missing} is required") from None
    return Wording(locale, version, languages, _fold(raw))


@dataclasses.dataclass(frozen=True)
class Catalog:
    """Every locale's wording; `for_locale` picks one for a request."""

    by_locale: dict[str, Wording]
    default: Wording

    def for_locale(self, locale: str) -> Wording:
        wanted = locale.strip().replace("_", "-").lower()
        if not wanted:
            return self.default
        exact = self.by_locale.get(wanted)
        if exact is not None:
            return exact
        language = wanted.split("-", 1)[0]
        for wording in self.by_locale.values():
            if language in wording.languages:
                return wording
        return self.default

    @property
    def versions(self) -> dict[str, str]:
        return {w.locale: w.version for w in self.by_locale.values()}


@functools.lru_cache(maxsize=2)
def load_catalog(directory: Path = WORDING_DIR) -> Catalog:
    files = sorted(directory.glob("*.yaml"))
    loaded = [_load_file(path) for path in files]
    by_locale = {w.locale.lower(): w for w in loaded}
    if DEFAULT_LOCALE not in by_locale:
        raise WordingError(f"{directory}: no {DEFAULT_LOCALE}.yaml (the default wording)")
    default = by_locale[DEFAULT_LOCALE]
    expected = _shape(default.messages)
    for wording in loaded:
        if wording is default:
            continue
        shape = _shape(wording.messages)
        missing = sorted(set(expected) - set(shape) - {k for k in expected if k.startswith("specialties.")})
        differing = sorted(k for k in expected if k in shape and shape[k] != expected[k]
                           and not k.startswith("specialties."))
        if missing or differing:
            raise WordingError(f"wording {wording.locale}: missing {missing or 'nothing'}; placeholders or "
                               f"shape differ from {DEFAULT_LOCALE} in {differing or 'nothing'}")
    return Catalog(by_locale, default)
