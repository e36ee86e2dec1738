"""What an unattended run is asked: the heartbeat checklist prompt and the scheduled-job prompt.

Both are pure functions of their inputs. A heartbeat job's prompt is built from HEARTBEAT.md at
run time (not stored in the job), so edits apply at the next run and it is wrapped exactly once.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from dexter.cron.suppression import HEARTBEAT_OK
from dexter.userfiles import read_user_text

HEARTBEAT_FILE = "HEARTBEAT.md"

DEFAULT_CHECKLIST = """\
- Major US indexes (S&P 500, Nasdaq Composite, Dow Jones): alert if any moved more than 2% in
  the current or latest session.
- Breaking financial news: earnings surprises, Federal Reserve decisions, and other events that
  move markets.
"""

_EMPTY_LINE = ("#", "-", "*", "+")


def checklist_is_empty(text: str) -> bool:
    """True when every line is blank, a heading, or a bullet with nothing after it."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped in _EMPTY_LINE or stripped in ("- [ ]", "* [ ]"):
            continue
        return False
    return True


def count_items(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip().startswith(("- ", "* ", "+ ")))


def read_checklist(home: Path) -> str | None:
    """The checklist to review: the file's text, the default when it is absent, None when the
    file exists but is empty (the user switched the heartbeat's content off)."""
    text = read_heartbeat(home)
    if text is None:
        return DEFAULT_CHECKLIST
    return None if checklist_is_empty(text) else text


def read_heartbeat(home: Path) -> str | None:
    """HEARTBEAT.md as the user left it; None when absent, a clear error when unreadable."""
    return read_user_text(home / HEARTBEAT_FILE, "The heartbeat checklist")


def _quiet_rules() -> str:
    return (
        f"- If nothing is worth the user's attention, reply with exactly {HEARTBEAT_OK} and "
        "nothing else.\n"
        "- Never send status or progress messages, and never say that everything is fine, that "
        "no action is needed, or that a condition has not been met yet.\n"
        "- Only write when there is something the user would act on. Lead with the key finding "
        "and its numbers, keep it brief, and cite sources."
    )


def _clock_line(now: datetime, tz_name: str) -> str:
    from dexter.cron.schedule import zone

    local = now.astimezone(zone(tz_name))
    return f"It is now {local.strftime('%A %Y-%m-%d %H:%M')} ({tz_name})."


def heartbeat_prompt(checklist: str, *, now: datetime, tz: str) -> str:
    return (
        "[HEARTBEAT CHECK]\n"
        "This is an unattended periodic check; nobody is reading along. Review each item on the "
        "user's checklist with your tools.\n"
        f"{_clock_line(now, tz)}\n\n"
        "## Checklist\n"
        f"{checklist.strip()}\n\n"
        "## Instructions\n"
        f"{_quiet_rules()}\n"
        "- Several findings may go into one message."
    )


def job_prompt(name: str, message: str, *, fulfillment: str, now: datetime, tz: str) -> str:
    ask = (
        "\nIf the condition is met, end your message by asking the user whether to keep "
        "monitoring.\n"
        if fulfillment == "ask"
        else ""
    )
    return (
        f"[SCHEDULED JOB: {name}]\n"
        "This runs unattended on a schedule; nobody can answer questions or approve actions "
        "during the run.\n"
        f"{_clock_line(now, tz)}\n\n"
        f"{message.strip()}\n{ask}\n"
        "## Instructions\n"
        f"{_quiet_rules()}"
    )
