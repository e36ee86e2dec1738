"""Schedules: one-shot (`at`), fixed interval (`every`, on a grid from an anchor) and cron
expressions in an IANA zone; parsing user input and computing the next run.

Pure functions of their arguments (no clock, no IO), so every rule is testable with fixed times.
All datetimes are aware; results are in UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dexter.config import ConfigError

# A cron job never fires twice within this gap, even if the expression (or a DST fold) says so.
MIN_REFIRE_GAP = timedelta(seconds=2)
# Recurring jobs run an agent each time: more often than this is a mistake, and costs money.
MIN_INTERVAL = timedelta(seconds=60)

_CRON_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class ScheduleError(ConfigError):
    """A schedule the user gave cannot be used; the message says what to write instead."""


@dataclass(frozen=True, slots=True)
class At:
    at: datetime  # aware, UTC
    # The IANA zone the time was given in, so lists show it as the user wrote it (None for rows
    # stored before zones were kept: shown in UTC).
    tz: str | None = None
    kind: Literal["at"] = "at"


@dataclass(frozen=True, slots=True)
class Every:
    seconds: float
    anchor: datetime  # aware, UTC: runs fall on anchor + k * seconds, so they never drift
    kind: Literal["every"] = "every"


@dataclass(frozen=True, slots=True)
class Cron:
    expr: str
    tz: str  # IANA zone name
    kind: Literal["cron"] = "cron"


Schedule = At | Every | Cron


def zone(name: str) -> ZoneInfo:
    """The IANA zone `name`, or a ScheduleError with the closest known name and an example."""
    text = name.strip()
    try:
        if not text or text.startswith(("/", ".")) or ".." in text:
            raise ValueError(text)
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        close = _closest_zone(text)
        hint = f" Did you mean {close}?" if close else ""
        raise ScheduleError(
            f"Unknown time zone {name!r}.{hint} Use an IANA name such as America/New_York, "
            "Europe/London or UTC."
        ) from exc


def _closest_zone(text: str) -> str | None:
    """The known zone a mistyped name most likely meant (`america/new_york`, `Europe/Londn`)."""
    import difflib
    from zoneinfo import available_timezones

    known = sorted(available_timezones())
    by_lower = {name.lower(): name for name in known}
    close = difflib.get_close_matches(text.lower(), list(by_lower), n=1, cutoff=0.75)
    return by_lower[close[0]] if close else None


def local_zone_name() -> str:
    """The user's zone as an IANA name when the system says it (TZ or /etc/localtime), else UTC."""
    import os
    from pathlib import Path

    env = os.environ.get("TZ", "").strip().lstrip(":")
    if env:
        try:
            zone(env)
            return env
        except ScheduleError:
            pass
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        return "UTC"
    marker = "zoneinfo/"
    if marker in target:
        candidate = target.split(marker, 1)[1]
        try:
            zone(candidate)
            return candidate
        except ScheduleError:
            pass
    return "UTC"


# --- durations ---------------------------------------------------------------------------------

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|m|min|mins|h|hr|hrs|d|day|days|w)")
_UNIT_SECONDS = {
    "ms": 0.001,
    "s": 1,
    "sec": 1,
    "secs": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
}


def parse_duration(text: str) -> float:
    """'30m', '1h30m', '2d', '90s' -> seconds. A bare number is minutes (as in `--every 30`)."""
    raw = text.strip().lower().replace(" ", "")
    if not raw:
        raise ScheduleError("An interval is required, such as 30m, 1h or 1d.")
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        return float(raw) * 60
    position, total = 0, 0.0
    for match in _DURATION_PART.finditer(raw):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(raw) or total <= 0:
        raise ScheduleError(
            f"Cannot read the interval {text!r}: write it like 90s, 30m, 1h, 1h30m or 1d."
        )
    return total


