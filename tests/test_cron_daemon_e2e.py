"""`dexter daemon` as a real process against a local OpenAI-compatible server: two jobs fire
within seconds, one alert reaches the outbox, one HEARTBEAT_OK is kept quiet, and SIGTERM stops
it cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from dexter.cron.store import CronStore
from dexter.store import open_store
from tests.support.wire_server import Recorded, Reply, WireServer, sse

BASE = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}


def text_reply(text: str) -> Reply:
    return sse(
        [
            {**BASE, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
            {**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**BASE, "choices": [], "usage": {"prompt_tokens": 300, "completion_tokens": 20}},
        ]
    )


def main_call(marker: str) -> Any:
    """The research call of one job (the one that offers tools)."""

    def matches(request: Recorded) -> bool:
        return bool(request.json().get("tools")) and marker in request.body.decode(errors="replace")

    return matches


def side_call(request: Recorded) -> bool:
    """The fast model reading the prompt for standing instructions (no tools offered)."""
    return not request.json().get("tools")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire_server: WireServer) -> dict[str, str]:
    values = {
        "DEXTER_HOME": str(tmp_path / ".dexter"),
        "DEXTER_MODEL": "openai:gpt-test",
        "OPENAI_API_KEY": "sk-test-123456",
        "OPENAI_BASE_URL": wire_server.url + "/v1",
        "DEXTER_SEC_USER_AGENT": "Dexter tests tests@example.com",
        "DEXTER_SEC_DATA_URL": "http://127.0.0.1:9",
        "DEXTER_SEC_WWW_URL": "http://127.0.0.1:9",
        "DEXTER_CRON_TICK_SECONDS": "0.2",
        "DEXTER_MEMORY": "off",
        # The scripted alerts state figures no tool fetched; checking them is
        # test_verification_e2e's job, not the daemon's.
        "DEXTER_VERIFY": "off",
        "TZ": "UTC",
    }
    monkeypatch.chdir(tmp_path)
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_ROUTER_MODEL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return values


def start_daemon(env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "dexter.cli.main", "daemon"],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_daemon_fires_jobs_delivers_one_alert_keeps_ok_quiet_and_stops_on_sigterm(
    env: dict[str, str],
    tmp_path: Path,
    wire_server: WireServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    alert = "NVDA filed its 10-Q: revenue $57.0B, up 62% year over year."
    wire_server.route(main_call("[SCHEDULED JOB: Filing watch]"), text_reply(alert))
    wire_server.route(main_call("[SCHEDULED JOB: Price watch]"), text_reply("HEARTBEAT_OK"))
    for _ in range(2):
        wire_server.route(side_call, text_reply("[]"))
    for name, message in (
        ("Filing watch", "Tell me when NVDA files its 10-Q."),
        ("Price watch", "Tell me if NVDA falls below $100."),
    ):
        assert main(["cron", "add", name, "--at", "+1s", "--message", message]) == 0
    capsys.readouterr()

    process = start_daemon(env, tmp_path)
    cron = CronStore(open_store(Path(env["DEXTER_HOME"])))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            states = [j.state.last_status for j in cron.all()]
            if all(s is not None for s in states):
                break
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "stopped" in err and "Traceback" not in err

    by_name = {j.name: j for j in cron.all()}
    assert by_name["Filing watch"].state.last_status == "ok", by_name[
        "Filing watch"
    ].state.last_error
    assert by_name["Price watch"].state.last_status == "suppressed"
    [item] = cron.outbox()
    assert (item.text, item.status, item.job_name) == (alert, "delivered", "Filing watch")
    [quiet] = cron.runs(by_name["Price watch"].id)
    assert (quiet.status, quiet.reason) == ("suppressed", "ok-token")
    # One-shots are done: disabled, nothing left to run.
    assert not any(j.enabled for j in cron.all())

    assert main(["cron", "logs"]) == 0
    shown = capsys.readouterr().out
    assert alert in shown and "Filing watch -> outbox [delivered]" in shown


def test_daemon_stopped_with_ctrl_c_says_so_and_exits_130(
    env: dict[str, str], tmp_path: Path
) -> None:
    process = start_daemon(env, tmp_path)
    try:
        # Ready once it has said so (its signal handlers are in place by then).
        assert process.stderr is not None
        started = process.stderr.readline()
        assert "daemon started" in started, started
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    # Ctrl+C is 130, as the README says for every command; the stop itself is clean.
    assert process.returncode == 130, err
    assert "stopped" in err and "Traceback" not in err
