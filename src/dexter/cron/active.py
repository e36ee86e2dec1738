"""Active hours: a daily window in an IANA zone on a set of weekdays, possibly crossing midnight.

A window whose end is earlier than its start runs overnight: `22:00-02:00` on `fri` is open from
Friday 22:00 to Saturday 02:00, because the day set names the day a window opens. The end minute
is inclusive (`09:30-16:00` includes 16:00), matching how people read such ranges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from dexter.cron.schedule import ScheduleError, zone

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
ALL_DAYS = frozenset(range(7))
WEEKDAYS = frozenset(range(5))


@dataclass(frozen=True, slots=True)
class ActiveHours:
    start: int  # minutes after local midnight
    end: int  # inclusive
    tz: str
    days: frozenset[int] = ALL_DAYS  # 0 = Monday, as datetime.weekday()

    @property
    def overnight(self) -> bool:
        return self.end < self.start

    def contains(self, moment: datetime) -> bool:
        local = moment.astimezone(zone(self.tz))
        minute = local.hour * 60 + local.minute
        today = local.weekday()
        if not self.overnight:
            return today in self.days and self.start <= minute <= self.end
        if minute >= self.start:
            return today in self.days
        if minute <= self.end:
            return (today - 1) % 7 in self.days
        return False

    def next_open(self, moment: datetime) -> datetime:
        """`moment` when it is inside the window, else the next time the window opens (UTC)."""
        if self.contains(moment):
            return moment.astimezone(UTC)
        tz = zone(self.tz)
        local_day = moment.astimezone(tz).date()
        opening = time(self.start // 60, self.start % 60)
        for offset in range(8):
            day = local_day + timedelta(days=offset)
            if day.weekday() not in self.days:
                continue
            # A start inside a spring-forward gap maps to just after the jump (fold=0).
            candidate = datetime.combine(day, opening, tzinfo=tz).astimezone(UTC)
            if candidate > moment:
                return candidate
        raise ScheduleError("Active hours name no day of the week.")  # days is never empty

    def describe(self) -> str:
        return f"{_hhmm(self.start)}-{_hhmm(self.end)} {describe_days(self.days)} ({self.tz})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": _hhmm(self.start),
            "end": _hhmm(self.end),
            "tz": self.tz,
            "days": sorted(self.days),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ActiveHours:
        try:
            days = frozenset(int(d) for d in data.get("days", range(7)))
            return cls(
                _minutes(str(data["start"])), _minutes(str(data["end"])), str(data["tz"]), days
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ScheduleError(f"Stored active hours {data!r} are malformed ({exc}).") from exc


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _minutes(text: str) -> int:
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
    if match is None:
        raise ValueError(text)
    hours, minutes = int(match.group(1)), int(match.group(2))
    if hours == 24 and minutes == 0:
        return 24 * 60 - 1
    if hours > 23 or minutes > 59:
        raise ValueError(text)
    return hours * 60 + minutes


def parse_window(text: str) -> tuple[int, int]:
    """'09:30-16:00' -> (570, 960). '24:00' means the last minute of the day."""
    parts = text.replace(" ", "").split("-")
    try:
        if len(parts) != 2:
            raise ValueError(text)
        start, end = _minutes(parts[0]), _minutes(parts[1])
    except ValueError:
        raise ScheduleError(
            f"Cannot read the active hours {text!r}: write them like 09:30-16:00, or 22:00-06:00 "
            "for a window that crosses midnight."
        ) from None
    if start == end:
        raise ScheduleError(
            f"Active hours {text!r} start and end at the same minute; leave --active out to run "
            "at any time."
        )
    return start, end


def parse_days(text: str) -> frozenset[int]:
    """'mon-fri', 'mon,wed,fri', 'sat-sun', 'fri-mon' (wraps), 'weekdays', 'weekends', 'daily'."""
    raw = text.strip().lower().replace(" ", "")
    named = {
        "daily": ALL_DAYS,
        "all": ALL_DAYS,
        "*": ALL_DAYS,
        "weekdays": WEEKDAYS,
        "weekends": frozenset({5, 6}),
    }
    if raw in named:
        return named[raw]
    days: set[int] = set()
    for item in raw.split(","):
        bounds = item.split("-")
        try:
            if len(bounds) == 1:
                days.add(_day(bounds[0]))
                continue
            if len(bounds) != 2:
                raise ValueError(item)
            first, last = _day(bounds[0]), _day(bounds[1])
        except ValueError:
            raise ScheduleError(
                f"Cannot read the days {text!r}: write them like mon-fri, mon,wed,fri, sat-sun "
                "or daily."
            ) from None
        day = first
        while True:
            days.add(day)
            if day == last:
                break
            day = (day + 1) % 7
    return frozenset(days)


def _day(token: str) -> int:
    token = token[:3]
    if token in DAY_NAMES:
        return DAY_NAMES.index(token)
    raise ValueError(token)


def describe_days(days: frozenset[int]) -> str:
    if days == ALL_DAYS:
        return "daily"
    if days == WEEKDAYS:
        return "mon-fri"
    return ",".join(DAY_NAMES[d] for d in sorted(days))


def parse_active_hours(window: str, tz: str, days: str | None) -> ActiveHours:
    start, end = parse_window(window)
    zone(tz)
    return ActiveHours(start, end, tz, parse_days(days) if days else ALL_DAYS)
