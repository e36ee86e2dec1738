"""The OS sandbox behind the classifier: real commands, real effects (or none).

Skips with a message where bubblewrap or `unshare -n` cannot run (not Linux, no bwrap, no
permission to create namespaces).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dexter.permissions.sandbox import SandboxPolicy, available_sandbox, detect_sandbox
from dexter.tools.base import ToolContext, ToolResult
from dexter.tools.shell.bash import BashArgs, BashTool

ROOT = Path(__file__).resolve().parent.parent
SANDBOX = available_sandbox()
needs_sandbox = pytest.mark.skipif(
    SANDBOX is None or SANDBOX.kind != "bubblewrap",
    reason=f"no bubblewrap sandbox here ({detect_sandbox()[1]}); apt-get install bubblewrap",
)


def _unshare_works() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    done = subprocess.run(
        ["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, check=False
    )
    return done.returncode == 0


@needs_sandbox
async def test_read_only_command_runs_sandboxed_and_sees_no_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("aws-canary\n")
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    (ws / ".dexter").mkdir(parents=True)
    (ws / ".dexter" / "settings.json").write_text('{"providers": {"x": {"apiKey": "k-canary"}}}')
    (ws / ".env.local").write_text("KEY=env-canary\n")
    (ws / "notes.md").write_text("revenue\n")
    (ws / "secrets.py").write_text("import secrets  # code, not a secret\n")
    tool = BashTool(ws, grace_seconds=0.2)
    # `grep -r` is read-only and runs unasked: in the sandbox it cannot see the secret files.
    result = await tool.run(BashArgs(command="grep -r canary . ; cat notes.md"), ToolContext())
    assert isinstance(result, ToolResult)
    assert "revenue" in result.content and "canary" not in result.content
    assert result.data["sandbox"] == "read-only"
    code = await tool.run(BashArgs(command="cat secrets.py"), ToolContext())
    assert "code, not a secret" in code.content
    assert "sandbox: read-only" in result.content
    listing = await tool.run(BashArgs(command=f"ls {home}/.aws"), ToolContext())
    assert "credentials" not in listing.content


@needs_sandbox
def test_approved_commands_may_write_the_workspace_but_not_protected_files(
    tmp_path: Path,
) -> None:
    assert SANDBOX is not None
    (tmp_path / ".dexter").mkdir()
    settings = tmp_path / ".dexter" / "settings.json"
    settings.write_text("{}")
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    script = "touch made.txt; echo 1 > .dexter/settings.json; touch .git/hooks/pre-commit; true"
    policy = SandboxPolicy(tmp_path, writable=True, home=tmp_path / "nohome")
    subprocess.run(SANDBOX.wrap(["bash", "-c", script], policy, tmp_path), check=True)
    assert (tmp_path / "made.txt").exists()
    assert settings.read_text() == "{}"
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()


@needs_sandbox
@pytest.mark.skipif(not _unshare_works(), reason="cannot create a network namespace (unshare -n)")
def test_corpus_for_real_has_no_harmful_effect() -> None:
    """Corpus commands the policy allows, and harmful ones forced into the sandbox, run for real
    inside a private network namespace with canaries and loopback listeners."""
    corpus = ROOT / "tests" / "data" / "shell_corpus.jsonl"
    harness = ROOT / "tests" / "support" / "real_exec.py"
    done = subprocess.run(
        [
            "unshare",
            "-n",
            "sh",
            "-c",
            'ip link set lo up && exec "$0" "$@"',
            sys.executable,
            str(harness),
            str(corpus),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    rate = report["read_only_asked"] / report["read_only"]
    print(
        f"ran {report['ran']} allowed commands and {report['harmful_ran']} harmful ones; "
        f"read-only false positives {report['read_only_asked']} of {report['read_only']} "
        f"({rate:.1%})"
    )
    assert report["ran"] >= 200 and report["listening"] >= 3
    assert report["listener_hits"] == []
    assert report["changed"] == []
    assert not report["wrote_outside"]
    assert report["leaked"] == []
    assert report["leftover_processes"] == []
    assert rate < 0.05


def _running(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in cmdline and state != "Z":
                found.append(cmdline)
    return found


@needs_sandbox
async def test_a_sandboxed_command_that_times_out_leaves_nothing_running(tmp_path: Path) -> None:
    tool = BashTool(tmp_path, grace_seconds=0.2)
    # Read-only, so it runs in the sandbox; the timeout stops bubblewrap's whole group.
    result = await tool.run(
        BashArgs(command="sleep 31.337 | sleep 31.338", timeout_seconds=0.5), ToolContext()
    )
    assert isinstance(result, ToolResult)
    assert result.data["timed_out"] and result.data["sandbox"] == "read-only"
    for _ in range(600):  # up to 30 s; ends as soon as they are gone
        if not _running("sleep 31.33"):
            break
        await asyncio.sleep(0.05)
    assert _running("sleep 31.33") == []


def test_seatbelt_profile_denies_network_and_secret_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The macOS profile can only run on a Mac; here we check what it says."""
    from dexter.permissions.sandbox import seatbelt_profile

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (tmp_path / ".env").write_text("K=v\n")
    read_only = seatbelt_profile(SandboxPolicy(tmp_path, home=home))
    assert "(deny default)" in read_only and "(deny network*)" in read_only
    assert f'(deny file-read* (subpath "{home / ".ssh"}"))' in read_only
    assert f'(deny file-read* (literal "{tmp_path / ".env"}"))' in read_only
    assert str(tmp_path) not in read_only.split("(allow file-write*", 1)[1].split(")")[0]
    writable = seatbelt_profile(SandboxPolicy(tmp_path, writable=True, home=home))
    assert f'(allow file-write* (subpath "{tmp_path}"))' in writable
