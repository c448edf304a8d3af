"""The one validation layer at the edge of every RPC (issue 17 §2), driven by the request's proto
descriptors and the field-rule table libs/citetrace/field_rules.yaml: timestamps in a sane range,
enum numbers the enum declares, string/bytes lengths and repeated counts bounded, IDs matched whole
(re.fullmatch) against their documented patterns, locales as BCP 47 tags, integers within their
documented ranges. The server kit calls `validate_request` before a servicer runs; cores reuse
`PATTERNS` / `id_matches` / `preview` rather than keeping their own copies.

Errors never echo more than a bounded prefix of the offending value (`preview`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
from importlib import resources
from typing import Any

import yaml
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from citetrace.kit.errors import InvalidArgument

PREVIEW_CHARS = 32

# BCP 47 (RFC 5646) language tag: language[-script][-region](-variant)*(-extension)*[-x-private],
# or a private-use tag; case-insensitive; at most 35 characters here.
_BCP47 = re.compile(
    r"(?:[A-Za-z]{2,3}(?:-[A-Za-z]{3}){0,3}|[A-Za-z]{4,8})"
    r"(?:-[A-Za-z]{4})?"
    r"(?:-(?:[A-Za-z]{2}|[0-9]{3}))?"
    r"(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*"
    r"(?:-[0-9A-WY-Za-wy-z](?:-[A-Za-z0-9]{2,8})+)*"
    r"(?:-[Xx](?:-[A-Za-z0-9]{1,8})+)?"
    r"|[Xx](?:-[A-Za-z0-9]{1,8})+"
)
MAX_LOCALE_CHARS = 35


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """A bounded, printable prefix of an offending value for messages: repr of at most `limit`
    characters, with the full length when it was cut."""
    if isinstance(value, bytes):
        text = value[:limit].hex()
        return text + (f"... ({len(value)} bytes)" if len(value) > limit else "")
    text = str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def is_locale(text: str) -> bool:
    return len(text) <= MAX_LOCALE_CHARS and _BCP47.fullmatch(text) is not None


@dataclasses.dataclass(frozen=True)
class FieldRule:
    pattern: str = ""
    reason: str = ""
    locale: bool = False
    max_chars: int | None = None
    max_bytes: int | None = None
    max_items: int | None = None
    min: int | None = None
    max: int | None = None


@dataclasses.dataclass(frozen=True)
class Rules:
    max_chars: int
    max_bytes: int
    max_items: int
    max_depth: int
    min_seconds: int
    max_seconds: int
    time_range: str
    patterns: dict[str, re.Pattern[str]]
    fields: dict[tuple[str, str], FieldRule]


def _epoch(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


@functools.cache
def rules() -> Rules:
    raw = yaml.safe_load(resources.files("citetrace").joinpath("field_rules.yaml").read_text(encoding="utf-8"))
    patterns = {name: re.compile(p) for name, p in raw["patterns"].items()}
    fields: dict[tuple[str, str], FieldRule] = {}
    for message, entries in raw["fields"].items():
        for field, spec in entries.items():
            rule = FieldRule(**spec)
            if rule.pattern and rule.pattern not in patterns:
                raise ValueError(f"field_rules.yaml: {message}.{field} names unknown pattern {rule.pattern}")
            fields[(message, field)] = rule
    d = raw["defaults"]
    return Rules(max_chars=d["max_chars"], max_bytes=d["max_bytes"], max_items=d["max_items"],
                 max_depth=d["max_depth"], min_seconds=_epoch(raw["timestamps"]["min"]),
                 max_seconds=_epoch(raw["timestamps"]["max"]),
                 time_range=f'{raw["timestamps"]["min"]}..{raw["timestamps"]["max"]}', patterns=patterns, fields=fields)


def pattern(name: str) -> re.Pattern[str]:
    """A documented ID pattern of field_rules.yaml; match values with .fullmatch."""
    return rules().patterns[name]


def id_matches(name: str, value: str) -> bool:
    return pattern(name).fullmatch(value) is not None


def validate_request(request: Message) -> None:
    """Raises InvalidArgument (reason in ErrorInfo, the field's path in its metadata) for the first
    rule a request breaks; returns None when it keeps them all."""
    _check_message(request, "", rules(), 1)


def _fail(reason: str, path: str, message: str) -> InvalidArgument:
    """`path` is the field's path with indexes (slots[2].slot_id); ErrorInfo's "field" drops them."""
    field = re.sub(r"\[[^\]]*\]", "", path) or "request"
    return InvalidArgument(reason, f"{path or 'request'}: {message}", field=field)


def _check_message(msg: Message, path: str, r: Rules, depth: int) -> None:
    if depth > r.max_depth:
        raise _fail("TOO_DEEP", path, f"messages nest more than {r.max_depth} levels")
    desc: Descriptor = msg.DESCRIPTOR
    if desc.full_name == "google.protobuf.Timestamp":
        _check_timestamp(msg, path, r)
        return
    for field, value in msg.ListFields():
        rule = r.fields.get((desc.full_name, field.name), FieldRule())
        fpath = f"{path}.{field.name}" if path else field.name
        if field.is_repeated:
            limit = rule.max_items if rule.max_items is not None else r.max_items
            if len(value) > limit:
                raise _fail("TOO_MANY_ITEMS", fpath, f"{len(value)} entries; at most {limit}")
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                for key, item in value.items():
                    _check_scalar_like(key, field.message_type.fields_by_name["key"], FieldRule(),
                                       f"{fpath}[key]", r, depth)
                    _check_scalar_like(item, field.message_type.fields_by_name["value"], FieldRule(),
                                       f"{fpath}[{preview(key, 16)}]", r, depth)
                continue
            for i, item in enumerate(value):
                _check_scalar_like(item, field, rule, f"{fpath}[{i}]", r, depth)
        else:
            _check_scalar_like(value, field, rule, fpath, r, depth)


def _check_scalar_like(value: Any, field: FieldDescriptor, rule: FieldRule, path: str, r: Rules,
                       depth: int) -> None:
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE or kind == FieldDescriptor.TYPE_GROUP:
        _check_message(value, path, r, depth + 1)
    elif kind == FieldDescriptor.TYPE_ENUM:
        if field.enum_type.values_by_number.get(value) is None:
            raise _fail("UNKNOWN_ENUM_VALUE", path, f"{preview(value)} is not a value of {field.enum_type.full_name}")
    elif kind == FieldDescriptor.TYPE_STRING:
        # No field takes U+0000, and PostgreSQL cannot store it in text: without this a NUL reached
        # the database and came back INTERNAL (found by the fuzz suite on PostgreSQL).
        if "\x00" in value:
            raise _fail("NUL_CHARACTER", path, "contains a NUL character (U+0000), which no field accepts")
        # An ID's pattern bounds its length: a 100 KB ID is INVALID_<ID>, not merely too long.
        if value and rule.pattern and r.patterns[rule.pattern].fullmatch(value) is None:
            raise _fail(rule.reason or "INVALID_ID", path,
                        f"{preview(value)} does not match {r.patterns[rule.pattern].pattern}")
        limit = rule.max_chars if rule.max_chars is not None else r.max_chars
        if len(value) > limit:
            raise _fail(rule.reason or "FIELD_TOO_LONG", path, f"{len(value)} characters; at most {limit}")
        if value and rule.locale and not is_locale(value):
            raise _fail(rule.reason or "INVALID_LOCALE", path,
                        f"{preview(value)} is not a BCP 47 language tag like en or nb-NO")
    elif kind == FieldDescriptor.TYPE_BYTES:
        limit = rule.max_bytes if rule.max_bytes is not None else r.max_bytes
        if len(value) > limit:
            raise _fail("FIELD_TOO_LONG", path, f"{len(value)} bytes; at most {limit}")
    elif isinstance(value, int) and not isinstance(value, bool) and (
            (rule.min is not None and value < rule.min) or (rule.max is not None and value > rule.max)):
        raise _fail(rule.reason or "OUT_OF_RANGE", path, f"{value} is outside {rule.min}..{rule.max}")


def _check_timestamp(ts: Message, path: str, r: Rules) -> None:
    seconds, nanos = ts.seconds, ts.nanos
    if not 0 <= nanos <= 999_999_999:
        raise _fail("INVALID_TIMESTAMP", path, f"nanos {nanos} is outside 0..999999999")
    if not r.min_seconds <= seconds < r.max_seconds:
        raise _fail("INVALID_TIMESTAMP", path, f"seconds {seconds} is outside the supported range {r.time_range}")
