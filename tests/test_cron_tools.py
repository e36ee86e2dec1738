"""The agent's cron and heartbeat tools: the same validation as the CLI, listing runs freely,
a new job needs approval and then runs; with nobody to approve, nothing is scheduled."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from dexter.agent.events import ApprovalRequest, Done, Event, ToolDenied, ToolEnd, ToolError
from dexter.agent.loop import Agent, AgentConfig
from dexter.cron.model import Job
from dexter.cron.prompts import HEARTBEAT_FILE
from dexter.cron.runner import Runner
from dexter.cron.store import CronStore
from dexter.cron.tools import CronTool, CronToolContext, HeartbeatTool
from dexter.models.scripted import ScriptedModel, calls, text
from dexter.permissions.gate import ApprovalAnswer
from dexter.permissions.policy import RulesPolicy
from dexter.store import open_store
from dexter.tools.registry import ToolRegistry
from tests.support.cron import FakeClock, ScriptedExecutor

START = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


def build(
    tmp_path: Path,
    model: ScriptedModel,
    approver: object,
    clock: FakeClock,
    target: str | None = None,
) -> tuple[Agent, CronStore, list[str]]:
    home = tmp_path / ".dexter"
    cron = CronStore(open_store(home))
    ran: list[str] = []

    async def run_job(job: Job) -> str:
        ran.append(job.id)
        return "ok"

    context = CronToolContext(
        cron=lambda: cron,
        run_job=run_job,
        default_target=target,
        user_zone="UTC",
        clock=clock.now,
    )
    tools = ToolRegistry([CronTool(context), HeartbeatTool(home, context)])
    policy = RulesPolicy(home / "settings.json", tmp_path)
    agent = Agent(model, tools, config=AgentConfig(home=home), policy=policy, approver=approver)  # type: ignore[arg-type]
    return agent, cron, ran


async def collect(agent: Agent, query: str = "q") -> list[Event]:
    return [event async for event in agent.run(query)]


ADD = {
    "action": "add",
    "name": "NVDA 10-Q watch",
    "message": "Check EDGAR for a new NVDA 10-Q; alert with the headline numbers.",
    "every": "1h",
}


async def test_adding_a_job_asks_first_then_it_runs(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer.ALLOW_ONCE

    clock = FakeClock(START)
    model = ScriptedModel(
        [calls(("cron", ADD)), calls(("cron", {"action": "list"})), text("Scheduled.")]
    )
    agent, cron, _ = build(tmp_path, model, approver, clock, target="telegram:42")
    events = await collect(agent, "tell me when NVDA files its 10-Q")
    assert [r.tool for r in asked] == ["cron"]  # add asked; list did not
    assert asked[0].args["action"] == "add"
    [job] = cron.all()
    assert job.target == "telegram:42"  # the chat that created it
    assert job.state.next_run_at == START + timedelta(hours=1)
    listing = [e for e in events if isinstance(e, ToolEnd)][-1]
    assert "NVDA 10-Q watch" in listing.result and job.id in listing.result

    executor = ScriptedExecutor("NVDA filed its 10-Q: revenue $57.0B.")
    runner = Runner(cron, executor, home=tmp_path / ".dexter", clock=clock)
    clock.advance(hours=1)
    await runner.tick()
    await runner.drain()
    assert executor.runs == 1
    assert cron.outbox()[0].text == "NVDA filed its 10-Q: revenue $57.0B."


async def test_with_nobody_to_approve_nothing_is_scheduled(tmp_path: Path) -> None:
    clock = FakeClock(START)
    model = ScriptedModel([calls(("cron", ADD)), text("I could not schedule it.")])
    agent, cron, _ = build(tmp_path, model, None, clock)
    events = await collect(agent)
    assert any(isinstance(e, ToolDenied) for e in events)
    assert cron.all() == []


async def test_the_tool_refuses_what_the_cli_refuses(tmp_path: Path) -> None:
    async def approve(_request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer.ALLOW_ONCE

    clock = FakeClock(START)
    model = ScriptedModel(
        [
            calls(("cron", {**ADD, "every": "10s"})),
            calls(("cron", {**ADD, "every": None, "at": "2026-11-30T09:00"})),
            calls(("cron", {**ADD, "every": None, "cron": "61 * * * *"})),
            calls(("cron", {"action": "remove", "job_id": "nope"})),
            text("done"),
        ]
    )
    agent, cron, _ = build(tmp_path, model, approve, clock)
    events = await collect(agent)
    errors = [e.error for e in events if isinstance(e, ToolError)]
    assert len(errors) == 4
    assert "too often" in errors[0]
    assert "in the past" in errors[1]
    assert "invalid" in errors[2]
    assert "No scheduled job" in errors[3]
    assert cron.all() == []
    assert isinstance(events[-1], Done)


async def test_update_remove_run_and_the_heartbeat_checklist(tmp_path: Path) -> None:
    asked: list[str] = []

    async def approve(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(str(request.args.get("action")))
        return ApprovalAnswer.ALLOW_ONCE

    clock = FakeClock(START)
    model = ScriptedModel([calls(("cron", ADD)), text("ok")])
    agent, cron, _ran = build(tmp_path, model, approve, clock)
    await collect(agent)
    job_id = cron.all()[0].id
    model2 = ScriptedModel(
        [
            calls(
                (
                    "cron",
                    {
                        "action": "update",
                        "job_id": job_id,
                        "cron": "35 9 * * 1-5",
                        "tz": "America/New_York",
                    },
                )
            ),
            calls(("cron", {"action": "run", "job_id": job_id})),
            calls(("heartbeat", {"action": "view"})),
            calls(("heartbeat", {"action": "update", "content": "- NVDA below $100\n- AAPL 10-Q"})),
            calls(("cron", {"action": "remove", "job_id": job_id})),
            text("done"),
        ]
    )
    agent2, _, _ = build(tmp_path, model2, approve, clock)
    agent2.policy = agent.policy
    events = await collect(agent2)
    results = [e.result for e in events if isinstance(e, ToolEnd)]
    assert "Next run: 2026-12-02T14:35" in results[0]
    assert results[1].endswith("ran: ok")
    assert "default checklist" in results[2]
    assert "2 items" in results[3]
    assert (tmp_path / ".dexter" / HEARTBEAT_FILE).read_text().startswith("- NVDA below $100")
    assert cron.all() == []
    assert asked == ["add", "update", "run", "update", "remove"]  # view was not asked
