"""`dexter cron` and `dexter heartbeat` from a user's terminal; local deliverers; the runtime
offers the scheduling tools where someone can approve them, and not to unattended runs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.cron.delivery import Alert, DeliveryError
from dexter.cron.local import DesktopDeliverer, FileDeliverer
from dexter.runtime import CLI, CRON, AgentSpec


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    monkeypatch.setenv("TZ", "UTC")
    return tmp_path / ".dexter"


def test_read_only_commands_on_a_fresh_home_create_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cron", "list"]) == 0
    assert "No scheduled jobs" in capsys.readouterr().out
    assert main(["cron", "logs"]) == 0
    assert not home.exists()


def test_add_list_edit_disable_remove(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "cron",
                "add",
                "Open check",
                "--cron",
                "35 9 * * 1-5",
                "--tz",
                "America/New_York",
                "--message",
                "Check my watchlist.",
                "--active",
                "09:30-16:00",
                "--days",
                "mon-fri",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Added Open check" in out and "EST" in out
    assert main(["cron", "list", "--json"]) == 0
    [job] = json.loads(capsys.readouterr().out)
    assert job["schedule"] == {"kind": "cron", "expr": "35 9 * * 1-5", "tz": "America/New_York"}
    assert job["active"]["days"] == [0, 1, 2, 3, 4]
    assert main(["cron", "list"]) == 0
    table = capsys.readouterr().out
    assert "Open check" in table and "EST" in table and "UTC" in table
    assert main(["cron", "edit", "open", "--every", "2h", "--always"]) == 0
    assert main(["cron", "show", job["id"][:4], "--json"]) == 0
    shown = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert shown["schedule"]["kind"] == "every" and shown["active"] is None
    assert main(["cron", "disable", "Open check"]) == 0
    assert main(["cron", "rm", job["id"]]) == 0
    capsys.readouterr()
    assert main(["cron", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--at", "2020-01-01T09:00"], "in the past"),
        (["--every", "10s"], "too often"),
        (["--cron", "61 * * * *"], "invalid"),
        (["--every", "1h", "--at", "+2h"], "exactly one schedule"),
        (["--every", "1h", "--deliver", "pigeon:7"], "Unknown delivery target"),
        (["--every", "1h", "--active", "9-5"], "09:30-16:00"),
        (["--cron", "0 9 * * *", "--tz", "Mars/Base"], "IANA"),
        # A zone is checked even where the schedule does not use it, with the likely name.
        (["--every", "1h", "--tz", "Mars/Olympus"], "Unknown time zone 'Mars/Olympus'"),
        (["--at", "+2h", "--tz", "america/new_york"], "Did you mean America/New_York?"),
    ],
)
def test_bad_input_gets_one_clear_message(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["cron", "add", "x", "--message", "m", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_one_shot_in_another_zone_is_shown_in_that_zone_with_whole_timestamps(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    at = ["--at", "2031-06-02T09:00", "--tz", "America/New_York"]
    assert main(["cron", "add", "Fed day", *at, "--message", "Summarise the FOMC."]) == 0
    added = capsys.readouterr().out
    # Confirmed as typed, in its zone, with the year (not this year's) and the user's time.
    assert "once at 2031-06-02 09:00 EDT (America/New_York)" in added
    assert "Next run: 2031-06-02 09:00 EDT (2031-06-02 13:00 UTC your time)." in added
    assert main(["cron", "add", "Hourly", "--every", "1h", "--message", "Check NVDA."]) == 0
    capsys.readouterr()
    assert main(["cron", "list", "--json"]) == 0
    fed = next(j for j in json.loads(capsys.readouterr().out) if j["name"] == "Fed day")
    assert fed["schedule"]["tz"] == "America/New_York"
    assert main(["cron", "list"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in table) <= 80
    # Each time is one piece on one line, never broken across lines.
    assert any("2031-06-02 09:00 EDT" in line for line in table)
    assert any("(2031-06-02 13:00 UTC)" in line for line in table)
    assert main(["cron", "show", "Fed day"]) == 0
    shown = capsys.readouterr().out
    assert "never (never)" not in shown
    assert "Last run  never" in shown and "America/New_York" in shown


def test_unknown_job_and_heartbeat_commands(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cron", "add", "x", "--every", "1h", "--message", "m"]) == 0
    assert main(["cron", "show", "nothing-like-it"]) == 2
    assert "No scheduled job matches" in capsys.readouterr().err
    assert (
        main(
            [
                "heartbeat",
                "enable",
                "--every",
                "30m",
                "--active",
                "09:30-16:00",
                "--tz",
                "America/New_York",
                "--days",
                "mon-fri",
            ]
        )
        == 0
    )
    assert main(["heartbeat", "show"]) == 0
    out = capsys.readouterr().out
    assert "default checklist" in out and "every 30m" in out
    # Enabling again reconfigures the one heartbeat rather than adding a second.
    assert main(["heartbeat", "enable", "--every", "1h"]) == 0
    assert main(["cron", "list", "--json"]) == 0
    jobs = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert [j["kind"] for j in jobs].count("heartbeat") == 1
    assert main(["heartbeat", "disable"]) == 0


async def test_file_and_desktop_deliverers(tmp_path: Path) -> None:
    alert = Alert("j1", "NVDA watch", "NVDA filed.", datetime(2026, 12, 1, tzinfo=UTC), "file")
    await FileDeliverer(tmp_path).deliver(alert)
    await FileDeliverer(tmp_path).deliver(alert)
    # Alerts files live in the alerts folder of the Dexter home.
    text = (tmp_path / "alerts" / "alerts.md").read_text()
    assert text.count("## NVDA watch (2026-12-01T00:00:00+00:00)") == 2
    custom = Alert("j1", "NVDA watch", "x", alert.created_at, "file:notes/out.md")
    await FileDeliverer(tmp_path).deliver(custom)
    assert (tmp_path / "alerts" / "notes" / "out.md").is_file()
    with pytest.raises(DeliveryError, match="not installed"):
        await DesktopDeliverer("no-such-notify-send").deliver(alert)


def test_runtime_offers_scheduling_tools_where_someone_can_approve(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEXTER_MEMORY", "off")
    monkeypatch.setenv("DEXTER_SEC_USER_AGENT", "Dexter tests tests@example.com")
    runtime = open_runtime(load_settings())
    try:
        assert {"cron", "heartbeat"} <= set(runtime.tools(AgentSpec(channel=CLI)).names())
        assert "cron" not in runtime.tools(AgentSpec(channel=CRON)).names()
    finally:
        runtime.close_local()
