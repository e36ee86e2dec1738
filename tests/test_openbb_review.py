"""The OpenBB endpoint shares `dexter web`'s event loop: it must never block it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from starlette.applications import Starlette

from dexter.web.openbb import OpenBBConfig, openbb_mount

KEY = "a-key-for-workspace-0123456789"


class _Quiet:
    async def run(self, query: str) -> AsyncIterator[Any]:
        return
        yield


class _Agents:
    def __init__(self) -> None:
        self.on_loop: list[bool] = []

    def agent(self, spec: Any, /) -> _Quiet:
        try:
            asyncio.get_running_loop()
            self.on_loop.append(True)
        except RuntimeError:
            self.on_loop.append(False)
        return _Quiet()


async def test_an_agent_is_built_off_the_event_loop() -> None:
    # Building one opens a session in the database (a round trip on Postgres) and reads the
    # skills folder: on the loop, every page and stream of `dexter web` would wait for it.
    agents = _Agents()
    app = Starlette(routes=[openbb_mount(agents, OpenBBConfig(api_key=KEY))])
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://dexter") as client:
        answer = await client.post(
            "/openbb/query",
            json={"messages": [{"role": "human", "content": "Apple revenue?"}]},
            headers={"x-api-key": KEY},
        )
    assert answer.status_code == 200
    assert agents.on_loop == [False]


class _Failing:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def agent(self, spec: Any, /) -> _Quiet:
        raise self.error


async def test_a_failure_shown_in_the_panel_never_carries_a_key() -> None:
    # The panel is OpenBB's web page (and its chat history): a key quoted by an error must not
    # get there, as it does not in `dexter web` or the run's record.
    from dexter.errors import ConfigError
    from dexter.permissions.secrets import register_secrets

    secret = "sk-live-review-0123456789abcdef"
    register_secrets([secret])
    for error in (ConfigError(f"the key {secret} was refused"), RuntimeError(f"boom {secret}")):
        app = Starlette(routes=[openbb_mount(_Failing(error), OpenBBConfig(api_key=KEY))])
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://dexter") as client:
            answer = await client.post(
                "/openbb/query",
                json={"messages": [{"role": "human", "content": "Apple revenue?"}]},
                headers={"x-api-key": KEY},
            )
        assert "could not run" in answer.text or "stopped unexpectedly" in answer.text
        assert secret not in answer.text, type(error).__name__
