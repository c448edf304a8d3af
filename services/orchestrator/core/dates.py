"""Date expressions resolved in a location's time zone against the request's as_of (pure).

Conventions (recorded in each explanation):
- "today" / "tomorrow" / "day after tomorrow": the local calendar day of as_of, +1, +2.
- "<weekday>", "this <weekday>", "on <weekday>": the next such day on or after today.
- "next <weekday>": that weekday in the following calendar week (weeks start on Monday).
- "on the 3rd" / "the 21st": that day of this month if not yet past, else of the next month that has it.
- "December 3", "3 December", ISO "2026-12-03"; a month-day already past means next year.
- "this week" / "next week": the rest of this week / Monday..Sunday of next week.
The result is a half-open local date range [start, end) and its UTC instants."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from zoneinfo import ZoneInfo

WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6,
    "mandag": 0, "tirsdag": 1, "onsdag": 2, "torsdag": 3, "fredag": 4, "lørdag": 5, "søndag": 6,
}
MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1, "feb": 2, "mar": 3, "apr": 4,
    "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}
_WD = "|".join(sorted(WEEKDAYS, key=len, reverse=True))
_MON = "|".join(sorted(MONTHS, key=len, reverse=True))
_ORD = r"(\d{1,2})(?:st|nd|rd|th)?"


@dataclasses.dataclass(frozen=True)
class DateRange:
    surface: str
    start: dt.date  # inclusive, local
    end: dt.date  # exclusive, local
    explanation: str

    def utc_bounds(self, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
        return day_bounds_utc(self.start, self.end, zone)


def day_bounds_utc(start: dt.date, end: dt.date, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
    """Local midnight of start and of end (exclusive) as UTC instants (DST-safe)."""
    def at_midnight(day: dt.date) -> dt.datetime:
        return dt.datetime.combine(day, dt.time(0, 0), tzinfo=zone).astimezone(dt.UTC)

    return at_midnight(start), at_midnight(end)


def _one(surface: str, day: dt.date, why: str) -> DateRange:
    return DateRange(surface, day, day + dt.timedelta(days=1), f"'{surface}' -> {day.isoformat()} ({why})")


def _day_of_month(today: dt.date, day: int) -> dt.date | None:
    year, month = today.year, today.month
    for _ in range(13):
        try:
            candidate = dt.date(year, month, day)
        except ValueError:
            candidate = None
        if candidate is not None and candidate >= today:
            return candidate
        month += 1
        if month == 13:
            year, month = year + 1, 1
    return None


def _month_day(today: dt.date, month: int, day: int) -> dt.date | None:
    for year in (today.year, today.year + 1):
        try:
            candidate = dt.date(year, month, day)
        except ValueError:
            continue
        if candidate >= today:
            return candidate
    return None


def resolve(text: str, as_of: dt.datetime, zone: ZoneInfo) -> DateRange | None:
    """The first date expression in `text` (lowercase, normalized), or None."""
    today = as_of.astimezone(zone).date()
    tz_note = f"in {zone.key}, as_of local date {today.isoformat()}"
    if m := re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        try:
            day = dt.date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            return None
        return _one(m[0], day, "ISO date")
    if m := re.search(r"\b(day after tomorrow|i overmorgen|overmorgen)\b", text):
        return _one(m[0], today + dt.timedelta(days=2), tz_note)
    if m := re.search(r"\b(tomorrow|i morgen)\b", text):
        return _one(m[0], today + dt.timedelta(days=1), tz_note)
    if m := re.search(r"\b(today|tonight|this (morning|afternoon|evening)|i dag)\b", text):
        return _one(m[0], today, tz_note)
    if m := re.search(rf"\bnext ({_WD})\b", text):
        weekday = WEEKDAYS[m[1]]
        next_monday = today + dt.timedelta(days=7 - today.weekday())
        return _one(m[0], next_monday + dt.timedelta(days=weekday), f"that weekday of the following week, {tz_note}")
    if m := re.search(rf"\b(?:(?:this|on|coming|this coming|på) )?({_WD})\b", text):
        weekday = WEEKDAYS[m[1]]
        return _one(m[0], today + dt.timedelta(days=(weekday - today.weekday()) % 7),
                    f"next such day on or after today, {tz_note}")
    if m := re.search(rf"\b({_MON})\.? {_ORD}\b", text) or re.search(rf"\b{_ORD} (?:of )?({_MON})\b", text):
        month_name, day_text = (m[1], m[2]) if m[1] in MONTHS else (m[2], m[1])
        day = _month_day(today, MONTHS[month_name], int(day_text))
        return _one(m[0], day, f"next such date on or after today, {tz_note}") if day else None
    if m := re.search(r"\b(?:on )?the (\d{1,2})(?:st|nd|rd|th)\b|\bon the (\d{1,2})\b", text):
        day = _day_of_month(today, int(m[1] or m[2]))
        return _one(m[0], day, f"day of this month, else the next month that has it, {tz_note}") if day else None
    if m := re.search(r"\bnext week\b|\bneste uke\b", text):
        start = today + dt.timedelta(days=7 - today.weekday())
        return DateRange(m[0], start, start + dt.timedelta(days=7),
                         f"'{m[0]}' -> {start.isoformat()}..{(start + dt.timedelta(days=6)).isoformat()} ({tz_note})")
    if m := re.search(r"\bthis week\b|\bdenne uken\b", text):
        end = today + dt.timedelta(days=7 - today.weekday())
        return DateRange(m[0], today, end,
                         f"'{m[0]}' -> {today.isoformat()}..{(end - dt.timedelta(days=1)).isoformat()} ({tz_note})")
    return None
