"""Dexter against real servers, not our fakes (issue 26): llama-cpp-python's OpenAI-compatible
server running a small GGUF model (Gemma 3 270M, n_ctx 8192), and a real LiteLLM proxy's
Anthropic-wire `/v1/messages` in front of that same server.

Each case runs once per endpoint: a question that needs a tool completes its second round, `ask
"Say hello."` ends within the default output limit, usage the server does not report is estimated
and flagged, the window is detected, and an over-long prompt is recovered as an overflow.

The model is small and slow (tens of tokens a second on 2 cores; evaluating a prompt costs about
as much per token as writing one), so the cases are few, bind only the tools they need, and force a
tool only where the model would not call one by itself. One server of each kind runs per test
run: every test here runs on one xdist worker (tests/conftest.py's scheduler keeps the module
together), and each server is started once, as a session fixture. The servers are prepared by
scripts/prepare_real_servers.sh (.ci/run runs it); where they are not, these tests skip saying so.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from dexter.agent.events import ContextEvent, Done, Event
from dexter.cli.main import main
from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.models.base import Model
from dexter.models.types import (
    AssistantMessage,
    ForcedTool,
    ModelRequest,
    ModelResponse,
    StreamChunk,
    UserMessage,
)
from dexter.runtime import AgentSpec, Runtime
from tests.support.real_servers import (
    LITELLM_MODEL,
    LLAMA_MODEL,
    N_CTX,
    TOOLS,
    ServerProcess,
    start_litellm,
    start_llama,
)

pytestmark = pytest.mark.realserver


@dataclass
class Servers:
    llama: ServerProcess
    litellm: ServerProcess | None
    litellm_key: str
    started: dict[str, float] = field(default_factory=dict)


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """Both servers, started at once: LiteLLM's imports take longer than loading the model, so
    it boots while the llama.cpp cases run."""
    missing = TOOLS.llama_missing()
    if missing:
        pytest.skip(missing)
    workdir = tmp_path_factory.mktemp("real-servers")
    llama = start_llama(TOOLS, workdir)
    litellm, key = (None, "")
    try:
        if TOOLS.litellm_missing() is None:
            litellm, key = start_litellm(TOOLS, workdir, llama.base_url)
        running = Servers(llama, litellm, key)
        running.started["llama"] = llama.wait_ready()
        yield running
    finally:
        for server in (litellm, llama):
            if server is not None:
                server.stop()


@dataclass(frozen=True)
class Endpoint:
    """A server as a user configures Dexter for it: a model and a few environment variables."""

    label: str
    model: str
    env: dict[str, str]
    # Whether the server itself counts tokens when streaming (llama-cpp-python never does).
    reports_usage: bool
    # Whether it states the window before any run (llama-cpp-python only in a refusal).
    states_window: bool

    def apply(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        # The server sends nothing until it has evaluated the whole prompt: about 5 s for these
        # prompts on a quiet 2-core machine, but over a minute next to other busy processes,
        # where the default idle allowance (60 s) would retry a request that is only slow.
        monkeypatch.setenv("DEXTER_STREAM_IDLE_TIMEOUT", "300")
        # Figures are checked, but not sent back: a 270M model's repair of its own made-up
        # figures is a second full answer (minutes on 2 cores through LiteLLM) and tests nothing
        # of the wire these cases are about.
        monkeypatch.setenv("DEXTER_VERIFY", "flag")


@pytest.fixture(params=["llama-cpp-python", "litellm"])
def endpoint(request: pytest.FixtureRequest, servers: Servers) -> Endpoint:
    """Each case runs directly against llama.cpp, then through LiteLLM. In that order, case by
    case: LiteLLM sends the server the same prompt Dexter just sent it, and llama-cpp-python
    reuses what it evaluated for the common beginning (evaluating a prompt costs as much as
    writing), so the LiteLLM half costs little more than the answer."""
    if request.param == "llama-cpp-python":
        # Just a base URL and a model name: a local server needs no key.
        return Endpoint(
            "llama-cpp-python",
            f"openai:{LLAMA_MODEL}",
            {"OPENAI_BASE_URL": servers.llama.base_url + "/v1"},
            reports_usage=False,
            states_window=False,
        )
    missing = TOOLS.litellm_missing()
    if missing or servers.litellm is None:
        pytest.skip(missing or "LiteLLM is not prepared")
    if "litellm" not in servers.started:
        servers.started["litellm"] = servers.litellm.wait_ready()
    return Endpoint(
        "LiteLLM /v1/messages",
        f"anthropic:{LITELLM_MODEL}",
        {"ANTHROPIC_BASE_URL": servers.litellm.base_url, "ANTHROPIC_API_KEY": servers.litellm_key},
        reports_usage=True,
        states_window=True,
    )


# ---- driving Dexter ------------------------------------------------------------------------


def ask_json(
    question: str, endpoint: Endpoint, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    """`dexter ask --json QUESTION` as a user runs it; the `done` event."""
    status = main(["ask", "--json", "--model", endpoint.model, question])
    out = capsys.readouterr()
    events = [json.loads(line) for line in out.out.splitlines() if line.startswith("{")]
    done = [event for event in events if event["type"] == "done"]
    assert done, f"no done event (exit {status}): {out.out[-800:]} {out.err[-800:]}"
    assert status == (0 if done[-1]["status"] == "answered" else 1)
    return done[-1]


async def run_agent(
    spec: AgentSpec, question: str, history: list[Any] | None = None
) -> list[Event]:
    """One run through the runtime, as every front door builds it."""
    async with open_runtime(load_settings()) as runtime:
        session = runtime.agent(spec)
        if history:
            session.history[:] = history
        return [event async for event in session.run(question)]


def done_of(events: list[Event]) -> Done:
    finished = [event for event in events if isinstance(event, Done)]
    assert finished, f"the run did not finish: {events}"
    return finished[-1]


# ---- the cases -----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def hello_runs() -> dict[str, dict[str, Any]]:
    """One `ask "Say hello."` per endpoint, shared by the cases that look at its outcome."""
    return {}


@pytest.fixture
def hello(
    endpoint: Endpoint,
    hello_runs: dict[str, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> dict[str, Any]:
    if endpoint.label not in hello_runs:
        endpoint.apply(monkeypatch)
        hello_runs[endpoint.label] = ask_json("Say hello.", endpoint, capsys)
    return hello_runs[endpoint.label]


def test_say_hello_ends_within_the_default_output_limit(hello: dict[str, Any]) -> None:
    """Without an output limit a small local model writes until its window is full (minutes,
    with nothing shown); Dexter asks for a default scaled to the window, so a greeting ends."""
    assert hello["status"] == "answered", hello["error"]
    assert hello["answer"].strip()
    assert 0 < hello["usage"]["output_tokens"] <= N_CTX // 4


def test_usage_the_server_does_not_report_is_estimated(
    hello: dict[str, Any], endpoint: Endpoint
) -> None:
    """llama-cpp-python reports zero tokens when streaming: the ledger gets an estimate, flagged.
    LiteLLM counts tokens itself, so through it the counts are its own."""
    usage = hello["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["estimated"] is not endpoint.reports_usage


class ForceFirstTool:
    """A model client that forces `tool` in a request offering it before any tool was called
    (the first round, and every retry of it); later rounds go as Dexter made them. Anything else
    is the wrapped client's."""

    def __init__(self, inner: Model, tool: str) -> None:
        self._inner = inner
        self._tool = tool

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        # The runtime hooks itself into its clients (a window learned from an overflow).
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._inner, name, value)

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def provider(self) -> str:
        return self._inner.provider

    def _forced(self, request: ModelRequest) -> ModelRequest:
        offered = any(spec.name == self._tool for spec in request.tools)
        called = any(
            isinstance(message, AssistantMessage) and message.tool_calls
            for message in request.messages
        )
        if offered and not called and request.tool_choice == "auto":
            return replace(request, tool_choice=ForcedTool(self._tool))
        return request

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        async for chunk in self._inner.stream(self._forced(request)):
            yield chunk

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self._inner.complete(self._forced(request))


