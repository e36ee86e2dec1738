"""Dexter installed as a user installs it: the wheel `uv build` makes, put into a temporary tool
folder by `uv tool install` with no extras, then run as that user would: `--version`, a scripted
`ask -o memo.md` (Markdown needs no extra: the charts are left out with a note), `report` to
stdout, and a PDF whose missing extra names the `uv tool install` step, not `uv sync`.

Offline: the install reads every package from the uv cache (at the lock's versions). When the
cache lacks one, the test is skipped with the command that fills it (scripts/install_check.sh,
which CI runs first). Takes a few seconds: one build, one install, four runs of the command.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sec_mirror import Mirror, MirrorServer
from tests.support.wire_server import WireServer
from tests.test_reports import script_apple_research

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How did Apple's revenue change over the last four fiscal years?"
ANSWER = "Apple's revenue rose to $416.2B in FY2025 from $391.0B in FY2024 [S1]."
# A guard against a hang, not a measure of speed.
LIMIT = 120

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not on PATH"),
]


def _uv_environment(tmp_path: Path) -> dict[str, str]:
    """uv with the user's cache (the test's HOME is a temporary folder), never a download."""
    env = dict(os.environ)
    if "UV_CACHE_DIR" not in env:
        real_home = pwd.getpwuid(os.getuid()).pw_dir
        found = subprocess.run(
            ["uv", "cache", "dir"],
            env={**env, "HOME": real_home},
            capture_output=True,
            text=True,
            check=True,
        )
        env["UV_CACHE_DIR"] = found.stdout.strip()
    env |= {
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_OFFLINE": "1",
        "UV_NO_PROGRESS": "1",
    }
    return env


def _uv(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["uv", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=LIMIT
    )


def _install(tmp_path: Path) -> Path:
    """The `dexter` command of a fresh `uv tool install` of the wheel; skips when offline
    installation cannot work on this machine."""
    env = _uv_environment(tmp_path)
    built = _uv(["build", "--wheel", "--out-dir", str(tmp_path / "dist")], env)
    if built.returncode != 0:
        pytest.skip(f"`uv build` could not build the wheel offline: {built.stderr.strip()}")
    (wheel,) = (tmp_path / "dist").glob("dexter_py-*.whl")
    constraints = tmp_path / "constraints.txt"
    exported = _uv(
        [
            "export",
            "--frozen",
            "--no-dev",
            "--no-emit-project",
            "--no-hashes",
            "-o",
            str(constraints),
        ],
        env,
    )
    assert exported.returncode == 0, exported.stderr
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    installed = _uv(
        ["tool", "install", "--python", python, "--constraints", str(constraints), str(wheel)], env
    )
    if installed.returncode != 0 and "network was disabled" in installed.stderr:
        pytest.skip(
            "the uv cache lacks a package for an offline install; run scripts/install_check.sh "
            "once (it may use the registry) to fill it"
        )
    assert installed.returncode == 0, installed.stderr
    return tmp_path / "bin" / "dexter"


def _user_environment(tmp_path: Path, model: WireServer, sec: MirrorServer) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env |= sec.env()
    env |= {
        "HOME": str(tmp_path / "user"),
        "DEXTER_HOME": str(tmp_path / "user" / ".dexter"),
        "OPENAI_API_KEY": "sk-test-123456",
        "OPENAI_BASE_URL": model.url + "/v1",
        "DEXTER_FINANCE_TOOLS": "routed",
        "DEXTER_DUCKDUCKGO_BASE_URL": "http://127.0.0.1:9",
        "COLUMNS": "80",
    }
    return env


def test_the_wheel_installs_as_a_uv_tool_and_answers_reports_without_extras(
    tmp_path: Path, wire_server: WireServer
) -> None:
    dexter = _install(tmp_path)
    work = tmp_path / "work"
    work.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(dexter), *args],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=LIMIT,
        )

    with MirrorServer(Mirror()) as sec:
        env = _user_environment(tmp_path, wire_server, sec)
        version = run("--version")
        assert version.returncode == 0, version.stderr
        first, how = version.stdout.splitlines()
        assert first.startswith("dexter ") and " " not in first.removeprefix("dexter ")
        assert how.startswith(f"installed: uv tool, from {tmp_path / 'dist'}")
        assert how.endswith("(no extras)")

        script_apple_research(wire_server, ANSWER)
        asked = run("ask", "--model", "openai:gpt-test", "-o", "memo.md", QUESTION)
        assert asked.returncode == 0, asked.stderr
        assert "$416.2B" in asked.stdout
        assert "Traceback" not in asked.stderr and "unexpected error" not in asked.stderr

    memo = (work / "memo.md").read_text()
    assert QUESTION in memo and "$416.2B in FY2025" in memo
    assert "| Revenue | 394,328 | 383,285 | 391,035 | 416,161 | USD millions |" in memo
    assert "![" not in memo and not (work / "memo_charts").exists()
    # The charts were left out, said once, with the step that adds them to this installation.
    assert "Wrote memo.md" in asked.stderr
    assert "chart image(s) left out" in asked.stderr
    assert "uv tool install '" in asked.stderr and "[reports]'" in asked.stderr
    assert "uv sync" not in asked.stderr

    (pad,) = (tmp_path / "user" / ".dexter" / "scratchpad").glob("*.jsonl")
    printed = run("report", pad.stem)
    assert printed.returncode == 0, printed.stderr
    assert "| Revenue | 394,328" in printed.stdout

    pdf = run("report", pad.stem, "-o", "memo.pdf")
    assert pdf.returncode == 2
    assert pdf.stderr.count("\n") == 1
    assert f"uv tool install '{tmp_path / 'dist'}" in pdf.stderr
    assert "[reports]'" in pdf.stderr and "uv sync" not in pdf.stderr
    assert not (work / "memo.pdf").exists()