def format_duration(seconds: float) -> str:
    """The largest whole units, at most two: 5400 -> '1h30m', 86400 -> '1d', 45 -> '45s'."""
    remaining = round(seconds)
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if remaining >= size:
            count, remaining = divmod(remaining, size)
            parts.append(f"{count}{unit}")
        if len(parts) == 2:
            break
    return "".join(parts) or "0s"


# --- parsing user input ------------------------------------------------------------------------


def parse_at(text: str, tz: str, *, now: datetime) -> At:
    """An ISO date-time (`2026-12-02T09:00`, with or without an offset; a bare date means midnight)
    in zone `tz` unless it carries its own offset. Past times are refused: a one-shot job that can
    never run would sit in the list looking scheduled."""
    raw = text.strip()
    if raw.lower().startswith("now+") or raw.lower().startswith("+"):
        offset = parse_duration(raw.split("+", 1)[1])
        zone(tz)
        return At((now + timedelta(seconds=offset)).astimezone(UTC), tz)
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError as exc:
        raise ScheduleError(
            f"Cannot read the time {text!r}: write it like 2026-12-02T09:00 (in --tz, default "
            "your zone), 2026-12-02T14:00Z, or +2h for two hours from now."
        ) from exc
    where = zone(tz)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=where)
    at = moment.astimezone(UTC)
    if at <= now:
        shown = moment.isoformat(timespec="minutes")
        raise ScheduleError(f"{shown} is in the past: a one-shot job needs a future --at time.")
    return At(at, tz)


def parse_every(text: str, *, anchor: datetime, minimum: timedelta = MIN_INTERVAL) -> Every:
    seconds = parse_duration(text)
    if seconds < minimum.total_seconds():
        raise ScheduleError(
            f"Every {format_duration(seconds)} is too often: the shortest interval is "
            f"{format_duration(minimum.total_seconds())}."
        )
    return Every(seconds, anchor.astimezone(UTC))


def normalise_cron(expr: str) -> str:
    text = " ".join(expr.split())
    return _CRON_ALIASES.get(text.lower(), text)


def parse_cron(expr: str, tz: str, *, now: datetime) -> Cron:
    """A 5-field expression (minute hour day month weekday), or 6 with leading seconds, in `tz`.

    Day-of-month and weekday combine like Debian cron: OR when both are restricted, AND when
    either is `*`. Six-field expressions must not fire more often than the minimum interval.
    """
    text = normalise_cron(expr)
    fields = text.split()
    if len(fields) not in (5, 6):
        raise ScheduleError(
            f"The cron expression {expr!r} has {len(fields)} fields; it needs 5 (minute hour "
            'day month weekday, e.g. "35 9 * * 1-5") or 6 with leading seconds.'
        )
    zone(tz)
    schedule = Cron(text, tz)
    first = next_cron(schedule, now)
    if first is None:
        raise ScheduleError(f"The cron expression {expr!r} never fires.")
    second = next_cron(schedule, first)
    if second is not None and second - first < MIN_INTERVAL:
        gap = format_duration((second - first).total_seconds())
        raise ScheduleError(
            f"The cron expression {expr!r} fires every {gap}; the shortest interval is "
            f"{format_duration(MIN_INTERVAL.total_seconds())}."
        )
    return schedule


# --- next run ----------------------------------------------------------------------------------


def next_cron(schedule: Cron, after: datetime) -> datetime | None:
    """The first firing strictly after `after` (and at least MIN_REFIRE_GAP later), in UTC.

    cronsim follows Debian cron across DST: a time skipped by spring-forward runs once right after
    the jump, and a time repeated by fall-back runs once (the first time). Raises ScheduleError for
    an expression it cannot read.
    """
    from cronsim import CronSim, CronSimError

    tz = zone(schedule.tz)
    earliest = after + MIN_REFIRE_GAP
    # cronsim starts strictly after `dt` at whole seconds; start one second before `earliest`.
    start = (earliest - timedelta(seconds=1)).astimezone(tz)
    try:
        iterator = CronSim(schedule.expr, start)
        for _ in range(4):
            candidate = next(iterator).astimezone(UTC)
            if candidate >= earliest:
                return candidate
    except CronSimError as exc:
        raise ScheduleError(f"The cron expression {schedule.expr!r} is invalid: {exc}.") from exc
    except StopIteration:
        return None
    return None


