"""The jobs, usage and source pages of `dexter web` show each login only its own: a web user's
jobs, their own usage, their own runs' sources; requests go to the app in process."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx2
import pytest

from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.cron.jobs import create_job
from dexter.cron.schedule import parse_every
from dexter.cron.store import CronStore
from dexter.models.types import Usage
from dexter.store import Ledger
from dexter.store.sessions import SessionStore
from dexter.web.accounts import load_accounts
from dexter.web.app import create_app
from dexter.web.state import WebState
from tests.support.web import PASSWORDS, web_settings


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[tuple[httpx2.AsyncClient, WebState]]:
    home = tmp_path / ".dexter"
    web_settings(home)
    environ = {"DEXTER_HOME": str(home), "OPENAI_API_KEY": "sk-test-123456"}
    settings = load_settings(cwd=tmp_path, environ=environ)
    state = WebState(open_runtime(settings), load_accounts(settings), cookie="dexter_web_1")
    transport = httpx2.ASGITransport(app=create_app(state))
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client, state
    state.runtime.close_local()


async def log_in(client: httpx2.AsyncClient, name: str) -> str:
    """Log in as `name`; the login's CSRF token."""
    client.cookies.clear()
    form = await client.get("/login")
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token
    done = await client.post(
        "/login", data={"csrf": token.group(1), "name": name, "password": PASSWORDS[name]}
    )
    assert done.status_code == 303
    page = await client.get("/jobs", headers={"accept": "text/html"})
    found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert found
    return found.group(1)


async def test_a_web_user_sees_and_changes_only_their_own_jobs(app: tuple) -> None:
    client, state = app
    now = datetime.now(UTC)
    cron = CronStore(state.runtime.store)
    mine = create_job(
        cron,
        name="Operator's watch",
        message="check",
        schedule=parse_every("1h", anchor=now),
        now=now,
    )
    token = await log_in(client, "ana")
    added = await client.post(
        "/jobs",
        data={
            "name": "Ana's NVDA check",
            "message": "Any NVDA 8-K?",
            "kind": "every",
            "when": "1d",
            "tz": "UTC",
        },
        headers={"x-csrf-token": token},
    )
    assert added.status_code == 303
    page = (await client.get("/jobs")).text
    assert "Ana&#39;s NVDA check" in page and "Operator" not in page
    (theirs,) = cron.all(owner="web:ana")
    assert theirs.target == "outbox" and theirs.owner == "web:ana"
    # Someone else's job is not there to pause, and not even named.
    refused = await client.post(f"/jobs/{mine.id}/pause", headers={"x-csrf-token": token})
    assert refused.status_code == 404
    paused = await client.post(f"/jobs/{theirs.id}/pause", headers={"x-csrf-token": token})
    assert paused.status_code == 303 and not cron.all(owner="web:ana")[0].enabled
    await log_in(client, "bob")
    assert "NVDA" not in (await client.get("/jobs")).text


async def test_usage_and_sources_are_the_logins_own(app: tuple) -> None:
    client, state = app
    sessions, ledger = SessionStore(state.runtime.store), Ledger(state.runtime.store)
    anas = sessions.create("m", session_id="aaaa0001", principal_id="web:ana")
    ops = sessions.create("m", session_id="0e0e0001")
    ledger.record_model_call(anas, "run-a", "openai", "gpt-ana", "main", Usage(1234, 56))
    ledger.record_model_call(ops, "run-o", "openai", "gpt-op", "main", Usage(9, 9))
    sessions.add_turn(anas, "run-a", "q", "Revenue was $1 million [S1].", "answered", 1, 5.0)
    await log_in(client, "ana")
    usage = (await client.get("/usage")).text
    assert "openai:gpt-ana" in usage and "1,234" in usage
    assert "gpt-op" not in usage and "By principal" not in usage
    # Ana's run has no scratchpad here: her source page says why it cannot be shown.
    gone = await client.get("/sources/run-a/S1", headers={"accept": "text/html"})
    assert gone.status_code == 404 and "scratchpad" in gone.text
    await log_in(client, "bob")
    assert (await client.get("/sources/run-a/S1")).status_code == 403
    assert "gpt-ana" not in (await client.get("/usage")).text
