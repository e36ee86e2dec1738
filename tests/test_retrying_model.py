"""One retry policy as a model wrapper: stalls are retried, long Retry-After fails fast."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dexter.config import ConfigError, load_settings
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.retry import RetryPolicy, policy_from_settings, with_retry
from dexter.models.scripted import ScriptedModel, text
from dexter.models.types import (
    ModelRequest,
    ModelResponse,
    RetryNotice,
    StreamChunk,
    TextChunk,
    UserMessage,
)

REQUEST = ModelRequest(messages=[UserMessage("hi")])


class Waits:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


class StallsOnce:
    """Sends one chunk and then nothing, the first time; answers normally afterwards."""

    name = "stalls"
    provider = "Stalling server"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        yield TextChunk("partial")
        if self.calls == 1:
            await asyncio.Event().wait()
        final = await ScriptedModel([text("Done.")]).complete(request)
        yield TextChunk("Done.")
        yield final

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise NotImplementedError


async def test_a_stalled_stream_is_abandoned_and_retried() -> None:
    waits = Waits()
    inner = StallsOnce()
    model = with_retry(inner, RetryPolicy(idle_timeout=0.02, sleep=waits))
    chunks = [chunk async for chunk in model.stream(REQUEST)]
    notices = [c for c in chunks if isinstance(c, RetryNotice)]
    assert len(notices) == 1 and "idle timeout" in notices[0].error.message
    assert isinstance(chunks[-1], ModelResponse)
    assert inner.calls == 2 and len(waits.delays) == 1


async def test_every_phase_using_complete_honours_the_wrapped_policy() -> None:
    waits = Waits()
    flaky = ScriptedModel([ModelError(ErrorKind.SERVER, "down")] * 2 + [text("ok")])
    model = with_retry(flaky, RetryPolicy(attempts=3, base_delay=1.0, max_delay=1.5, sleep=waits))
    response = await model.complete(REQUEST)
    assert response.message.content == "ok"
    assert len(waits.delays) == 2 and all(0.8 <= d <= 1.5 for d in waits.delays)
    # One fewer attempt than failures: the error reaches the caller.
    strict = with_retry(
        ScriptedModel([ModelError(ErrorKind.SERVER, "down")] * 3),
        RetryPolicy(attempts=2, sleep=waits),
    )
    with pytest.raises(ModelError, match="down"):
        await strict.complete(REQUEST)


async def test_retry_after_beyond_the_cap_fails_at_once_with_a_message() -> None:
    waits = Waits()
    limited = ModelError(ErrorKind.RATE_LIMIT, "slow down", provider="OpenAI", retry_after=3600)
    model = with_retry(
        ScriptedModel([limited, text("never")]), RetryPolicy(max_retry_after=60, sleep=waits)
    )
    with pytest.raises(ModelError) as caught:
        await model.complete(REQUEST)
    assert "asked to wait 3600 s, longer than the 60 s" in caught.value.message
    assert waits.delays == []


def test_policy_comes_from_settings_and_env(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    home.mkdir()
    (home / "settings.json").write_text('{"retry": {"attempts": 5, "streamIdleTimeout": 30}}')
    policy = policy_from_settings(load_settings(cwd=tmp_path, environ={}))
    assert (policy.attempts, policy.idle_timeout) == (5, 30.0)
    env = {"DEXTER_STREAM_IDLE_TIMEOUT": "0"}
    assert policy_from_settings(load_settings(cwd=tmp_path, environ=env)).idle_timeout is None
    with pytest.raises(ConfigError, match="DEXTER_STREAM_IDLE_TIMEOUT"):
        policy_from_settings(
            load_settings(cwd=tmp_path, environ={"DEXTER_STREAM_IDLE_TIMEOUT": "soon"})
        )