def prev_cron(schedule: Cron, at_or_before: datetime) -> datetime | None:
    """The latest firing at or before `at_or_before`, for the missed-run policy."""
    from cronsim import CronSim, CronSimError

    tz = zone(schedule.tz)
    start = (at_or_before + timedelta(seconds=1)).replace(microsecond=0).astimezone(tz)
    try:
        candidate = next(CronSim(schedule.expr, start, reverse=True)).astimezone(UTC)
    except CronSimError as exc:
        raise ScheduleError(f"The cron expression {schedule.expr!r} is invalid: {exc}.") from exc
    except StopIteration:
        return None
    return candidate if candidate <= at_or_before else None


def next_run(schedule: Schedule, after: datetime) -> datetime | None:
    """The first run strictly after `after`; None when there is none (a one-shot that passed)."""
    if isinstance(schedule, At):
        return schedule.at if schedule.at > after else None
    if isinstance(schedule, Every):
        if schedule.seconds <= 0:
            return None
        period = timedelta(seconds=schedule.seconds)
        # The grid runs both ways from the anchor: after a clock is set back to before the job
        # was made, the next run is the next point after now, not the anchor (maybe a day away).
        steps = (after - schedule.anchor) // period + 1
        return schedule.anchor + steps * period
    return next_cron(schedule, after)


def latest_due(schedule: Schedule, due: datetime, now: datetime) -> datetime:
    """The most recent due time in (.., now] given that `due` (<= now) was the one recorded:
    after a sleep this is the one run the missed-run policy may still make."""
    if isinstance(schedule, At):
        return due
    if isinstance(schedule, Every):
        period = timedelta(seconds=schedule.seconds)
        if period <= timedelta(0):
            return due
        return max(due, schedule.anchor + ((now - schedule.anchor) // period) * period)
    previous = prev_cron(schedule, now)
    return max(due, previous) if previous is not None else due


# --- description and (de)serialisation ---------------------------------------------------------


def describe(schedule: Schedule) -> str:
    if isinstance(schedule, At):
        if schedule.tz is None:
            return f"once at {schedule.at:%Y-%m-%d %H:%M} UTC"
        local = schedule.at.astimezone(zone(schedule.tz))
        return f"once at {local:%Y-%m-%d %H:%M %Z} ({schedule.tz})"
    if isinstance(schedule, Every):
        return f"every {format_duration(schedule.seconds)}"
    return f"cron {schedule.expr} ({schedule.tz})"


def to_dict(schedule: Schedule) -> dict[str, Any]:
    if isinstance(schedule, At):
        stored = {"kind": "at", "at": schedule.at.isoformat()}
        return stored | ({"tz": schedule.tz} if schedule.tz else {})
    if isinstance(schedule, Every):
        return {"kind": "every", "seconds": schedule.seconds, "anchor": schedule.anchor.isoformat()}
    return {"kind": "cron", "expr": schedule.expr, "tz": schedule.tz}


def from_dict(data: dict[str, Any]) -> Schedule:
    """The inverse of `to_dict`. Raises ScheduleError for anything malformed (a hand-edited row)."""
    try:
        kind = data["kind"]
        if kind == "at":
            tz = data.get("tz")
            return At(_utc(datetime.fromisoformat(str(data["at"]))), str(tz) if tz else None)
        if kind == "every":
            return Every(float(data["seconds"]), _utc(datetime.fromisoformat(str(data["anchor"]))))
        if kind == "cron":
            return Cron(str(data["expr"]), str(data["tz"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ScheduleError(f"Stored schedule {data!r} is malformed ({exc}).") from exc
    raise ScheduleError(f"Stored schedule has an unknown kind {data.get('kind')!r}.")


def _utc(moment: datetime) -> datetime:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
