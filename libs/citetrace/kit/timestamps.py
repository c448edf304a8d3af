"""Time, one way: the domain works with timezone-aware UTC datetimes, the wire with
google.protobuf.Timestamp, humans with ISO 8601. A naive datetime is taken to be UTC (stores that keep
naive UTC columns convert with `naive_utc`)."""

from __future__ import annotations

import datetime as dt

from google.protobuf.timestamp_pb2 import Timestamp

from citetrace.kit.errors import InvalidArgument

UTC = dt.UTC


def utc_now() -> dt.datetime:
    return dt.datetime.now(UTC)


def as_utc(value: dt.datetime) -> dt.datetime:
    """`value` as an aware UTC datetime (naive means UTC already)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def naive_utc(value: dt.datetime) -> dt.datetime:
    """`value` as a naive UTC datetime, for columns that store UTC without a zone."""
    return as_utc(value).replace(tzinfo=None)


def to_timestamp(value: dt.datetime | None) -> Timestamp | None:
    """The Timestamp of `value`; None stays None (a message field left unset)."""
    if value is None:
        return None
    out = Timestamp()
    out.FromDatetime(as_utc(value))
    return out


def from_timestamp(value: Timestamp) -> dt.datetime:
    return value.ToDatetime(tzinfo=UTC)


def field_time(message, field: str) -> dt.datetime | None:
    """The aware datetime of a message's Timestamp field, or None when the field is unset; a value
    outside the range a datetime can hold is INVALID_ARGUMENT INVALID_TIMESTAMP naming the field."""
    if not message.HasField(field):
        return None
    try:
        return from_timestamp(getattr(message, field))
    except (ValueError, OverflowError) as exc:
        raise InvalidArgument("INVALID_TIMESTAMP", f"{field} is not a valid timestamp", field=field) from exc


class NoOffset(ValueError):
    """An ISO 8601 time without a UTC offset where one is required."""


def parse_iso(text: str, *, naive_is_utc: bool = True) -> dt.datetime:
    """An ISO 8601 time ("Z" allowed) as an aware UTC datetime. Without an offset it is UTC, or
    NoOffset when `naive_is_utc` is False; ValueError when it is not a time at all."""
    parsed = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if parsed.tzinfo is None and not naive_is_utc:
        raise NoOffset(f"{text!r} has no UTC offset")
    return as_utc(parsed)


def iso_z(value: dt.datetime) -> str:
    """ISO 8601 in UTC with a trailing Z, e.g. 2026-01-05T09:30:00Z."""
    return as_utc(value).isoformat().replace("+00:00", "Z")
