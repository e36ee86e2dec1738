"""Dexter against the servers people run: llama.cpp (llama-cpp-python and llama-server), vLLM,
Ollama, LM Studio and LiteLLM's Anthropic endpoint, each replayed over real HTTP on 127.0.0.1.

The answers come from `tests/data/llm_servers/`. llama-cpp-python's are composed from its own
source (the 0.3.36 wheel in ../shared/wheels) and the behaviour issue 26 records against the real
server; vLLM's, Ollama's, LM Studio's, llama-server's and LiteLLM's are composed from their
documented formats, since none of those servers runs on this machine. Each file says where it
came from; `scripts/record_llm_server.py` records a real server's answers in the same format.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.types import AssistantMessage, ModelRequest, UserMessage
from dexter.providers import build_model
from tests.support.llm_servers import ServerRecording, as_reply, load
from tests.support.wire_server import Recorded, Reply, WireServer


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DEXTER_HOME", raising=False)
    home = tmp_path / ".dexter"
    home.mkdir()
    # Any retry (there should be none) waits milliseconds, not seconds.
    (home / "settings.json").write_text(json.dumps({"retry": {"baseDelay": 0.001}}))
    return tmp_path


def serve(server: WireServer, name: str) -> ServerRecording:
    recording = load(name)
    recording.serve_probes(server)
    return recording


PointAt = Callable[..., ServerRecording]


@pytest.fixture
def dexter_at(workdir: Path, wire_server: WireServer, monkeypatch: pytest.MonkeyPatch) -> PointAt:
    """Replay the named server and point Dexter at it, by the variable its protocol reads (or
    `variable`), with no key: a server on this machine needs none."""

    def point(name: str, variable: str | None = None) -> ServerRecording:
        recording = serve(wire_server, name)
        by_protocol = "ANTHROPIC_BASE_URL" if recording.protocol == "anthropic" else None
        monkeypatch.setenv(
            variable or by_protocol or "OPENAI_BASE_URL", recording.base_url(wire_server)
        )
        return recording

    return point


def ask_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]]]:
    code = main(["ask", "--json", *args])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    return code, lines


def chat_bodies(server: WireServer) -> list[dict[str, Any]]:
    return [
        r.json() for r in server.requests if r.path.endswith(("/chat/completions", "/messages"))
    ]


def prompt_estimate(body: dict[str, Any]) -> int:
    """Dexter's own estimate of a plain (tool-call-free) Chat Completions request it sent."""
    from dexter.models.estimate import estimate_request
    from dexter.models.types import Message, SystemMessage, ToolSpec

    messages: list[Message] = [
        SystemMessage(m["content"]) if m["role"] == "system" else UserMessage(m["content"])
        for m in body["messages"]
    ]
    tools = [
        ToolSpec(t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
        for t in body.get("tools", [])
    ]
    return estimate_request(ModelRequest(messages, tools))


def expected_allowance(window: int, body: dict[str, Any]) -> int:
    """A quarter of the window (at least 1,024), never more than the prompt leaves (but at
    least 256: see `dexter.models.profile.output_limit`)."""
    return min(4096, max(1024, window // 4), max(256, window - prompt_estimate(body)))


def tool_call_turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant" and m.get("tool_calls")]


# ---- the probe -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "window"),
    [
        # llama-cpp-python states its window nowhere (its first overflow refusal does).
        ("llama_cpp_python", "llamacpp", None),
        ("llama_server", "llamacpp", 8192),  # GET /props
        ("vllm", "vllm", 16384),  # max_model_len in the listing
        ("ollama", "ollama", 32768),  # num_ctx from POST /api/show, under the trained 131072
        ("lmstudio", "lmstudio", 4096),  # the loaded instance, not the model's 32768
        ("litellm_messages", "litellm", 8192),  # GET /model/info
    ],
)
async def test_the_probe_names_each_server_and_the_window_it_runs(
    wire_server: WireServer, name: str, kind: str, window: int | None
) -> None:
    from dexter.providers.probe import probe_server

    recording = serve(wire_server, name)
    report = await probe_server(
        recording.base_url(wire_server),
        recording.model,
        api_key=None,
        protocol=recording.protocol,
    )
    assert (report.kind, report.context_window) == (kind, window)
    assert report.serves(recording.model) is True
    assert report.problem is None and report.evidence
    assert wire_server.requests == []  # probes never take a scripted conversation reply


async def test_openais_own_api_behind_a_gateway_keeps_openais_dialect(
    wire_server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A company gateway in front of api.openai.com lists OpenAI's models; its reasoning models
    refuse `max_tokens`, so the profile stays OpenAI's (LiteLLM, which lists models the same
    way, answers `/model/info` and is told apart: see the litellm_messages case above)."""
    from dexter.providers.probe import probe_server
    from dexter.providers.profiles import probed_profile
    from tests.support.wire_server import json_reply

    listing = {
        "object": "list",
        "data": [{"id": "gpt-5.6-sol", "object": "model", "created": 1, "owned_by": "system"}],
    }
    wire_server.describe("GET", "/v1/models", json_reply(listing))
    report = await probe_server(wire_server.url + "/v1", "gpt-5.6-sol", api_key="sk-test")
    assert report.kind == "openai"
    assert [p.path for p in wire_server.probes] == ["/v1/models", "/model/info"]
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    from dexter.providers import resolve_model

    profile = probed_profile(resolve_model("openai:gpt-5.6-sol", load_settings()), report)
    assert profile.output_limit_param == "max_completion_tokens"
    assert profile.default_output_tokens is None and profile.assistant_tool_call_content is None


async def test_a_server_that_is_down_is_a_problem_not_an_exception() -> None:
    from dexter.providers.probe import probe_server

    report = await probe_server("http://127.0.0.1:9/v1", "m", api_key=None)
    assert report.kind is None and report.problem and "could not reach" in report.problem


def test_the_probe_cache_keeps_an_answer_for_a_day(tmp_path: Path) -> None:
    from dexter.providers.probe import ProbeCache, ServerReport

    cache = ProbeCache(tmp_path)
    report = ServerReport(kind="vllm", context_window=16384, models=("m",), evidence="x")
    cache.put("http://h:8000/v1/", "m", report, now=1000.0)
    assert cache.get("http://h:8000/v1", "m", now=1000.0 + 3600) == report
    assert cache.get("http://h:8000/v1", "other", now=1000.0) is None
    assert cache.get("http://h:8000/v1", "m", now=1000.0 + 25 * 3600) is None
    (tmp_path / "cache" / "server-profiles.json").write_text("{not json")
    assert cache.get("http://h:8000/v1", "m", now=1000.0) is None


async def test_a_server_is_probed_once_per_process_and_then_read_from_the_cache(
    dexter_at: PointAt, wire_server: WireServer
) -> None:
    import asyncio

    from dexter.runtime import AgentSpec, Runtime

    recording = dexter_at("vllm")
    spec = AgentSpec(model=f"openai:{recording.model}")

    async def answer(runtime: Runtime) -> None:
        session = runtime.agent(spec)
        async for _ in session.run("Say hello."):
            pass
        assert session.agent.config.context_window == 16384

    wire_server.push(*(recording.completion("hello") for _ in range(3)))
    async with open_runtime(load_settings()) as runtime:
        # Two chats starting together (the gateway) share one probe.
        await asyncio.gather(answer(runtime), answer(runtime))
    listings = [p for p in wire_server.probes if p.path == "/v1/models"]
    assert len(listings) == 1
    async with open_runtime(load_settings()) as again:  # the next process: from the cache
        await answer(again)
    assert len(wire_server.probes) == len(listings)


# ---- llama-cpp-python --------------------------------------------------------------------


def _null_content_tool_turn(request: Recorded) -> bool:
    """What llama-cpp-python refuses with HTTP 500: a tool-call turn whose content is null."""
    if not request.path.endswith("/chat/completions"):
        return False
    turns = tool_call_turns(request.json())
    return any(turn.get("content") is None for turn in turns)


def test_llama_cpp_two_round_tool_use_completes_without_a_key(
    dexter_at: PointAt, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = dexter_at("llama_cpp_python")
    wire_server.route(_null_content_tool_turn, recording.completion("null_content"))
    wire_server.push(recording.completion("tool_call"), recording.completion("hello"))

    code, lines = ask_json(capsys, "--model", f"openai:{recording.model}", "What is 6 * 7?")

    done = lines[-1]
    assert code == 0 and done["status"] == "answered", done
    assert done["answer"] == "Hello! How can I help?"
    assert [t["tool"] for t in done["tool_calls"]] == ["calculate"]
    _first, second = chat_bodies(wire_server)
    # Round two sends the tool-call turn back with "" (the server answers null with HTTP 500).
    assert [turn["content"] for turn in tool_call_turns(second)] == [""]
    assert not any(line["type"] == "retrying" for line in lines)


def test_llama_cpp_usage_is_estimated_and_flagged(
    dexter_at: PointAt, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = dexter_at("llama_cpp_python")
    wire_server.push(recording.completion("hello"))

    code, lines = ask_json(capsys, "--model", f"openai:{recording.model}", "Say hello.")

    usage = lines[-1]["usage"]
    assert code == 0
    # The server reports nothing; the prompt alone (system prompt, tools) is thousands of tokens.
    assert usage["estimated"] is True
    assert usage["input_tokens"] > 1000 and usage["output_tokens"] > 0

    assert main(["usage", "--json"]) == 0
    totals = json.loads(capsys.readouterr().out)["totals"]
    assert totals["input_tokens"] == 0  # nothing reported …
    assert totals["estimated_input_tokens"] == usage["input_tokens"]  # … and the estimate kept
    assert totals["estimated_output_tokens"] == usage["output_tokens"]
    assert totals["estimated_calls"] == totals["calls"] >= 1

    assert main(["usage"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "estimated" in text and "in ~" in text


async def test_llama_cpp_overflow_in_an_empty_stream_is_recovered_and_the_window_learned(
    dexter_at: PointAt, workdir: Path, wire_server: WireServer
) -> None:
    from dexter.agent.events import ContextEvent, Done, Retrying
    from dexter.providers.probe import ProbeCache
    from dexter.runtime import AgentSpec

    recording = dexter_at("llama_cpp_python")
    wire_server.push(
        recording.completion("hello"),  # the first question
        recording.completion("overflow_stream"),  # the second: an empty 200 stream …
        recording.completion("overflow"),  # … and the same request without streaming: a 400
        recording.completion("hello"),  # after dropping the earlier turn
    )
    async with open_runtime(load_settings()) as runtime:
        session = runtime.agent(AgentSpec(model=f"openai:{recording.model}"))
        [event async for event in session.run("Say hello.")]
        events = [event async for event in session.run("And again, please.")]

    done = events[-1]
    assert isinstance(done, Done) and done.status == "answered", done
    assert any(isinstance(e, ContextEvent) and e.action == "overflow_recovery" for e in events)
    assert not any(isinstance(e, Retrying) for e in events)
    explain = wire_server.requests[2].json()
    assert "stream" not in explain and explain["max_tokens"] == 1
    # The refusal said 8192 tokens: this session budgets for it, and so does the next process.
    assert session.agent.config.context_window == 8192
    cached = ProbeCache(workdir / ".dexter").get(recording.base_url(wire_server), recording.model)
    assert cached is not None and (cached.kind, cached.context_window) == ("llamacpp", 8192)


async def test_llama_cpp_overflow_is_recovered_when_the_server_drops_the_connection(
    dexter_at: PointAt, workdir: Path, wire_server: WireServer
) -> None:
    """The real llama-cpp-python server (uvicorn) drops the kept-alive connection its empty
    stream came on; the request asking again without streaming, sent on it from the pool, gets
    no answer at all. Asked once more on a fresh connection, it gets the 400."""
    from dexter.agent.events import ContextEvent, Done, Retrying
    from dexter.runtime import AgentSpec

    recording = dexter_at("llama_cpp_python")
    wire_server.push(recording.completion("overflow_stream"), recording.completion("hello"))

    def unstreamed(request: Recorded) -> bool:
        return request.json().get("stream") is not True

    wire_server.route(unstreamed, Reply(hang_up=True))
    wire_server.route(unstreamed, recording.completion("overflow"))
    async with open_runtime(load_settings()) as runtime:
        session = runtime.agent(AgentSpec(model=f"openai:{recording.model}"))
        session.history[:] = [UserMessage("an earlier turn"), AssistantMessage(content="Noted.")]
        events = [event async for event in session.run("Say hello.")]

    done = events[-1]
    assert isinstance(done, Done) and done.status == "answered", done
    assert any(isinstance(e, ContextEvent) and e.action == "overflow_recovery" for e in events)
    assert not any(isinstance(e, Retrying) for e in events)


# ---- llama-server ------------------------------------------------------------------------


def test_llama_server_answers_are_limited_to_a_share_of_its_window(
    dexter_at: PointAt, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = dexter_at("llama_server")
    wire_server.push(recording.completion("hello"))

    code, lines = ask_json(capsys, "--model", f"openai:{recording.model}", "Say hello.")

    assert code == 0 and lines[-1]["answer"] == "Hello! How can I help?"
    (body,) = chat_bodies(wire_server)
    # An 8,192-token window (from /props), in the parameter llama.cpp knows. Dexter's own system
    # prompt and the tool schemas it offers up front leave more than a quarter of it, so the
    # answer gets that quarter.
    assert body["max_tokens"] == expected_allowance(8192, body) == 2048
    # Never more than the prompt leaves, but enough to answer (256) when it leaves less.
    assert body["max_tokens"] <= max(256, 8192 - prompt_estimate(body))
    assert "max_completion_tokens" not in body
    assert lines[-1]["usage"]["estimated"] is False  # llama-server counts when asked


@pytest.mark.parametrize(
    ("name", "window"),
    [("llama_server", 8192), ("vllm", 16384), ("lmstudio", 4096), ("litellm_messages", 8192)],
)
async def test_each_servers_overflow_refusal_is_an_overflow_stating_its_window(
    dexter_at: PointAt, wire_server: WireServer, name: str, window: int
) -> None:
    recording = dexter_at(name)
    wire_server.push(recording.completion("overflow"))
    provider = "anthropic" if recording.protocol == "anthropic" else "openai"
    model = build_model(f"{provider}:{recording.model}", load_settings())
    with pytest.raises(ModelError) as raised:
        async for _ in model.stream(ModelRequest([UserMessage("x" * 40_000)])):
            pass
    assert raised.value.kind is ErrorKind.CONTEXT_OVERFLOW
    assert raised.value.context_window == window
    host = wire_server.url.split("//")[1]
    assert f"the server at {host}" in raised.value.provider


# ---- vLLM, Ollama, LM Studio --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "spec_provider", "variable", "window"),
    [
        # 16,384 tokens (max_model_len): a quarter, 4,096, fits next to the prompt.
        ("vllm", "openai", "OPENAI_BASE_URL", 16384),
        # num_ctx 32768 from /api/show: the default allowance fits.
        ("ollama", "ollama", "OLLAMA_BASE_URL", 32768),
        # Loaded at 4,096, which Dexter's prompt alone overfills: the smallest allowance is
        # asked for, and the server's refusal is then an overflow to recover from.
        ("lmstudio", "openai", "OPENAI_BASE_URL", 4096),
    ],
)
def test_answers_are_limited_in_the_parameter_each_server_knows(
    dexter_at: PointAt,
    wire_server: WireServer,
    capsys: pytest.CaptureFixture[str],
    name: str,
    spec_provider: str,
    variable: str,
    window: int,
) -> None:
    recording = dexter_at(name, variable)
    wire_server.push(recording.completion("hello"))

    code, lines = ask_json(capsys, "--model", f"{spec_provider}:{recording.model}", "Say hello.")

    assert code == 0 and lines[-1]["answer"] == "Hello! How can I help?", lines[-1]
    (body,) = chat_bodies(wire_server)
    assert body["max_tokens"] == expected_allowance(window, body)
    assert "max_completion_tokens" not in body


def test_ollama_tool_call_turns_go_back_with_null_content(
    dexter_at: PointAt, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = dexter_at("ollama", "OLLAMA_BASE_URL")
    wire_server.push(recording.completion("tool_call"), recording.completion("hello"))

    code, lines = ask_json(capsys, "--model", f"ollama:{recording.model}", "What is 6 * 7?")

    assert code == 0 and lines[-1]["status"] == "answered"
    second = chat_bodies(wire_server)[1]
    # Ollama's templates render "" as text, and small models then write tool calls as text.
    assert [turn["content"] for turn in tool_call_turns(second)] == [None]


# ---- LiteLLM's /v1/messages ---------------------------------------------------------------


def test_litellm_messages_gets_a_string_system_prompt_and_a_window_sized_answer(
    dexter_at: PointAt, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = dexter_at("litellm_messages")
    wire_server.push(recording.completion("hello"))

    code, lines = ask_json(capsys, "--model", f"anthropic:{recording.model}", "Say hello.")

    assert code == 0 and lines[-1]["answer"] == "Hello! How can I help?", lines[-1]
    (body,) = chat_bodies(wire_server)
    # llama.cpp behind LiteLLM wants a plain string; 16,000 tokens do not fit an 8k window.
    assert isinstance(body["system"], str) and body["system"]
    assert body["max_tokens"] < 16000 and body["max_tokens"] <= 2048
    assert lines[-1]["usage"]["estimated"] is True  # LiteLLM passes on llama.cpp's zeros


async def test_litellm_overflow_in_an_empty_message_is_recovered(
    dexter_at: PointAt, wire_server: WireServer
) -> None:
    """Streamed, LiteLLM turns llama-cpp-python's refusal of an over-long prompt into a complete,
    empty `end_turn` message with nothing counted (recorded from the real proxy); asked again
    without streaming it refuses with the window. That is an overflow, not an empty answer."""
    from dexter.agent.events import ContextEvent, Done
    from dexter.runtime import AgentSpec

    recording = dexter_at("litellm_messages")
    wire_server.push(
        recording.completion("overflow_stream"),
        recording.completion("overflow"),
        recording.completion("hello"),
    )
    async with open_runtime(load_settings()) as runtime:
        spec = AgentSpec(model=f"anthropic:{recording.model}", tools=frozenset())
        session = runtime.agent(spec)
        session.history[:] = [UserMessage("an earlier turn"), AssistantMessage(content="Noted.")]
        events = [event async for event in session.run("Say hello.")]

    done = events[-1]
    assert isinstance(done, Done) and done.status == "answered", done
    assert done.answer == "Hello! How can I help?"
    assert any(isinstance(e, ContextEvent) and e.action == "overflow_recovery" for e in events)
    explain = wire_server.requests[1].json()
    assert "stream" not in explain and explain["max_tokens"] == 1


def test_errors_name_the_server_the_user_configured(
    dexter_at: PointAt, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = dexter_at("litellm_messages")
    from tests.support.wire_server import json_reply

    refusal = {"error": {"message": "upstream said no", "type": "invalid_request_error"}}
    wire_server.push(json_reply(refusal, status=400))

    assert main(["ask", "--model", f"anthropic:{recording.model}", "Say hello."]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"The server at {wire_server.url.split('//')[1]} rejected the request" in err
    assert "Anthropic" not in err


# ---- dexter doctor --check ------------------------------------------------------------------


def _listing(recording: ServerRecording) -> Reply:
    return as_reply(next(p for p in recording.data["probes"] if p["path"].endswith("/models")))


def test_doctor_check_shows_the_server_kind_window_and_answer_allowance(
    dexter_at: PointAt, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = dexter_at("llama_server")
    wire_server.push(_listing(recording))

    assert main(["doctor", "--check", "--model", f"openai:{recording.model}"]) == 0

    out = " ".join(capsys.readouterr().out.split())
    assert f"✓ openai:{recording.model}: reachable" in out
    assert (
        "server: llamacpp (Server header: llama.cpp) · window 8,192 tokens (from the server) · "
        "answers up to 2,048 tokens (max_tokens)"
    ) in out


def test_doctor_check_keeps_the_window_llama_cpp_python_stated_in_a_refusal(
    dexter_at: PointAt, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """llama-cpp-python states its window only when it refuses an over-long prompt. Once a run
    has learned it there, `doctor --check` (which looks at the server afresh) shows it, and the
    next run still budgets for it."""
    recording = dexter_at("llama_cpp_python")
    model = f"openai:{recording.model}"
    wire_server.push(recording.completion("overflow_stream"), recording.completion("overflow"))
    assert main(["ask", "--model", model, "An over-long question."]) == 1
    assert "(8,192 tokens)" in " ".join(capsys.readouterr().err.split())

    wire_server.push(_listing(recording))
    assert main(["doctor", "--check", "--model", model]) == 0

    out = " ".join(capsys.readouterr().out.split())
    assert "window 8,192 tokens (from the server)" in out
    wire_server.push(_listing(recording))
    assert main(["doctor", "--check", "--model", model]) == 0
    assert "window 8,192 tokens (from the server)" in " ".join(capsys.readouterr().out.split())


def test_doctor_check_fails_when_the_server_does_not_serve_the_model(
    dexter_at: PointAt, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = dexter_at("vllm")
    wire_server.push(_listing(recording))

    assert main(["doctor", "--check", "--model", "openai:Qwen/Qwen2.5-72B-Instruct"]) == 1

    out = " ".join(capsys.readouterr().out.split())
    assert f"does not list Qwen/Qwen2.5-72B-Instruct (it serves {recording.model})" in out


# ---- the recorder ---------------------------------------------------------------------------


RECORDER = Path(__file__).resolve().parents[1] / "scripts" / "record_llm_server.py"


def test_the_recorder_writes_what_the_tests_replay(tmp_path: Path, wire_server: WireServer) -> None:
    """scripts/record_llm_server.py against a server (here the replayed llama-server) writes a
    file that replays to the same probe answer and the same streamed reply."""
    import asyncio
    import importlib.util

    from dexter.providers.probe import probe_server

    spec = importlib.util.spec_from_file_location("record_llm_server", RECORDER)
    assert spec is not None and spec.loader is not None
    recorder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorder)

    original = serve(wire_server, "llama_server")
    wire_server.push(original.completion("hello"))
    argv = ["--name", "again", "--base-url", original.base_url(wire_server)]
    assert recorder.main([*argv, "--model", original.model, "--out", str(tmp_path)]) == 0

    again = ServerRecording("again", json.loads((tmp_path / "again.json").read_text()))
    hello = again.data["completions"]["hello"]
    assert hello["events"] == original.data["completions"]["hello"]["events"]
    replay = WireServer().start()
    try:
        again.serve_probes(replay)
        report = asyncio.run(probe_server(again.base_url(replay), again.model, api_key=None))
    finally:
        replay.stop()
    assert (report.kind, report.context_window) == ("llamacpp", 8192)
