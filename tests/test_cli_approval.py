"""The terminal approval prompt shows its keys, and the keys the README names do what it says."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from dexter.agent.events import ApprovalRequest
from dexter.cli.approval import TerminalApprover, ask_once, prompt_text
from dexter.permissions.gate import ApprovalAnswer

README = Path(__file__).resolve().parents[1] / "README.md"


def request(rule: str | None = None) -> ApprovalRequest:
    return ApprovalRequest(
        call_id="c1", tool="bash", args={"command": "rm -rf build"}, command="rm -rf build",
        proposed_rule=rule,
    )  # fmt: skip


async def answer(
    monkeypatch: pytest.MonkeyPatch, typed: str, rule: str | None = None
) -> tuple[ApprovalAnswer, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(typed + "\n"))
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    chosen = await TerminalApprover(console)(request(rule))
    return chosen, out.getvalue()


async def test_prompt_on_screen_contains_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen, screen = await answer(monkeypatch, "y", rule="Bash(rm:*)")
    assert chosen is ApprovalAnswer.ALLOW_ONCE
    assert "Allow bash: $ rm -rf build?" in screen
    screen = " ".join(screen.split())  # a long rule may wrap the prompt
    for key in ("[y] once", "[a] for this run", "[r] always", "[N] deny"):
        assert key in screen
    assert "saves Bash(rm:*)" in screen


async def test_long_prompt_breaks_between_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    # At 80 columns this prompt is 83 wide: the terminal used to break it inside "deny".
    chosen, screen = await answer(monkeypatch, "r", rule="Write(./notes/aapl.md)")
    assert chosen is ApprovalAnswer.ALLOW_ALWAYS
    lines = screen.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert any(line.rstrip().endswith("(saves Write(./notes/aapl.md))") for line in lines)
    assert lines[-1].strip() == "[N] deny:"


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("a", ApprovalAnswer.ALLOW_SESSION),
        ("Y", ApprovalAnswer.ALLOW_ONCE),
        ("", ApprovalAnswer.DENY),
        ("n", ApprovalAnswer.DENY),
        ("r", ApprovalAnswer.DENY),  # no rule was proposed, so "always" is not on offer
    ],
)
async def test_keys_do_what_the_prompt_says(
    monkeypatch: pytest.MonkeyPatch, typed: str, expected: ApprovalAnswer
) -> None:
    chosen, screen = await answer(monkeypatch, typed)
    assert chosen is expected and "[r]" not in screen


async def test_always_saves_when_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen, _ = await answer(monkeypatch, "r", rule="Bash(rm:*)")
    assert chosen is ApprovalAnswer.ALLOW_ALWAYS


async def test_tools_run_prompt_and_closed_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # EOF: nobody to ask, nothing runs
    out = io.StringIO()
    assert not await ask_once(Console(file=out, color_system=None), "bash", "$ ls")
    assert "[y] once" in out.getvalue() and "[N] deny" in out.getvalue()


def test_readme_names_the_same_keys() -> None:
    readme = README.read_text()
    assert prompt_text(rule="RULE").strip() in readme
    assert "[a] for this run" in prompt_text()
