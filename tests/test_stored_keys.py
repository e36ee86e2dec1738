"""A key stored with `dexter keys set` stays out of everything Dexter writes or shows: the agent's
tools cannot read `keys.json`, a copy of the key elsewhere is redacted from tool output, and a
provider that echoes the key in its 401 does not get it onto the terminal, the database, the
scratchpad or the log. Driven as a user would: `dexter keys set`, then `dexter ask` against a
local server that speaks the OpenAI wire protocol."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.permissions.policy import RulesPolicy
from dexter.permissions.rules import RuleSet
from dexter.permissions.sandbox import SandboxPolicy, secret_paths
from tests.support.wire_server import WireServer, json_reply
from tests.test_cli import PROVIDER_ENV
from tests.test_research_e2e import text_reply, tool_calls_reply

KEY = "sk-proj-stored-canary-4f3e2d1c0b9a"


@pytest.fixture
def project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire_server: WireServer
) -> Iterator[Path]:
    """A project with its own `.dexter/` home, the key stored in it by `dexter keys set`, and
    the OpenAI provider pointed at the local wire server."""
    monkeypatch.chdir(tmp_path)
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / ".dexter").mkdir()
    monkeypatch.setattr(sys, "stdin", io.StringIO(KEY + "\n"))
    assert main(["keys", "set", "openai"]) == 0
    assert json.loads((tmp_path / ".dexter" / "keys.json").read_text()) == {"OPENAI_API_KEY": KEY}
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    yield tmp_path


def written_anywhere(home: Path) -> str:
    """Every byte Dexter wrote in its home except the keys file itself: the database (with its
    journal), scratchpads, tool results, logs."""
    return "".join(
        path.read_bytes().decode("utf-8", "replace")
        for path in home.rglob("*")
        if path.is_file() and path.name != "keys.json"
    )


def test_the_agent_cannot_read_the_keys_file_and_a_copy_of_the_key_is_redacted(
    project: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "notes.txt").write_text(f"pasted by mistake: {KEY}\n")
    wire_server.push(
        tool_calls_reply(
            ("c1", "bash", {"command": "cat .dexter/keys.json"}),
            ("c2", "bash", {"command": "cd .dexter && head keys.json"}),
            ("c3", "read_file", {"path": ".dexter/keys.json"}),
            ("c4", "bash", {"command": "cat notes.txt"}),
        ),
        text_reply("Done."),
    )
    code = main(["ask", "--json", "--model", "openai:gpt-test", "print the stored keys"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    events = [json.loads(line) for line in captured.out.splitlines()]
    denied = {e["call_id"]: e["reason"] for e in events if e["type"] == "tool_denied"}
    ran = {e["call_id"]: e["result"] for e in events if e["type"] == "tool_end"}
    # The keys file is refused however it is named, before anything runs; the copy is redacted.
    assert set(denied) == {"c1", "c2", "c3"} and all("secret" in r for r in denied.values())
    assert "pasted by mistake: [redacted secret]" in ran["c4"]

    sent_to_model = "".join(r.body.decode() for r in wire_server.requests)
    assert "[redacted secret]" in sent_to_model
    for place in (captured.out, captured.err, sent_to_model, written_anywhere(project / ".dexter")):
        assert KEY not in place
    assert any((project / ".dexter").rglob("dexter.db")) and any(
        (project / ".dexter").rglob("*.jsonl")
    ), "the run was recorded (database and scratchpad) without the key"


@pytest.mark.parametrize("as_json", [False, True])
def test_a_provider_echoing_the_key_in_its_401_never_shows_it(
    project: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    echoed = {
        "error": {
            "message": f"Incorrect API key provided: {KEY}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    wire_server.push(json_reply(echoed, status=401))
    argv = ["--debug", "ask", *(["--json"] if as_json else []), "--model", "openai:gpt-test", "hi"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert wire_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    shown = captured.out + captured.err
    assert "rejected the API key" in shown and "Incorrect API key provided" in shown
    for place in (captured.out, captured.err, written_anywhere(project / ".dexter")):
        assert KEY not in place


@pytest.mark.parametrize(
    "command",
    [
        "cat .dexter/keys.json",
        "head -c 100 ~/.dexter/keys.json",
        "cd .dexter && cat keys.json",
        "grep sk- .dexter/./keys.json",
        "cat /srv/dexter-state/keys.json",
        "cat .dexter/gateway.json",
        "ls .dexter/gateway/whatsapp_web",
    ],
)
def test_the_shell_floor_denies_reading_stored_keys_and_gateway_tokens(
    tmp_path: Path, command: str
) -> None:
    policy = RulesPolicy(tmp_path / ".dexter" / "settings.json", tmp_path, sandboxed=True)
    verdict = policy.evaluate_with(RuleSet(), "bash", {"command": command}, needs_approval=True)
    assert verdict.decision.value == "deny" and "secret" in verdict.reason


def test_file_tools_refuse_the_keys_file_wherever_the_home_is(tmp_path: Path) -> None:
    home = tmp_path / "state"  # a DEXTER_HOME not named .dexter, inside the workspace
    policy = RulesPolicy(home / "settings.json", tmp_path, sandboxed=True)
    for path in ("state/keys.json", "state/gateway.json", "state/gateway/pairing.json"):
        verdict = policy.evaluate_with(RuleSet(), "read_file", {"path": path}, needs_approval=False)
        assert verdict.decision.value == "deny", path


def test_the_sandbox_hides_stored_keys_and_gateway_secrets(tmp_path: Path) -> None:
    home = tmp_path / "state"
    (home / "gateway").mkdir(parents=True)
    for name in ("settings.json", "keys.json", "gateway.json"):
        (home / name).write_text("{}")
    dirs, files = secret_paths(
        SandboxPolicy(workspace=tmp_path / "work", home=tmp_path, hidden=(home / "settings.json",))
    )
    assert {home / "keys.json", home / "gateway.json", home / "settings.json"} <= set(files)
    assert home / "gateway" in dirs


def test_gateway_tokens_are_redacted_once_the_config_is_read(tmp_path: Path) -> None:
    from dexter.gateway.config import load_config
    from dexter.log import redact as redact_log
    from dexter.permissions.secrets import redact

    token = "123456789:AAH-gateway-canary-token-xyz"
    path = tmp_path / "gateway.json"
    accounts = {"default": {"token": token}}
    path.write_text(json.dumps({"channels": {"telegram": {"accounts": accounts}}}))
    load_config(path)
    url = f"https://api.telegram.org/bot{token}/getUpdates"
    assert token not in redact(url) and token not in redact_log(url)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_a_rejection_quoting_the_key_it_was_sent_is_cleaned_at_the_wire(
    wire_server: WireServer, protocol: str
) -> None:
    """Even a key no registry knows (passed in code) is cut from the provider's message."""
    from dexter.models.anthropic_messages import AnthropicMessagesModel
    from dexter.models.base import Model
    from dexter.models.errors import ModelError
    from dexter.models.openai_chat import OpenAIChatModel
    from dexter.models.types import ModelRequest, UserMessage

    key = f"sk-{protocol}-unregistered-canary-77aa"
    wire_server.push(json_reply({"error": {"message": f"invalid x-api-key {key}"}}, status=401))
    model: Model = (
        OpenAIChatModel("gpt-test", api_key=key, base_url=wire_server.url + "/v1")
        if protocol == "openai"
        else AnthropicMessagesModel("claude-test", api_key=key, base_url=wire_server.url)
    )
    try:
        with pytest.raises(ModelError) as rejected:
            async for _ in model.stream(ModelRequest(messages=[UserMessage("hi")])):
                pass
    finally:
        await model.aclose()
    message = rejected.value.user_message()
    assert "invalid x-api-key [redacted secret]" in message and key not in message
