"""Active hours: day windows, overnight windows that cross midnight, day sets."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dexter.cron.active import ActiveHours, parse_active_hours, parse_days, parse_window
from dexter.cron.schedule import ScheduleError, zone

NY = "America/New_York"


def at(text: str, tz: str = NY) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=zone(tz))


def test_market_hours_on_weekdays() -> None:
    hours = parse_active_hours("09:30-16:00", NY, "mon-fri")
    assert hours.contains(at("2026-12-01T09:30"))  # Tuesday
    assert hours.contains(at("2026-12-01T16:00"))  # the end minute is included
    assert not hours.contains(at("2026-12-01T16:01"))
    assert not hours.contains(at("2026-12-01T09:29"))
    assert not hours.contains(at("2026-12-05T12:00"))  # Saturday
    # Judged in the job's zone, whatever zone the moment is given in.
    assert hours.contains(datetime(2026, 12, 1, 15, 0, tzinfo=UTC))  # 10:00 EST


def test_overnight_window_belongs_to_the_day_it_opens() -> None:
    hours = parse_active_hours("22:00-02:00", NY, "fri")
    assert hours.overnight
    assert hours.contains(at("2026-12-04T23:30"))  # Friday night
    assert hours.contains(at("2026-12-05T01:59"))  # early Saturday, still Friday's window
    assert hours.contains(at("2026-12-05T02:00"))
    assert not hours.contains(at("2026-12-05T02:01"))
    assert not hours.contains(at("2026-12-05T23:00"))  # Saturday's night is not listed
    assert not hours.contains(at("2026-12-04T01:00"))  # Thursday's window is not listed
    assert not hours.contains(at("2026-12-04T12:00"))


def test_next_open() -> None:
    hours = parse_active_hours("09:30-16:00", NY, "mon-fri")
    friday_evening = at("2026-12-04T17:00")
    assert hours.next_open(friday_evening) == at("2026-12-07T09:30").astimezone(UTC)
    inside = at("2026-12-07T10:00")
    assert hours.next_open(inside) == inside.astimezone(UTC)
    night = parse_active_hours("22:00-06:00", NY, None)
    assert night.next_open(at("2026-12-01T12:00")) == at("2026-12-01T22:00").astimezone(UTC)


def test_window_opening_on_a_dst_change_day() -> None:
    hours = parse_active_hours("02:30-04:00", NY, None)
    opened = hours.next_open(at("2026-03-08T00:00"))
    # 02:30 does not exist that night; the window opens at the wall-clock time after the jump.
    assert opened.astimezone(zone(NY)).strftime("%H:%M %Z") == "03:30 EDT"


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("mon-fri", {0, 1, 2, 3, 4}),
        ("sat-sun", {5, 6}),
        ("fri-mon", {4, 5, 6, 0}),
        ("mon,wed,fri", {0, 2, 4}),
        ("Tuesday", {1}),
        ("daily", set(range(7))),
        ("weekends", {5, 6}),
    ],
)
def test_day_sets(text: str, days: set[int]) -> None:
    assert parse_days(text) == frozenset(days)


@pytest.mark.parametrize("text", ["9-5", "09:30", "25:00-26:00", "10:00-10:00"])
def test_bad_windows(text: str) -> None:
    with pytest.raises(ScheduleError, match=r"[Aa]ctive hours"):
        parse_window(text)


def test_bad_days_and_round_trip() -> None:
    with pytest.raises(ScheduleError, match="mon-fri"):
        parse_days("funday")
    hours = parse_active_hours("22:00-02:00", NY, "mon-fri")
    assert ActiveHours.from_dict(hours.to_dict()) == hours
    assert hours.describe() == "22:00-02:00 mon-fri (America/New_York)"
