"""Schedules: parsing what users type and the next run, across DST both ways and leap days."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from dexter.cron.schedule import (
    MIN_REFIRE_GAP,
    At,
    Cron,
    Every,
    ScheduleError,
    describe,
    format_duration,
    from_dict,
    latest_due,
    next_run,
    parse_at,
    parse_cron,
    parse_duration,
    parse_every,
    to_dict,
    zone,
)

NY = "America/New_York"
NOW = datetime(2026, 12, 1, 21, 0, tzinfo=UTC)


def local(moment: datetime | None, tz: str = NY) -> str:
    assert moment is not None
    return moment.astimezone(zone(tz)).strftime("%Y-%m-%d %H:%M:%S %Z")


def runs(schedule: Cron | Every, start: datetime, count: int) -> list[datetime]:
    out: list[datetime] = []
    at = start
    for _ in range(count):
        nxt = next_run(schedule, at)
        assert nxt is not None
        out.append(nxt)
        at = nxt
    return out


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("1h", 3600), ("1h30m", 5400), ("2d", 172800), ("45", 2700)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "5 parsecs", "1h-", "0m"])
def test_bad_durations_say_how_to_write_them(text: str) -> None:
    with pytest.raises(ScheduleError, match=r"30m|required"):
        parse_duration(text)


def test_format_duration_uses_two_largest_units() -> None:
    assert [format_duration(s) for s in (45, 90, 5400, 86400, 90061)] == [
        "45s",
        "1m30s",
        "1h30m",
        "1d",
        "1d1h",
    ]


def test_at_in_the_past_is_refused_and_future_is_kept_in_utc() -> None:
    with pytest.raises(ScheduleError, match="in the past"):
        parse_at("2026-12-01T15:59", NY, now=NOW)  # 20:59 UTC
    at = parse_at("2026-12-02T09:00", NY, now=NOW)
    assert at.at == datetime(2026, 12, 2, 14, 0, tzinfo=UTC)
    assert parse_at("2026-12-02T09:00Z", NY, now=NOW).at.hour == 9
    assert parse_at("+2h", NY, now=NOW).at == NOW + timedelta(hours=2)
    assert next_run(at, NOW) == at.at
    assert next_run(at, at.at) is None  # a one-shot runs once


def test_at_with_unreadable_time_explains_the_format() -> None:
    with pytest.raises(ScheduleError, match="2026-12-02T09:00"):
        parse_at("tomorrow morning", NY, now=NOW)


def test_every_stays_on_the_grid_of_its_anchor() -> None:
    every = parse_every("30m", anchor=NOW)
    assert next_run(every, NOW) == NOW + timedelta(minutes=30)
    # A run that finished 7 minutes late does not push later runs back.
    assert next_run(every, NOW + timedelta(minutes=37)) == NOW + timedelta(minutes=60)
    # Before the anchor (a clock set back to before the job was made) the grid runs backwards:
    # the next run is the next point on it, not the anchor, which may be a day away.
    assert next_run(every, NOW - timedelta(hours=1)) == NOW - timedelta(minutes=30)
    assert next_run(every, NOW - timedelta(days=1, minutes=10)) == NOW - timedelta(days=1)


def test_every_below_the_minimum_interval_is_refused() -> None:
    with pytest.raises(ScheduleError, match="too often"):
        parse_every("30s", anchor=NOW)


def test_every_is_elapsed_time_across_dst() -> None:
    anchor = datetime(2026, 3, 7, 14, 0, tzinfo=UTC)  # 09:00 EST
    every = Every(86400, anchor)
    second = next_run(every, anchor)
    assert local(second) == "2026-03-08 10:00:00 EDT"  # 24 h later, an hour later on the clock


def test_cron_weekdays_at_935_in_new_york() -> None:
    cron = parse_cron("35 9 * * 1-5", NY, now=NOW)
    fired = runs(cron, datetime(2026, 12, 4, 15, 0, tzinfo=UTC), 2)  # Friday 10:00 EST
    assert [local(f) for f in fired] == ["2026-12-07 09:35:00 EST", "2026-12-08 09:35:00 EST"]


def test_cron_spring_forward_runs_a_skipped_time_once_right_after_the_jump() -> None:
    cron = Cron("30 2 * * *", NY)
    fired = runs(cron, datetime(2026, 3, 7, 12, 0, tzinfo=UTC), 3)
    assert [local(f) for f in fired] == [
        "2026-03-08 03:00:00 EDT",
        "2026-03-09 02:30:00 EDT",
        "2026-03-10 02:30:00 EDT",
    ]


def test_cron_fall_back_runs_a_repeated_time_once() -> None:
    cron = Cron("30 1 * * *", NY)
    fired = runs(cron, datetime(2026, 10, 31, 12, 0, tzinfo=UTC), 3)
    assert [local(f) for f in fired] == [
        "2026-11-01 01:30:00 EDT",
        "2026-11-02 01:30:00 EST",
        "2026-11-03 01:30:00 EST",
    ]


def test_cron_hourly_through_fall_back_keeps_real_hours() -> None:
    cron = Cron("0 * * * *", NY)
    fired = runs(cron, datetime(2026, 11, 1, 4, 30, tzinfo=UTC), 4)  # 00:30 EDT
    gaps = {b - a for a, b in itertools.pairwise(fired)}
    assert gaps == {timedelta(hours=1)}


def test_cron_in_london_spring_forward() -> None:
    cron = Cron("30 1 * * *", "Europe/London")
    fired = runs(cron, datetime(2026, 3, 28, 12, 0, tzinfo=UTC), 2)
    assert [local(f, "Europe/London") for f in fired] == [
        "2026-03-29 02:00:00 BST",
        "2026-03-30 01:30:00 BST",
    ]


def test_cron_on_leap_day_waits_for_the_next_leap_year() -> None:
    cron = parse_cron("0 9 29 2 *", "UTC", now=NOW)
    fired = runs(cron, NOW, 2)
    assert fired == [
        datetime(2028, 2, 29, 9, 0, tzinfo=UTC),
        datetime(2032, 2, 29, 9, 0, tzinfo=UTC),
    ]


def test_every_across_a_leap_day_counts_it() -> None:
    anchor = datetime(2028, 2, 28, 12, 0, tzinfo=UTC)
    assert next_run(Every(86400, anchor), anchor) == datetime(2028, 2, 29, 12, 0, tzinfo=UTC)


def test_six_field_cron_has_leading_seconds() -> None:
    cron = parse_cron("15 30 9 * * *", "UTC", now=NOW)
    assert next_run(cron, NOW) == datetime(2026, 12, 2, 9, 30, 15, tzinfo=UTC)


def test_cron_never_refires_within_the_gap() -> None:
    cron = Cron("0 9 * * *", "UTC")
    fire = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    # Asked again a moment after firing (a fast run), it moves on to tomorrow.
    nxt = next_run(cron, fire - timedelta(milliseconds=500))
    assert nxt is not None and nxt - (fire - timedelta(milliseconds=500)) >= MIN_REFIRE_GAP
    assert nxt == datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def test_day_of_month_and_weekday_combine_like_cron() -> None:
    cron = Cron("0 9 13 * 5", "UTC")  # the 13th OR any Friday
    fired = runs(cron, datetime(2026, 11, 30, tzinfo=UTC), 3)
    assert [f.day for f in fired] == [4, 11, 13]


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("* * *", "needs 5"),
        ("61 * * * *", "invalid|Bad"),
        ("0 0 31 2 *", "invalid|never"),
        ("*/10 * * * * *", "shortest interval"),
    ],
)
def test_bad_cron_expressions_are_refused(expr: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        parse_cron(expr, "UTC", now=NOW)


def test_aliases_and_unknown_zone() -> None:
    assert parse_cron("@daily", "UTC", now=NOW).expr == "0 0 * * *"
    with pytest.raises(ScheduleError, match="IANA"):
        parse_cron("0 9 * * *", "Mars/Olympus", now=NOW)


def test_latest_due_after_a_long_sleep() -> None:
    every = Every(1800, NOW)
    recorded = NOW + timedelta(minutes=30)
    woke = NOW + timedelta(hours=5, minutes=10)
    assert latest_due(every, recorded, woke) == NOW + timedelta(hours=5)
    cron = Cron("35 9 * * 1-5", NY)
    woke = datetime(2026, 12, 3, 18, 0, tzinfo=UTC)  # Thursday 13:00 EST
    assert local(latest_due(cron, datetime(2026, 12, 2, 14, 35, tzinfo=UTC), woke)) == (
        "2026-12-03 09:35:00 EST"
    )


def test_round_trip_and_description() -> None:
    for schedule in (At(NOW), Every(3600, NOW), Cron("35 9 * * 1-5", NY)):
        assert from_dict(to_dict(schedule)) == schedule
    assert describe(Every(3600, NOW)) == "every 1h"
    assert describe(Cron("35 9 * * 1-5", NY)) == "cron 35 9 * * 1-5 (America/New_York)"
    with pytest.raises(ScheduleError):
        from_dict({"kind": "sometimes"})
