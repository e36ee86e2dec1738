"""The runtime builds every agent: the tools each channel binds, model switches that every phase
follows, and local single-model servers that get working finance tools with no router setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.cli.open_runtime import open_runtime
from dexter.config import ConfigError, load_settings
from dexter.models.recording import RecordingModel
from dexter.runtime import (
    ASK,
    CHANNELS,
    CLI,
    CRON,
    GATEWAY,
    MCP,
    AgentSpec,
    channel_named,
)
from tests.support.wire_server import WireServer, json_reply

ENV = {"OPENAI_API_KEY": "sk-test-123456", "DEXTER_SEC_USER_AGENT": "Test t@example.com"}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_BASE_URL", "DEXTER_ROUTER_MODEL", "DEXTER_MODEL", "DEXTER_MEMORY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    return dict(ENV)


@pytest.mark.parametrize("name", sorted(CHANNELS))
def test_tools_list_prints_exactly_what_the_channel_binds(
    name: str, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tools", "list", "--json", "--channel", name]) == 0
    listed = [row["name"] for row in json.loads(capsys.readouterr().out)]
    runtime = open_runtime(load_settings())
    bound = runtime.tools(AgentSpec(channel=CHANNELS[name])).names()
    assert listed == bound
    agent = runtime.agent(AgentSpec(channel=CHANNELS[name]))
    assert agent.tools.names() == bound
    runtime.close_local()


def test_channels_decide_shell_writes_questions_and_memory(env: dict[str, str]) -> None:
    runtime = open_runtime(load_settings())
    cli = set(runtime.tools(AgentSpec(channel=CLI)).names())
    assert {"bash", "write_file", "ask_user_question", "spawn_subagent", "memory_update"} <= cli
    ask = set(runtime.tools(AgentSpec(channel=ASK)).names())
    assert "bash" in ask and "ask_user_question" not in ask
    gateway = set(runtime.tools(AgentSpec(channel=GATEWAY)).names())
    assert not gateway & {"bash", "write_file", "edit_file", "ask_user_question"}
    cron = set(runtime.tools(AgentSpec(channel=CRON)).names())
    assert "memory_search" in cron and "memory_update" not in cron
    mcp = set(runtime.tools(AgentSpec(channel=MCP)).names())
    assert "get_financials" in mcp and "bash" not in mcp
    runtime.close_local()


def test_full_descriptions_are_listed(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tools", "list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    fetch = rows["web_fetch"]
    assert len(fetch["description"]) > len(fetch["summary"])


def test_tool_filter_and_unknown_names(env: dict[str, str]) -> None:
    runtime = open_runtime(load_settings())
    only = runtime.tools(AgentSpec(tools=frozenset({"calculate"})))
    assert only.names() == ["calculate"]
    without = runtime.tools(AgentSpec(exclude_tools=frozenset({"bash"})))
    assert "bash" not in without.names()
    with pytest.raises(ConfigError, match="unknown tool"):
        runtime.tools(AgentSpec(tools=frozenset({"calculat"})))
    runtime.close_local()


def test_spec_round_trips_as_plain_data() -> None:
    spec = AgentSpec(model="anthropic:claude-sonnet-4-6", channel=CRON, max_iterations=4)
    data = json.loads(json.dumps(spec.to_dict()))
    assert AgentSpec.from_dict(data) == spec
    with pytest.raises(ConfigError, match="Did you mean 'cron'"):
        channel_named("crn")


def _phase_model_name(model: object) -> str:
    assert isinstance(model, RecordingModel)
    return model.inner.name


def test_model_switch_moves_every_phase(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-123456")
    runtime = open_runtime(load_settings())
    agent = runtime.agent(AgentSpec(model="openai:gpt-5.6-sol"))
    assert _phase_model_name(agent.fast_model) == "gpt-5.6-luna"
    session = agent.session_id

    runtime.with_model(agent, "anthropic:claude-sonnet-4-6")
    assert _phase_model_name(agent.model) == "claude-sonnet-4-6"
    assert _phase_model_name(agent.fast_model) == "claude-haiku-4-5"
    assert _phase_model_name(agent.constraint_model) == "claude-haiku-4-5"
    resolved = runtime.resolve("anthropic:claude-sonnet-4-6")
    assert agent.config.context_window == resolved.context_window
    # Sub-agents spawned after the switch run on the new model.
    sub = agent.tools.get("spawn_subagent")
    assert sub is not None
    child = sub.make_agent(None)  # type: ignore[attr-defined]
    assert _phase_model_name(child.model) == "claude-sonnet-4-6"
    # Routed finance tools plan with the new fast model.
    router = agent.tools.get("get_financials")
    assert router is not None
    assert _phase_model_name(router.model_factory()) == "claude-haiku-4-5"  # type: ignore[attr-defined]
    assert agent.session_id == session
    runtime.close_local()


def test_an_explicit_router_model_survives_a_switch(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-123456")
    monkeypatch.setenv("DEXTER_ROUTER_MODEL", "openai:gpt-5.6-luna")
    runtime = open_runtime(load_settings())
    agent = runtime.agent(AgentSpec(model="openai:gpt-5.6-sol"))
    runtime.with_model(agent, "anthropic:claude-sonnet-4-6")
    assert _phase_model_name(agent.fast_model) == "gpt-5.6-luna"
    runtime.close_local()


def test_a_local_single_model_server_does_every_phase_with_the_main_model(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    runtime = open_runtime(load_settings())
    plans = {plan.phase: plan for plan in runtime.phase_plans("openai:qwen3-local")}
    assert plans["router"].spec == "openai:qwen3-local"
    assert "custom endpoint" in plans["router"].reason
    agent = runtime.agent(AgentSpec(model="openai:qwen3-local"))
    assert _phase_model_name(agent.fast_model) == "qwen3-local"
    runtime.close_local()


def test_doctor_names_the_model_of_each_phase(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    main(["doctor", "--model", "openai:qwen3-local"])
    out = " ".join(capsys.readouterr().out.split())
    assert "router, compaction, constraints, memory openai:qwen3-local" in out


def test_doctor_check_asks_the_endpoint_whether_it_serves_the_model(
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    wire_server: WireServer,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    listing = {"object": "list", "data": [{"id": "qwen3-local", "object": "model"}]}
    wire_server.push(json_reply(listing), json_reply(listing))
    assert main(["doctor", "--check", "--model", "openai:qwen3-local"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "✓ openai:qwen3-local: reachable" in out
    assert [r.path for r in wire_server.requests] == ["/v1/models"]  # one endpoint, one request

    main(["doctor", "--check", "--model", "openai:llama-big"])
    out = " ".join(capsys.readouterr().out.split())
    assert "does not list llama-big (it serves qwen3-local)" in out
    # The main model is the one at fault, so the fix named is the main model's setting.
    assert "set --model or DEXTER_MODEL to one of those" in out


def test_doctor_check_fails_when_the_endpoint_cannot_be_reached(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Nothing listens on port 9 (discard), so the model call of every run would fail too.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["doctor", "--model", "openai:qwen3-local"]) == 0  # no request without --check
    assert main(["doctor", "--check", "--model", "openai:qwen3-local"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "✗ openai:qwen3-local: could not reach http://127.0.0.1:9/v1/models" in out


def test_doctor_check_only_warns_when_the_endpoint_has_no_model_list(
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    wire_server: WireServer,
) -> None:
    # Some proxies answer chat calls but 404 on /models: that is no reason to fail the check.
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    wire_server.push(json_reply({"error": "not found"}, status=404))
    assert main(["doctor", "--check", "--model", "openai:qwen3-local"]) == 0
    assert "answered HTTP 404" in " ".join(capsys.readouterr().out.split())


def test_doctor_json_names_the_model_of_each_phase(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    main(["doctor", "--json", "--model", "openai:qwen3-local"])
    phases = json.loads(capsys.readouterr().out)["model"]["phases"]
    assert phases["main"]["spec"] == phases["router"]["spec"] == "openai:qwen3-local"
    assert phases["router"]["source"] == "main"
