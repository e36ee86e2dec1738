"""A token the platform refuses at run time (Telegram 401, Slack invalid_auth, WhatsApp Cloud
401) stops that account with a status saying to run setup again, instead of retrying forever;
`dexter gateway status` shows it, and shows an error the account has reconnected after as
history, not as its state."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.gateway.config import config_path
from dexter.gateway.manager import ChannelManager
from dexter.gateway.slack import SlackChannel
from dexter.gateway.telegram import TelegramChannel
from dexter.gateway.types import Channel, CredentialsRejected, InboundMessage
from dexter.gateway.whatsapp_cloud import WhatsAppCloudChannel
from tests.support.fake_graph import PHONE_NUMBER_ID, serve_graph
from tests.support.fake_slack import APP_TOKEN, serve_slack
from tests.support.fake_telegram import serve_telegram
from tests.support.gateway_console import gateway_console


async def ignore(_channel: Channel, _message: InboundMessage) -> None:
    pass


async def run_until_it_stops(channel: Channel, tmp_path: Path) -> tuple[ChannelManager, str]:
    """Run `channel` under a manager whose retries cost nothing; return once its account's
    task has ended on its own (a manager that retried forever would time out here)."""
    retries: list[float] = []

    async def sleep(delay: float) -> None:
        retries.append(delay)

    manager = ChannelManager([channel], ignore, sleep=sleep, status_path=tmp_path / "status.json")
    with gateway_console() as console:
        await manager.start()
        await asyncio.wait_for(asyncio.gather(*manager._tasks.values()), 30)
    assert retries == []  # not one retry
    return manager, console.text


async def test_telegram_refusing_the_token_stops_the_account(tmp_path: Path) -> None:
    with serve_telegram() as fake:
        channel = TelegramChannel(
            "work", "999:WRONG", offset_path=tmp_path / "offset", api_base=fake.url
        )
        manager, console = await run_until_it_stops(channel, tmp_path)
    [status] = manager.snapshot()
    assert not status.running and not status.connected
    assert status.last_error is not None
    assert status.last_error.startswith("Telegram rejected the bot token (Unauthorized)")
    assert "run setup again: `dexter gateway setup telegram --account work`" in status.last_error
    assert "telegram/work stopped: Telegram rejected the bot token" in console
    assert "999:WRONG" not in console + status.last_error


async def test_slack_refusing_the_token_stops_the_account(tmp_path: Path) -> None:
    async with serve_slack() as fake:
        channel = SlackChannel(
            "default", bot_token="xoxb-revoked", app_token=APP_TOKEN, api_base=fake.url
        )
        manager, _ = await run_until_it_stops(channel, tmp_path)
        await channel.stop()
    [status] = manager.snapshot()
    assert not status.running and status.last_error is not None
    assert "Slack rejected the bot token (invalid_auth)" in status.last_error
    assert "`dexter gateway setup slack`" in status.last_error


async def test_whatsapp_cloud_refusing_the_token_on_a_reply_stops_the_account(
    tmp_path: Path,
) -> None:
    with serve_graph() as fake:
        channel = WhatsAppCloudChannel(
            "default",
            access_token="EAAG-expired",
            phone_number_id=PHONE_NUMBER_ID,
            app_secret="secret",
            verify_token="verify",
            listen="127.0.0.1:0",
            api_base=fake.url,
        )
        up = asyncio.Event()
        manager = ChannelManager(
            [channel], ignore, on_connected=lambda *_: up.set(), status_path=tmp_path / "s.json"
        )
        await manager.start()
        await asyncio.wait_for(up.wait(), 30)
        with pytest.raises(CredentialsRejected, match="rejected the access token"):
            await channel.send_text("+15551234567", "Your answer")
        await asyncio.wait_for(asyncio.gather(*manager._tasks.values()), 30)
    [status] = manager.snapshot()
    assert not status.running and status.last_error is not None
    assert "`dexter gateway setup whatsapp_cloud`" in status.last_error
    assert "Invalid OAuth access token" in status.last_error


def test_status_tells_a_stopped_account_and_a_recovered_error_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("DEXTER_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    home.mkdir()
    accounts = {"default": {"token": "1:A"}, "work": {"token": "2:B"}}
    config_path(home).write_text(json.dumps({"channels": {"telegram": {"accounts": accounts}}}))
    now = datetime.now(UTC).isoformat()
    rows = [
        {
            "channel": "telegram",
            "account_id": "default",
            "running": True,
            "connected": True,
            "last_error": "Telegram getUpdates timed out",
            "last_connected_at": now,
            "reconnect_attempts": 1,
        },
        {
            "channel": "telegram",
            "account_id": "work",
            "running": False,
            "connected": False,
            "last_error": "Telegram rejected the bot token (Unauthorized): …",
            "reconnect_attempts": 0,
        },
    ]
    status = home / "gateway" / "status.json"
    status.parent.mkdir()
    # Written as by a gateway that is this (live) process.
    status.write_text(json.dumps({"pid": os.getpid(), "updated_at": now, "accounts": rows}))
    assert main(["gateway", "status"]) == 0
    out = capsys.readouterr().out
    default, work = out.split("telegram/work")
    assert "telegram/default: connected" in default and "last error" not in default
    assert "reconnected at" in default and "after: Telegram getUpdates timed out" in default
    assert ": not connected (stopped, see the last error)" in work
    assert "last error: Telegram rejected the bot token" in work
