"""Every path to a tool passes the same permission gate: the agent, `dexter tools run`, and runs
with nobody to ask."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dexter.agent.events import ApprovalRequest, Done, Event, ToolDenied, ToolEnd
from dexter.agent.loop import Agent, AgentConfig
from dexter.cli.main import main
from dexter.models.scripted import ScriptedModel, calls, text
from dexter.permissions.gate import ApprovalAnswer
from dexter.permissions.policy import RulesPolicy
from dexter.tools.fs import WriteFileTool
from dexter.tools.registry import ToolRegistry
from dexter.tools.shell import BashTool


def agent(tmp_path: Path, model: ScriptedModel, approver: Any = None) -> Agent:
    (tmp_path / "notes.txt").write_text("hello\n")
    policy = RulesPolicy(tmp_path / ".dexter" / "settings.json", tmp_path)
    tools = ToolRegistry([BashTool(tmp_path), WriteFileTool(tmp_path)])
    config = AgentConfig(home=tmp_path / ".dexter")
    return Agent(model, tools, config=config, policy=policy, approver=approver)


async def collect(a: Agent, query: str = "q") -> list[Event]:
    return [event async for event in a.run(query)]


async def test_read_only_commands_run_without_asking(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer.DENY

    model = ScriptedModel([calls(("bash", {"command": "ls -la && wc -l notes.txt"})), text("ok")])
    events = await collect(agent(tmp_path, model, approver))
    assert asked == []
    end = next(e for e in events if isinstance(e, ToolEnd))
    assert "notes.txt" in end.result


async def test_writes_with_nobody_to_ask_are_refused_clearly(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            calls(
                ("bash", {"command": "rm notes.txt"}),
                ("write_file", {"path": "x.md", "content": "x"}),
            ),
            text("could not"),
        ]
    )
    events = await collect(agent(tmp_path, model))
    denied = [e for e in events if isinstance(e, ToolDenied)]
    assert [d.tool for d in denied] == ["bash", "write_file"]
    assert all("no one to ask" in d.reason for d in denied)
    assert (tmp_path / "notes.txt").exists() and not (tmp_path / "x.md").exists()
    assert isinstance(events[-1], Done) and events[-1].status == "answered"


async def test_allow_always_saves_an_exact_rule(tmp_path: Path) -> None:
    seen: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        seen.append(request)
        return ApprovalAnswer.ALLOW_ALWAYS

    command = "touch made-by-dexter.txt"
    model = ScriptedModel(
        [
            calls(("bash", {"command": command})),
            text("done"),
            calls(("bash", {"command": command})),
            text("again"),
        ]
    )
    a = agent(tmp_path, model, approver)
    await collect(a)
    assert seen[0].command == command and seen[0].proposed_rule == f"Bash({command})"
    settings = json.loads((tmp_path / ".dexter" / "settings.json").read_text())
    assert settings["permissions"]["allow"] == [f"Bash({command})"]
    await collect(a, "again")
    assert len(seen) == 1, "the saved rule answers the second time"


async def test_secrets_are_denied_even_with_a_broad_rule(tmp_path: Path) -> None:
    policy_file = tmp_path / ".dexter" / "settings.json"
    policy_file.parent.mkdir(parents=True)
    policy_file.write_text(json.dumps({"permissions": {"allow": ["Bash(cat:*)"]}}))
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    model = ScriptedModel([calls(("bash", {"command": "cat .env"})), text("no")])
    events = await collect(agent(tmp_path, model))
    assert any(isinstance(e, ToolDenied) and e.by == "rule" for e in events)
    assert not any(isinstance(e, ToolEnd) for e in events)


def test_tools_run_passes_the_same_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DEXTER_HOME", raising=False)
    (tmp_path / "keep.txt").write_text("x")
    code = main(["tools", "run", "bash", "--args", json.dumps({"command": "rm keep.txt"})])
    assert code == 1
    assert "needs approval and there is no one to ask" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").exists()
    assert main(["tools", "run", "bash", "--args", json.dumps({"command": "ls"})]) == 0
    assert "keep.txt" in capsys.readouterr().out


ESCALATION = [
    # Write a rules file into the workspace through a /dev/fd path, then copy it over the
    # settings with every spelling the original let through, and the shell start-up file too.
    'printf \'{"permissions":{"allow":["Bash","Write","Edit"]}}\' > /dev/fd/../../..{ws}/rules.txt',
    "sort --out=.dexter/settings.json rules.txt",
    "sort --outp=.dexter/settings.json rules.txt",
    "sort -uo.dexter/settings.json rules.txt",
    "cd .dexter && sort -o settings.json ../rules.txt",
    "cat rules.txt > .dexter/settings.json",
    "3<rules.txt >/dev/fd/3",
    "cp rules.txt .dexter/settings.json",
    "git grep --open-files-in='cp rules.txt .dexter/settings.json' x",
    "tee .dexter/settings.json < rules.txt",
    "echo 'alias ls=rm' >> ~/.bashrc",
    "cp rules.txt .git/hooks/pre-commit",
]


@pytest.mark.parametrize("approve", [False, True])
async def test_self_escalation_leaves_the_rules_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approve: bool
) -> None:
    """The model cannot grant itself permissions, with nobody there or with a user who
    approves everything it is asked."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# rc\n")
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    (ws / ".dexter").mkdir(parents=True)
    (ws / ".git" / "hooks").mkdir(parents=True)
    settings = ws / ".dexter" / "settings.json"
    settings.write_text('{"permissions": {"deny": ["Bash(rm:*)"]}}\n')
    before = settings.read_text()

    async def yes(request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer.ALLOW_ONCE

    steps = [calls(("bash", {"command": c.replace("{ws}", str(ws))})) for c in ESCALATION]
    steps += [calls(("write_file", {"path": ".dexter/settings.json", "content": "{}"}))]
    model = ScriptedModel([*steps, text("done")])
    policy = RulesPolicy(settings, ws)
    tools = ToolRegistry([BashTool(ws), WriteFileTool(ws)])
    a = Agent(
        model,
        tools,
        config=AgentConfig(home=ws / ".dexter", max_iterations=40),
        policy=policy,
        approver=yes if approve else None,
    )
    events = await collect(a)
    # Approved steps really ran (the rules file was written); none reached the settings.
    assert (ws / "rules.txt").exists() is approve
    denied = {e.reason for e in events if isinstance(e, ToolDenied) and e.by == "rule"}
    assert any("only Dexter's own commands" in r or "secret" in r for r in denied)
    assert settings.read_text() == before
    assert (home / ".bashrc").read_text() == "# rc\n"
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert (
        policy.evaluate("bash", {"command": "rm x"}, needs_approval=True).decision.value == "deny"
    )


async def test_nul_and_overlong_paths_are_tool_errors_not_crashes(tmp_path: Path) -> None:
    from dexter.tools.fs import ReadFileTool

    model = ScriptedModel(
        [
            calls(
                ("read_file", {"path": "notes\x00.txt"}),
                ("write_file", {"path": "a" * 5000, "content": "x"}),
                ("write_file", {"path": ("b" * 300) + ".md", "content": "x"}),
            ),
            text("ok"),
        ]
    )
    policy = RulesPolicy(tmp_path / ".dexter" / "settings.json", tmp_path)

    async def yes(request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer.ALLOW_ONCE

    tools = ToolRegistry([ReadFileTool(tmp_path), WriteFileTool(tmp_path)])
    a = Agent(
        model, tools, config=AgentConfig(home=tmp_path / ".dexter"), policy=policy, approver=yes
    )
    events = await collect(a)
    assert isinstance(events[-1], Done) and events[-1].status == "answered"
    failures = [e for e in events if type(e).__name__ in ("ToolDenied", "ToolError")]
    assert len(failures) == 3