class FirstRoundCallsCalculate(Runtime):
    """The runtime, with the first model round told to call `calculate`.

    This model does not call a tool unprompted (its server shows it the tools only when one is
    forced), so the first round is forced; the second is left to the model, which answers."""

    def client(self, spec: str | None) -> Model:
        return ForceFirstTool(super().client(spec), "calculate")


def cap_output(tokens: int = 64) -> None:
    """A user's own output cap, as a provider setting, for cases whose answer is not checked: a
    270M model given the window's quarter (2,048 tokens) can ramble for minutes on 2 cores, and
    through LiteLLM its forced call's arguments run to the cap (cut, and refused as invalid JSON,
    whatever the cap), at about a tenth of a second a token."""
    home = Path(os.environ["DEXTER_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    cap = {"maxOutputTokens": tokens}
    (home / "settings.json").write_text(
        json.dumps({"providers": {"openai": cap, "anthropic": cap}}), encoding="utf-8"
    )


def test_a_tool_round_then_an_answer(endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model calls `calculate`, Dexter runs it and sends the call and its result back, and
    the model's second round ends the run as an answer. That round used to die: llama-cpp-python
    answers HTTP 500 to an assistant tool-call turn whose `content` is null, and LiteLLM leaves
    out a `content` that is empty, which llama-cpp-python's template cannot render.

    What the answer says is not checked: this format's template drops tool results, so the model
    never sees the result, and a 270M model often writes nothing after a tool call."""
    endpoint.apply(monkeypatch)
    cap_output()

    async def run() -> list[Event]:
        async with FirstRoundCallsCalculate(load_settings()) as runtime:
            # Two rounds at most: the second must answer (the loop sends tool_choice "none").
            spec = AgentSpec(model=endpoint.model, tools=frozenset({"calculate"}), max_iterations=2)
            session = runtime.agent(spec)
            return [e async for e in session.run("What is 17.5% of 2,400? Use calculate.")]

    done = done_of(asyncio.run(run()))
    assert done.status == "answered", done.error
    assert done.iterations == 2
    assert [call.tool for call in done.tool_calls] == ["calculate"]


# A pasted table of figures: about one token per character for this model's tokenizer, where
# Dexter's estimate (about 3.5 characters a token) sees a third of that, so Dexter sends it and
# the server refuses it.
def pasted_figures(characters: int) -> str:
    rng = random.Random(26)
    rows: list[str] = []
    while sum(len(row) + 1 for row in rows) < characters:
        year = 2000 + len(rows) % 26
        cells = " | ".join(f"{rng.randint(100_000, 999_999):,}" for _ in range(6))
        rows.append(f"| FY{year} | {cells} |")
    return "\n".join(rows)


def test_an_over_long_prompt_is_recovered_as_an_overflow(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier turn that does not fit the server's window: the server refuses the prompt
    (llama-cpp-python streams an empty 200, LiteLLM an empty message), Dexter recognises the
    overflow, drops the old turn and answers, instead of retrying a request that cannot fit."""
    endpoint.apply(monkeypatch)
    cap_output()
    table = pasted_figures(11_000)
    history = [
        UserMessage(f"Here are the segment figures:\n{table}\nKeep them in mind."),
        AssistantMessage(content="Noted."),
    ]
    events = asyncio.run(
        run_agent(AgentSpec(model=endpoint.model, tools=frozenset()), "Say OK.", history)
    )
    done = done_of(events)
    recoveries = [
        e for e in events if isinstance(e, ContextEvent) and e.action == "overflow_recovery"
    ]
    assert done.status == "answered", done.error
    assert recoveries, [type(e).__name__ for e in events]


def doctor_server_line(model: str, capsys: pytest.CaptureFixture[str]) -> str:
    """What `dexter doctor --check` says about the server behind `model`."""
    status = main(["doctor", "--check", "--model", model])
    out = " ".join(capsys.readouterr().out.split())
    assert status == 0, out
    return out[out.index("server: ") :]


def test_the_window_is_detected(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The window the server runs the model at (8,192 tokens), as `dexter doctor --check` shows
    it. LiteLLM states it at /model/info, so Dexter knows it before any run; llama-cpp-python
    states it only when it refuses an over-long prompt, so the first such question fails naming
    it, and from then on Dexter knows it (in this process, the next, and doctor's fresh look)."""
    endpoint.apply(monkeypatch)
    known = f"window {N_CTX:,} tokens (from the server)"
    before = doctor_server_line(endpoint.model, capsys)
    if endpoint.states_window:
        assert known in before, before
        return
    assert known not in before, before

    question = f"Add up these figures:\n{pasted_figures(11_000)}"
    assert main(["ask", "--model", endpoint.model, question]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"context window ({N_CTX:,} tokens)" in err, err

    assert known in doctor_server_line(endpoint.model, capsys)
