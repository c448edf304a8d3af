"""Date expressions resolved in the location's zone against as_of."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from services.orchestrator.core.dates import day_bounds_utc, resolve

NY = ZoneInfo("America/New_York")
AUCKLAND = ZoneInfo("Pacific/Auckland")
# Monday 30 November 2026, 13:00 UTC = 08:00 in New York, Tuesday 02:00 in Auckland.
AS_OF = dt.datetime(2026, 11, 30, 13, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(("text", "expected"), [
    ("can i come today", "2026-11-30"),
    ("book cardiology tomorrow", "2026-12-01"),
    ("the day after tomorrow", "2026-12-02"),
    ("next monday", "2026-12-07"),
    ("this friday", "2026-12-04"),
    ("on friday", "2026-12-04"),
    ("monday", "2026-11-30"),
    ("next friday", "2026-12-11"),
    ("on the 3rd", "2026-12-03"),
    ("on the 30th", "2026-11-30"),
    ("the 29th", "2026-12-29"),
    ("2027-01-15", "2027-01-15"),
    ("december 3", "2026-12-03"),
    ("3rd of december", "2026-12-03"),
    ("november 2", "2027-11-02"),
])
def test_single_days_in_new_york(text, expected):
    found = resolve(text, AS_OF, NY)
    assert found is not None
    assert found.start.isoformat() == expected
    assert (found.end - found.start).days == 1


def test_tomorrow_across_the_date_line_uses_the_location_zone():
    # 13:00 UTC Monday is already Tuesday in Auckland: "tomorrow" there is Wednesday.
    assert resolve("tomorrow", AS_OF, AUCKLAND).start == dt.date(2026, 12, 2)
    assert resolve("tomorrow", AS_OF, NY).start == dt.date(2026, 12, 1)


def test_utc_bounds_follow_the_zone_and_dst():
    start, end = day_bounds_utc(dt.date(2026, 12, 1), dt.date(2026, 12, 2), NY)
    assert (start, end) == (dt.datetime(2026, 12, 1, 5, tzinfo=dt.UTC), dt.datetime(2026, 12, 2, 5, tzinfo=dt.UTC))
    # 8 March 2026: New York springs forward, the local day has 23 hours.
    start, end = day_bounds_utc(dt.date(2026, 3, 8), dt.date(2026, 3, 9), NY)
    assert (end - start) == dt.timedelta(hours=23)


def test_weeks_are_ranges():
    found = resolve("anything next week", AS_OF, NY)
    assert (found.start, found.end) == (dt.date(2026, 12, 7), dt.date(2026, 12, 14))
    found = resolve("this week", AS_OF, NY)
    assert (found.start, found.end) == (dt.date(2026, 11, 30), dt.date(2026, 12, 7))


def test_no_date_and_explanations():
    assert resolve("when should i arrive", AS_OF, NY) is None
    assert "America/New_York" in resolve("tomorrow", AS_OF, NY).explanation
