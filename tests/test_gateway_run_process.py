"""`dexter gateway run` as a real process: it answers over the fake Telegram server, `gateway
status` shows it live, and Ctrl+C (SIGINT) stops every channel cleanly and exits 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.gateway.config import config_path
from tests.support.fake_telegram import FakeTelegram, serve_telegram
from tests.support.wire_server import WireServer, sse

BASE = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}


def answer(text: str) -> object:
    return sse(
        [
            {**BASE, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
            {**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
    )


def last_message_at(home: Path) -> str | None:
    try:
        saved = json.loads((home / "gateway" / "status.json").read_text())
    except (OSError, ValueError):
        return None
    return next((a["last_message_at"] for a in saved["accounts"] if a["last_message_at"]), None)


def test_gateway_run_answers_shows_status_and_stops_on_ctrl_c(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    wire_server: WireServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    env = {
        "DEXTER_HOME": str(home),
        "DEXTER_MODEL": "openai:gpt-test",
        "OPENAI_API_KEY": "sk-test-123456",
        "OPENAI_BASE_URL": wire_server.url + "/v1",
        "DEXTER_SEC_USER_AGENT": "Dexter tests tests@example.com",
        "DEXTER_MEMORY": "off",
    }
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DEXTER_ROUTER_MODEL", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # The research call (tools offered) answers; side calls (no tools) find nothing.
    wire_server.route(lambda r: bool(r.json().get("tools")), answer("pong"))  # type: ignore[arg-type]

    # Long polls are held for two minutes: only closing the connection ends one promptly.
    with serve_telegram(FakeTelegram(max_poll_wait=120.0)) as fake:
        home.mkdir(parents=True)
        config_path(home).write_text(
            json.dumps(
                {
                    "channels": {
                        "telegram": {
                            "dm_policy": "open",
                            "accounts": {"default": {"token": fake.token, "api_base": fake.url}},
                        }
                    }
                }
            )
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "dexter.cli.main", "gateway", "run"],
            cwd=tmp_path,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            fake.wait_for(lambda: fake.count("getUpdates") >= 1, 60.0)
            fake.push("ping", user=42)
            fake.wait_for(lambda: fake.texts(42), 60.0)
            # The last-message time is written within a second of the message (not per message).
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not last_message_at(home):
                time.sleep(0.05)

            assert main(["gateway", "status"]) == 0
            shown = capsys.readouterr().out
            assert f"The gateway is running (pid {process.pid})" in shown
            assert "telegram/default: connected @dexter_test_bot" in shown
            assert "last message: none" not in shown and "reconnect attempts: 0" in shown

            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert fake.texts(42) == ["pong"]
    # Ctrl+C (SIGINT) exits 130, the status the README gives every command for it.
    assert process.returncode == 130, err
    assert "Stopping…" in out and "Gateway stopped." in out
    assert "Traceback" not in err
    # Connection events are shown in the terminal as they happen.
    assert "telegram/default connected as @dexter_test_bot" in err

    saved = json.loads((home / "gateway" / "status.json").read_text())
    [account] = saved["accounts"]
    assert account["running"] is False and account["connected"] is False
    assert main(["gateway", "status"]) == 0
    assert "The gateway is not running" in capsys.readouterr().out
