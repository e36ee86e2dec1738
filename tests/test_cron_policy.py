"""Backoff, retries, active-hours scheduling and the missed-run policy, as pure rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dexter.cron.active import parse_active_hours
from dexter.cron.policy import (
    MISSED_GRACE,
    after_error,
    backoff,
    missed_decision,
    next_active_run,
)
from dexter.cron.schedule import At, Cron, Every, zone

NOW = datetime(2026, 12, 1, 21, 0, tzinfo=UTC)
NY = "America/New_York"


@pytest.mark.parametrize(
    ("errors", "wait"),
    [(1, 30), (2, 60), (3, 300), (4, 900), (5, 3600), (6, 3600), (40, 3600)],
)
def test_backoff_table(errors: int, wait: int) -> None:
    assert backoff(errors) == timedelta(seconds=wait)


def test_one_shot_retries_three_times_then_disables() -> None:
    at = At(NOW + timedelta(hours=1))
    first = after_error(at, consecutive_errors=1, now=NOW, active=None)
    assert (first.next_run_at, first.disable) == (NOW + timedelta(seconds=30), False)
    second = after_error(at, consecutive_errors=2, now=NOW, active=None)
    assert second.next_run_at == NOW + timedelta(minutes=1)
    third = after_error(at, consecutive_errors=3, now=NOW, active=None)
    assert (third.next_run_at, third.disable) == (None, True)


def test_recurring_error_waits_for_the_later_of_schedule_and_backoff() -> None:
    hourly = Every(3600, NOW - timedelta(minutes=59, seconds=50))
    # Next normal run is 10 s away, but the first backoff is 30 s.
    soon = after_error(hourly, consecutive_errors=1, now=NOW, active=None)
    assert soon.next_run_at == NOW + timedelta(seconds=30)
    daily = Cron("0 9 * * *", "UTC")
    later = after_error(daily, consecutive_errors=5, now=NOW, active=None)
    assert later.next_run_at == datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    assert not later.disable


def test_next_run_skips_to_active_hours() -> None:
    hours = parse_active_hours("09:30-16:00", NY, "mon-fri")
    every = Every(1800, datetime(2026, 12, 1, 0, 0, tzinfo=UTC))
    friday_close = datetime(2026, 12, 4, 21, 0, tzinfo=UTC)  # 16:00 EST Friday
    nxt = next_active_run(every, friday_close, hours)
    assert nxt is not None
    assert nxt.astimezone(zone(NY)).strftime("%a %H:%M") == "Mon 09:30"


def test_next_run_in_an_overnight_window_crosses_midnight() -> None:
    hours = parse_active_hours("22:00-02:00", NY, "mon-fri")
    hourly = Cron("15 * * * *", NY)
    start = datetime(2026, 12, 2, 5, 30, tzinfo=UTC)  # Wed 00:30 EST, inside Tuesday's window
    fired = []
    at = start
    for _ in range(3):
        nxt = next_active_run(hourly, at, hours)
        assert nxt is not None
        fired.append(nxt.astimezone(zone(NY)).strftime("%a %H:%M"))
        at = nxt
    assert fired == ["Wed 01:15", "Wed 22:15", "Wed 23:15"]


def test_a_one_shot_outside_its_window_never_runs() -> None:
    hours = parse_active_hours("09:30-16:00", NY, "mon-fri")
    saturday = At(datetime(2026, 12, 5, 17, 0, tzinfo=UTC))
    assert next_active_run(saturday, NOW, hours) is None


def test_missed_run_within_grace_runs_once_older_is_skipped() -> None:
    every = Every(1800, NOW)
    recorded = NOW + timedelta(minutes=30)
    # Woke 10 minutes after the latest due time: run it (once).
    woke = NOW + timedelta(hours=3, minutes=10)
    decision = missed_decision(every, recorded, woke)
    assert decision.run and decision.due_at == NOW + timedelta(hours=3)
    # A daily job missed by hours is skipped.
    daily = Cron("35 9 * * *", NY)
    due = datetime(2026, 12, 2, 14, 35, tzinfo=UTC)
    late = missed_decision(daily, due, due + timedelta(hours=4))
    assert not late.run and late.late_by == timedelta(hours=4)
    assert missed_decision(daily, due, due + MISSED_GRACE).run
