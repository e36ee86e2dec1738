"""Temperature and seed on the wire (and left out where a model refuses them), set on every call
of an agent built with them, and the response cache keyed on the full request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.open_runtime import open_runtime
from dexter.models.anthropic_messages import build_messages_params
from dexter.models.cache import CachedModel, CacheTally, request_key, tally
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.openai_chat import OpenAIChatModel
from dexter.models.profile import GENERIC, OPENAI
from dexter.models.scripted import Reply, ScriptedModel
from dexter.models.tuning import SampledModel, Sampling
from dexter.models.types import (
    ModelRequest,
    ModelResponse,
    TextChunk,
    ToolCallChunk,
    Usage,
    UserMessage,
)

ASK = ModelRequest([UserMessage("Apple revenue FY2025?")])


def test_openai_wire_sends_temperature_and_seed_unless_the_model_refuses_them() -> None:
    chat = OpenAIChatModel("gpt-4.1", api_key="k", profile=OPENAI)
    tuned = ModelRequest(ASK.messages, temperature=0.0, seed=3)
    params = chat._params(tuned)
    assert (params["temperature"], params["seed"]) == (0.0, 3)
    assert "temperature" not in chat._params(ASK) and "seed" not in chat._params(ASK)
    # OpenAI's reasoning models answer HTTP 400 to any temperature but their own.
    for name in ("o3-mini", "gpt-5.6-sol"):
        reasoning = OpenAIChatModel(name, api_key="k", profile=OPENAI)._params(tuned)
        assert "temperature" not in reasoning and reasoning["seed"] == 3
    # A server of one's own serving a model of that name takes one.
    local = OpenAIChatModel("gpt-5-local", api_key="k", base_url="http://x", profile=GENERIC)
    assert local._params(tuned)["temperature"] == 0.0


def test_anthropic_wire_sends_temperature_but_not_with_thinking() -> None:
    tuned = ModelRequest(ASK.messages, temperature=0.2, seed=3)
    params = build_messages_params(tuned, model="claude-x")
    assert params["temperature"] == 0.2 and "seed" not in params  # the API has no seed
    thinking = build_messages_params(tuned, model="claude-x", thinking_budget=2000)
    assert "temperature" not in thinking


async def test_sampling_fills_what_a_request_leaves_unset() -> None:
    inner = ScriptedModel([Reply(text="a"), Reply(text="b")])
    model = SampledModel(inner, Sampling(temperature=0.0, seed=5))
    await model.complete(ASK)
    await model.complete(ModelRequest(ASK.messages, temperature=0.9))
    assert [(r.temperature, r.seed) for r in inner.requests] == [(0.0, 5), (0.9, 5)]


class MemoryStore:
    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.rows.get(key)

    def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        self.rows[key] = json.loads(json.dumps(response))


async def collect(model: Any, request: ModelRequest) -> list[Any]:
    return [chunk async for chunk in model.stream(request)]


async def test_an_identical_request_is_answered_from_the_cache() -> None:
    reply = Reply(
        text="Revenue was $416,161 million.",
        tool_calls=[("calculate", {"operation": "margin", "part": 1, "whole": 2})],
        reasoning="look it up",
        usage=Usage(input_tokens=900, output_tokens=80),
    )
    inner = ScriptedModel([reply, Reply(text="other seed")])
    store = MemoryStore()
    model = CachedModel(inner, store, "openai:m at http://x")
    counted = CacheTally()
    token = tally.set(counted)
    try:
        first = await collect(model, ModelRequest(ASK.messages, seed=1))
        again = await collect(model, ModelRequest(ASK.messages, seed=1))
    finally:
        tally.reset(token)
    assert inner.calls_made == 1 and (counted.hits, counted.misses) == (1, 1)
    one, two = first[-1], again[-1]
    assert isinstance(one, ModelResponse) and isinstance(two, ModelResponse)
    assert two.message == one.message and two.stop_reason == "tool_calls"
    assert two.usage == Usage()  # a cached answer costs nothing
    assert "".join(c.text for c in again if isinstance(c, TextChunk)) == reply.text
    assert [c.name for c in again if isinstance(c, ToolCallChunk) and c.name] == ["calculate"]
    # Any difference in the request is another request: here the seed.
    await collect(model, ModelRequest(ASK.messages, seed=2))
    assert inner.calls_made == 2 and len(store.rows) == 2
    # The model's identity (its endpoint too) is part of the key.
    assert request_key("openai:m at http://x", ASK) != request_key("openai:m at http://y", ASK)


async def test_a_failed_call_is_not_cached() -> None:
    inner = ScriptedModel([ModelError(ErrorKind.SERVER, "500"), Reply(text="fine")])
    store = MemoryStore()
    model = CachedModel(inner, store, "openai:m")
    with pytest.raises(ModelError):
        await model.complete(ASK)
    assert store.rows == {}
    assert (await model.complete(ASK)).message.content == "fine"
    assert (await model.complete(ASK)).message.content == "fine" and inner.calls_made == 2


async def test_an_agent_built_with_sampling_and_cache_uses_them_on_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter.config import load_settings
    from dexter.runtime import EVAL, AgentSpec

    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("DEXTER_ROUTER_MODEL", "openai:main-test")
    model = ScriptedModel([Reply(text="Answer.")] * 4)
    spec = AgentSpec(
        model="openai:main-test",
        channel=EVAL,
        as_of=None,
        temperature=0.3,
        seed=11,
        cache_responses=True,
    )
    async with open_runtime(load_settings()) as rt:
        rt._clients[rt.resolve("openai:main-test").spec] = model
        for _ in range(2):
            async for _event in rt.agent(spec).run("What was Apple's revenue?"):
                pass
        rows = rt.store.query("SELECT COUNT(*) FROM model_responses")[0][0]
    assert model.calls_made == 1 and rows == 1  # the second run was answered from the cache
    assert (model.requests[0].temperature, model.requests[0].seed) == (0.3, 11)
    assert AgentSpec.from_dict(spec.to_dict()) == spec
