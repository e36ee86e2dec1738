"""The `dexter` command end to end, in-process: real argument parsing, real settings loading,
real OpenAI wire protocol against a local server."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from tests.support.wire_server import WireServer, json_reply, sse

PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_API_KEY",
    "XAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "MOONSHOT_API_KEY",
    "OPENROUTER_API_KEY",
    "OLLAMA_BASE_URL",
    "DEXTER_MODEL",
    "DEXTER_HOME",
    "DEXTER_MAX_ITERATIONS",
)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    # A project home: found from the working directory, it takes precedence over ~/.dexter.
    (tmp_path / ".dexter").mkdir(exist_ok=True)
    return tmp_path


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


USAGE_CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "gpt-test",
    "choices": [],
    "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62},
}


def point_at(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("ask", "tools", "doctor"):
        assert command in out
    assert "exit status" in out


def test_help_fits_an_80_column_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["--help"])
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if len(line) > 80] == []


def test_ask_json_streams_events_and_ends_with_done(
    workdir: Path,
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(wire_server, monkeypatch)
    calc_args = json.dumps({"operation": "evaluate", "expression": "416161 / 391035 - 1"})
    wire_server.push(
        sse(
            [
                chunk(
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_a",
                                "type": "function",
                                "function": {"name": "calculate", "arguments": ""},
                            }
                        ],
                    }
                ),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": calc_args}}]}),
                chunk({}, "tool_calls"),
                USAGE_CHUNK,
            ]
        ),
        sse(
            [
                chunk({"role": "assistant", "content": "Revenue grew "}),
                chunk({"content": "6.43%."}),
                chunk({}, "stop"),
                USAGE_CHUNK,
            ]
        ),
    )
    code = main(["ask", "--json", "--model", "openai:gpt-test", "How much did revenue grow?"])
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    types = [line["type"] for line in lines]
    assert types[0] == "run_started" and types[-1] == "done"
    assert "tool_start" in types and "tool_end" in types
    done = lines[-1]
    assert done["answer"] == "Revenue grew 6.43%."
    assert done["status"] == "answered" and done["iterations"] == 2
    assert done["usage"]["input_tokens"] == 100 and done["usage"]["output_tokens"] == 24
    assert done["tool_calls"][0]["tool"] == "calculate"
    assert "0.0642" in done["tool_calls"][0]["result"]
    # The real request carried our key, the calculate tool, and the tool result on round two.
    first, second = (r.json() for r in wire_server.requests)
    assert wire_server.requests[0].headers["authorization"] == "Bearer sk-test-123456"
    bound = [t["function"]["name"] for t in first["tools"]]
    expected = {
        "calculate",
        "read_tool_result",
        "get_financials",
        "get_market_data",
        "read_filings",
        "read_file",
        "web_fetch",
        "skill",
        "load_tools",
    }
    assert expected <= set(bound)
    assert "web_search" in bound  # key-less search needs no key
    # The rest are bound too, but offered on request: the prompt names them for `load_tools`.
    system = first["messages"][0]["content"]
    on_request = {"stock_screener", "write_file", "edit_file", "bash", "spawn_subagent"}
    assert not on_request & set(bound)
    assert all(f"- `{name}`:" in system for name in on_request)
    assert "ask_user_question" not in bound  # nobody to ask in `dexter ask --json`
    assert "ask_user_question" not in system
    assert second["messages"][-1]["role"] == "tool"
    assert list((workdir / ".dexter" / "scratchpad").glob("*.jsonl"))


def test_ask_plain_prints_answer_to_stdout(
    workdir: Path,
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(wire_server, monkeypatch)
    wire_server.push(sse([chunk({"content": "Hello."}), chunk({}, "stop"), USAGE_CHUNK]))
    assert main(["ask", "--model", "openai:gpt-test", "hi"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "Hello."
    assert "1 round · 0 tool calls" in captured.err


def test_ask_with_rejected_key_fails_with_a_clear_message(
    workdir: Path,
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(wire_server, monkeypatch)
    wire_server.push(
        json_reply(
            {
                "error": {
                    "message": "Incorrect API key provided",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
            status=401,
        )
    )
    assert main(["ask", "--model", "openai:gpt-test", "hi"]) == 1
    err = capsys.readouterr().err
    assert "rejected the API key" in err
    # The server at OPENAI_BASE_URL is named, not "OpenAI".
    assert f"server at {wire_server.url.split('//')[1]}" in err and "OpenAI rejected" not in err
    assert "Traceback" not in err
    assert len(wire_server.requests) == 1, "auth errors are not retried"


def test_missing_key_is_a_configuration_error(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "--model", "anthropic:claude-sonnet-4-6", "hi"]) == 2
    err = capsys.readouterr().err
    assert "ANTHROPIC_API_KEY" in err
    assert "Traceback" not in err


def test_placeholder_key_counts_as_missing(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / ".env").write_text("OPENAI_API_KEY=your-api-key-here\n")
    assert main(["ask", "--model", "openai:gpt-test", "hi"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def test_empty_question_and_bad_iterations_are_usage_errors(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "  "]) == 2
    assert main(["ask", "--max-iterations", "0", "q"]) == 2


def test_tools_list_and_run(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "list"]) == 0
    assert "calculate" in capsys.readouterr().out

    assert main(["tools", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    calc = next(t for t in listed if t["name"] == "calculate")
    assert calc["concurrency_safe"] is True and calc["parameters"]["type"] == "object"

    args = json.dumps({"operation": "evaluate", "expression": "0.1 + 0.2"})
    assert main(["tools", "run", "calculate", "--args", args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["is_error"] is False and result["data"]["result"] == "0.3"


def test_tools_run_reports_bad_input_clearly(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tools", "run", "nope"]) == 2
    assert "unknown tool 'nope'" in capsys.readouterr().err
    assert main(["tools", "run", "calculate", "--args", "{oops"]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    args = json.dumps({"operation": "evaluate", "expression": "1/0"})
    assert main(["tools", "run", "calculate", "--args", args]) == 1
    assert "zero" in capsys.readouterr().err.lower()


def test_corrupt_settings_file_is_reported_not_overwritten(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = workdir / ".dexter" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text('{"model": "openai:gpt-x",')
    assert main(["ask", "q"]) == 2
    assert "settings.json" in capsys.readouterr().err
    assert settings.read_text() == '{"model": "openai:gpt-x",'


def test_doctor_runs_without_keys(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 1  # the default provider has no key here
    assert "OpenAI" in out and "Anthropic" in out and "Ollama" in out


def test_ctrl_c_cancels_cleanly_with_exit_130(workdir: Path, wire_server: WireServer) -> None:
    import os
    import signal
    import subprocess
    import sys

    slow = sse([chunk({"content": f"part {i} "}) for i in range(50)] + [chunk({}, "stop")])
    slow.chunk_delay = 0.2
    wire_server.push(slow)
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_ENV}
    env |= {"OPENAI_API_KEY": "sk-test-123456", "OPENAI_BASE_URL": wire_server.url + "/v1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "dexter", "ask", "--json", "--model", "openai:gpt-test", "hi"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    lines = [json.loads(process.stdout.readline())]
    assert lines[0]["type"] == "run_started"
    # `text` events are held until the round is known to be the answer, so wait for the
    # server to be streaming instead.
    while not wire_server.requests:
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    rest, err = process.communicate(timeout=20)
    lines += [json.loads(line) for line in rest.splitlines()]
    assert process.returncode == 130
    assert lines[-1] == {"type": "cancelled"}
    assert not any(line["type"] == "done" for line in lines), "no error answer after cancel"
    assert "Traceback" not in err
    assert len(wire_server.requests) == 1, "nothing is retried after a cancel"
