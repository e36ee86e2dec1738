from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from dexter.tools.base import ToolContext, ToolFailure, ToolResult
from dexter.tools.shell import BashArgs, BashTool, is_secret_name
from dexter.tools.shell.bash import MAX_OUTPUT_CHARS


async def _bash(root: Path, command: str, **kwargs: object) -> ToolResult:
    tool = BashTool(root, grace_seconds=0.5)
    args = BashArgs.model_validate({"command": command, **kwargs})
    result = await tool.run(args, ToolContext())
    assert isinstance(result, ToolResult)
    return result


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (containers may not reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - no procfs
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def _wait_dead(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        await asyncio.sleep(0.05)
    return False


def _pids(path: Path) -> list[int]:
    return [int(word) for word in path.read_text().split()]


async def test_output_and_exit_code(tmp_path: Path) -> None:
    ok = await _bash(tmp_path, "echo hello; echo oops >&2")
    assert ok.content.splitlines()[:2] == ["hello", "oops"]
    assert "[exit code 0" in ok.content and not ok.is_error
    assert ok.data["exit_code"] == 0
    failed = await _bash(tmp_path, "echo partial; exit 3")
    assert "partial" in failed.content and "[exit code 3" in failed.content
    assert failed.is_error and failed.data["exit_code"] == 3
    quiet = await _bash(tmp_path, "true")
    assert quiet.content.startswith("(no output)")


@pytest.fixture
def real_tmp(tmp_path: Path) -> Path:
    return tmp_path.resolve()


async def test_runs_in_the_workspace_and_confines_cwd(real_tmp: Path) -> None:
    tmp_path = real_tmp
    (tmp_path / "sub").mkdir()
    here = await _bash(tmp_path, "pwd")
    assert here.content.splitlines()[0] == str(tmp_path)
    sub = await _bash(tmp_path, "pwd", cwd="sub")
    assert sub.content.splitlines()[0] == str(tmp_path / "sub")
    with pytest.raises(ToolFailure, match="workspace"):
        await _bash(tmp_path, "pwd", cwd="../")
    with pytest.raises(ToolFailure, match="workspace"):
        await _bash(tmp_path, "pwd", cwd="/etc")
    with pytest.raises(ToolFailure, match="not a directory"):
        await _bash(tmp_path, "pwd", cwd="missing")


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await _bash(
        tmp_path, "sleep 30 & echo $! > pids; sleep 30 & echo $! >> pids; wait", timeout_seconds=0.5
    )
    assert time.monotonic() - started < 3
    assert result.is_error and result.data["timed_out"] and result.data["exit_code"] is None
    assert "timed out after 0.5 s" in result.content
    assert await _wait_dead(_pids(tmp_path / "pids"), within=30)


async def test_timeout_kills_a_child_that_ignores_sigterm(tmp_path: Path) -> None:
    command = "bash -c 'trap \"\" TERM; sleep 30' & echo $! > pids; wait"
    started = time.monotonic()
    result = await _bash(tmp_path, command, timeout_seconds=0.3)
    assert result.data["timed_out"]
    assert time.monotonic() - started < 3  # 0.3 s timeout + 0.5 s grace, then SIGKILL
    assert await _wait_dead(_pids(tmp_path / "pids"), within=30)


async def test_cancellation_kills_the_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    task = asyncio.create_task(
        _bash(tmp_path, "sleep 30 & echo $! > pids.tmp; mv pids.tmp pids; sleep 30")
    )
    for _ in range(1500):  # up to 30 s for bash to start on a loaded machine
        if pid_file.exists():
            break
        await asyncio.sleep(0.02)
    pids = _pids(pid_file)
    assert all(_alive(pid) for pid in pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _wait_dead(pids, within=30)


async def test_output_cap_keeps_head_and_tail(tmp_path: Path) -> None:
    result = await _bash(tmp_path, "seq 1 100000")  # about 590,000 characters
    assert len(result.content) <= MAX_OUTPUT_CHARS + 200
    lines = result.content.splitlines()
    assert lines[:3] == ["1", "2", "3"]
    assert lines[-2] == "100000" and "[exit code 0" in lines[-1]
    assert "bytes of output omitted" in result.content
    assert result.data["truncated"] and not result.is_error


async def test_endless_output_stops_the_command(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await _bash(tmp_path, "yes finance", timeout_seconds=30)
    assert time.monotonic() - started < 10
    assert "the command was stopped" in result.content and result.is_error
    assert len(result.content) <= MAX_OUTPUT_CHARS + 200


async def test_secrets_are_not_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The environment is an allowlist: names a scrub list would miss stay out too.
    leaks = {
        "OPENAI_API_KEY": "sk-test-should-not-leak",
        "GITHUB_TOKEN": "ghp-should-not-leak",
        "DB_PASSWORD": "hunter2",
        "AWS_SECRET_ACCESS_KEY": "aws-should-not-leak",
        "DATABASE_URL": "postgres://u:pw-should-not-leak@db/x",
        "AWS_ACCESS_KEY_ID": "AKIA-should-not-leak",
        "GITHUB_PAT": "pat-should-not-leak",
        "SIGNING_PRIVATE_KEY": "pk-should-not-leak",
        "SLACK_WEBHOOK_URL": "https://hooks.example/should-not-leak",
        "OPENAI_KEY": "okey-should-not-leak",
        "SOME_UNKNOWN_SETTING": "unknown-should-not-pass",
    }
    for name, value in leaks.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TZ", "UTC")
    result = await _bash(tmp_path, 'echo "[$OPENAI_API_KEY][$DATABASE_URL][$TZ]"; env')
    assert result.content.splitlines()[0] == "[][][UTC]"
    for value in leaks.values():
        assert value not in result.content
    assert "PATH=" in result.content


async def test_known_secret_values_are_redacted_from_output(tmp_path: Path) -> None:
    from dexter.permissions.secrets import REDACTED, Redactor

    canary = "canary-sk-9f8e7d6c5b4a"
    (tmp_path / "notes.txt").write_text(f"token is {canary}\n")
    tool = BashTool(tmp_path, grace_seconds=0.5, redactor=Redactor([canary]))
    progress: list[str] = []
    result = await tool.run(
        BashArgs(command=f"cat notes.txt; echo {canary}"), ToolContext(progress=progress.append)
    )
    assert isinstance(result, ToolResult)
    assert canary not in result.content and REDACTED in result.content
    assert not any(canary in line for line in progress)


def test_secret_names() -> None:
    for name in ("OPENAI_API_KEY", "exa_api_key", "API_KEY", "FMP_APIKEY", "HF_TOKEN"):
        assert is_secret_name(name), name
    for name in ("CLIENT_SECRET_ID", "PGPASSWORD", "MY_PASSWD"):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "KEYBOARD", "TOKENIZERS_PARALLELISM", "LANG"):
        assert not is_secret_name(name), name


def test_flags_and_limits() -> None:
    assert BashTool.needs_approval and not BashTool.concurrency_safe
    with pytest.raises(ValueError):
        BashArgs(command="ls", timeout_seconds=601)
    assert BashArgs(command="ls").timeout_seconds == 60
