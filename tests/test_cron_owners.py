"""Whose job is it: a job belongs to the principal who created it; only they (or the operator)
see, change, run or remove it; a chat's jobs deliver to that chat and nowhere else; `file:`
delivery is the operator's, inside the alerts folder; an unattended run acts for the job's owner."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from dexter.cron.delivery import Alert, DeliveryError
from dexter.cron.local import FileDeliverer
from dexter.cron.model import Job
from dexter.cron.owners import principal_for_job
from dexter.cron.runner import Runner
from dexter.cron.store import CronStore
from dexter.cron.tools import CronArgs, CronTool, CronToolContext
from dexter.models.scripted import ScriptedModel, calls, text
from dexter.principal import OPERATOR, Principal
from dexter.runtime import GATEWAY, AgentSpec
from dexter.store import open_store
from dexter.store.principals import PrincipalStore
from dexter.store.sessions import SessionStore
from dexter.tools.base import ToolContext, ToolFailure
from tests import test_cron_cli, test_principals
from tests.support.cron import FakeClock, RecordingDeliverer, ScriptedExecutor
from tests.test_principals import MAIN, runtime_with

# Fixtures shared with the CLI's and the principals' tests: a Dexter home for `main([...])`, and
# one for a runtime whose models are scripted (`runtime_with`).
home = test_cron_cli.home
principal_home = test_principals.home

START = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)
ANA = Principal("telegram:222", "user", "Ana", reply_target="telegram:222")
BO = Principal("telegram:333", "user", "Bo", reply_target="telegram:333")
HOST = Principal("mcp:claude-desktop", "mcp", "Claude Desktop")


class Jobs:
    """The cron tool as each principal would call it, over one store."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.cron = CronStore(open_store(home))
        self.clock = FakeClock(START)
        self.ran: list[str] = []

    async def _run_job(self, job: Job) -> str:
        self.ran.append(job.id)
        return "ok"

    async def call(
        self, principal: Principal, default_target: str | None = None, **args: Any
    ) -> str:
        context = CronToolContext(
            cron=lambda: self.cron,
            run_job=self._run_job,
            default_target=default_target,
            user_zone="UTC",
            principal=principal,
            clock=self.clock.now,
            home=self.home,
        )
        result = await CronTool(context).run(
            CronArgs.model_validate(args), ToolContext(home=self.home, principal=principal)
        )
        return str(result)

    async def add(self, principal: Principal, name: str, **args: Any) -> Job:
        await self.call(
            principal, action="add", name=name, message=f"{name}: check", every="1h", **args
        )
        return next(j for j in self.cron.all() if j.name == name)


def sql(cron: CronStore, statement: str, *params: str) -> None:
    """Change a row behind the tools' back (a legacy row, or one edited by hand)."""
    with cron.store.transaction() as conn:
        conn.execute(statement, params)


@pytest.fixture
def jobs(tmp_path: Path) -> Jobs:
    return Jobs(tmp_path / ".dexter")


async def test_a_chat_principal_lists_only_its_own_jobs(jobs: Jobs) -> None:
    await jobs.add(OPERATOR, "Operator portfolio watch")
    await jobs.add(BO, "Bo private watch")
    ana_job = await jobs.add(ANA, "Ana NVDA watch")
    assert ana_job.owner == ANA.id

    listing = await jobs.call(ANA, action="list")
    assert "Ana NVDA watch" in listing
    assert "Operator portfolio" not in listing and "Bo private" not in listing
    assert "Bo private watch" in await jobs.call(BO, action="list")
    # The operator sees every job, each with whose it is.
    everything = await jobs.call(OPERATOR, action="list")
    assert all(n in everything for n in ("Operator portfolio", "Bo private", "Ana NVDA"))
    assert "Owner: telegram:222" in everything and "Owner: telegram:333" in everything


@pytest.mark.parametrize("action", ["update", "run", "remove"])
async def test_another_principals_job_is_refused_as_if_it_did_not_exist(
    jobs: Jobs, action: str
) -> None:
    operator_job = await jobs.add(OPERATOR, "Operator portfolio watch")
    bo_job = await jobs.add(BO, "Bo private watch")
    await jobs.add(ANA, "Ana NVDA watch")
    extra = {"name": "hijacked"} if action == "update" else {}
    with pytest.raises(ToolFailure) as missing:
        await jobs.call(ANA, action=action, job_id="zzzz", **extra)
    for ref in (operator_job.id, bo_job.id, bo_job.id[:4], "Bo private watch", "private"):
        with pytest.raises(ToolFailure) as refused:
            await jobs.call(ANA, action=action, job_id=ref, **extra)
        # The same words as for an id that matches nothing: no name, no owner, no hint.
        assert str(refused.value).replace(ref, "REF") == str(missing.value).replace("zzzz", "REF")
    assert jobs.ran == []
    assert {j.name for j in jobs.cron.all()} == {
        "Operator portfolio watch",
        "Bo private watch",
        "Ana NVDA watch",
    }
    # The operator may act on anyone's job.
    await jobs.call(OPERATOR, action=action, job_id=bo_job.id, **extra)


async def test_a_principal_changes_its_own_job(jobs: Jobs) -> None:
    job = await jobs.add(ANA, "Ana NVDA watch")
    await jobs.call(ANA, action="update", job_id="ana nvda", every="2h")
    await jobs.call(ANA, action="run", job_id=job.id)
    assert jobs.ran == [job.id]
    await jobs.call(ANA, action="remove", job_id=job.id)
    assert jobs.cron.all() == []


async def test_a_chat_job_delivers_to_that_chat_by_default(jobs: Jobs) -> None:
    job = await jobs.add(ANA, "Ana NVDA watch")
    assert job.target == "telegram:222"
    named = await jobs.add(ANA, "Ana AMD watch", deliver="telegram:222")
    assert named.target == "telegram:222"


FOREIGN_TARGETS = [
    "file:~/.bashrc",
    "file:/etc/x",
    "file:../x",
    "file",
    "desktop",
    "outbox",
    "telegram:333",
    "slack:C0123456",
    "whatsapp:+15551234567",
]


@pytest.mark.parametrize("target", FOREIGN_TARGETS)
async def test_a_chat_principal_cannot_deliver_anywhere_but_its_chat(
    jobs: Jobs, target: str
) -> None:
    with pytest.raises(ToolFailure, match="ask the operator") as refused:
        await jobs.add(ANA, "Exfiltrate", deliver=target)
    assert "telegram:222" in str(refused.value)
    job = await jobs.add(ANA, "Ana NVDA watch")
    with pytest.raises(ToolFailure, match="ask the operator"):
        await jobs.call(ANA, action="update", job_id=job.id, deliver=target)
    assert [j.target for j in jobs.cron.all()] == ["telegram:222"]


async def test_a_group_job_answers_in_the_group(jobs: Jobs) -> None:
    group = Principal(
        "whatsapp:group:120363012345678901@g.us",
        "group",
        "Desk",
        reply_target="whatsapp:120363012345678901@g.us",
    )
    job = await jobs.add(group, "Desk watch")
    assert job.target == "whatsapp:120363012345678901@g.us" and job.owner == group.id
    # Without a reply target on the principal, the chat the entry point names is used.
    bare = Principal("telegram:group:-100", "group", "Desk")
    assert (await jobs.add(bare, "Desk TG", default_target="telegram:-100")).target == (
        "telegram:-100"
    )


async def test_a_chat_default_target_is_its_own_chat_even_if_another_is_offered(
    jobs: Jobs,
) -> None:
    job = await jobs.add(ANA, "Ana NVDA watch", default_target="telegram:333")
    assert job.target == "telegram:222"


async def test_a_principal_without_a_chat_gets_the_outbox_only(jobs: Jobs) -> None:
    job = await jobs.add(HOST, "Host watch")
    assert job.target == "outbox" and job.owner == HOST.id
    for target in ("telegram:222", "desktop", "file:alerts.md"):
        with pytest.raises(ToolFailure, match="outbox"):
            await jobs.call(HOST, action="update", job_id=job.id, deliver=target)


async def test_the_operator_cannot_point_a_chat_job_at_files_or_the_desktop(jobs: Jobs) -> None:
    job = await jobs.add(ANA, "Ana NVDA watch")
    for target in ("desktop", "file:ana.md"):
        with pytest.raises(ToolFailure, match="operator's own jobs"):
            await jobs.call(OPERATOR, action="update", job_id=job.id, deliver=target)
    assert jobs.cron.all()[0].target == "telegram:222"


# --------------------------------------------------------------------------- file delivery


def add_job(name: str, *extra: str) -> int:
    return main(["cron", "add", name, "--every", "1h", "--message", "Check NVDA.", *extra])


@pytest.mark.parametrize(
    "target", ["file:~/.bashrc", "file:/etc/x", "file:../x", "file:notes/../../x", "file:.."]
)
def test_the_operators_file_target_stays_in_the_alerts_folder(
    home: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    assert add_job("Watch", "--deliver", target) == 2
    err = capsys.readouterr().err
    assert "alerts folder" in err and "Traceback" not in err
    assert main(["heartbeat", "enable", "--deliver", target]) == 2
    assert "alerts folder" in capsys.readouterr().err
    assert main(["cron", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_a_symlinked_alerts_path_is_refused_when_the_job_is_made(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("keep\n")
    (home / "alerts").mkdir(parents=True)
    (home / "alerts" / "out.md").symlink_to(outside)
    (home / "alerts" / "sub").symlink_to(tmp_path)
    assert add_job("Watch", "--deliver", "file:out.md") == 2
    assert "symbolic link" in capsys.readouterr().err
    assert add_job("Watch", "--deliver", "file:sub/x.md") == 2
    assert "symbolic link" in capsys.readouterr().err
    # The same check guards a change of target.
    assert add_job("Watch", "--deliver", "file:ok.md") == 0
    assert main(["cron", "edit", "Watch", "--deliver", "file:out.md"]) == 2
    assert outside.read_text() == "keep\n"


def alert(target: str) -> Alert:
    return Alert("j1", "NVDA watch", "NVDA filed.", START, target)


async def test_file_delivery_writes_inside_the_alerts_folder(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    await FileDeliverer(home).deliver(alert("file"))
    await FileDeliverer(home).deliver(alert("file:nvda/watch.md"))
    assert "NVDA filed." in (home / "alerts" / "alerts.md").read_text()
    assert "NVDA filed." in (home / "alerts" / "nvda" / "watch.md").read_text()


async def test_a_symlink_that_appears_later_is_refused_at_delivery(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bashrc").write_text("keep\n")
    folder = home / "alerts"
    folder.mkdir(parents=True)
    (folder / "late.md").symlink_to(outside / "bashrc")
    (folder / "sub").symlink_to(outside)
    for target in ("file:late.md", "file:sub/bashrc", "file:/etc/x", "file:../x"):
        with pytest.raises(DeliveryError):
            await FileDeliverer(home).deliver(alert(target))
    # The whole alerts folder swapped for a link out.
    (folder / "late.md").unlink()
    (folder / "sub").unlink()
    folder.rmdir()
    folder.symlink_to(outside)
    with pytest.raises(DeliveryError, match="symbolic link"):
        await FileDeliverer(home).deliver(alert("file:bashrc"))
    assert (outside / "bashrc").read_text() == "keep\n"
    assert sorted(os.listdir(outside)) == ["bashrc"]


async def test_a_chat_principals_job_never_delivers_to_a_file(tmp_path: Path) -> None:
    """A row changed behind the tools' back is still refused when the alert goes out."""
    home = tmp_path / ".dexter"
    jobs = Jobs(home)
    job = await jobs.add(ANA, "Ana NVDA watch")
    sql(jobs.cron, "UPDATE cron_jobs SET target = 'file:ana.md' WHERE id = ?", job.id)
    files = FileDeliverer(home)
    chat = RecordingDeliverer("telegram")
    runner = Runner(
        jobs.cron,
        ScriptedExecutor("NVDA filed its 10-Q."),
        home=home,
        clock=jobs.clock,
        deliverers={"file": files, "telegram": chat},
    )
    result = await runner.run_now(jobs.cron.get(job.id))  # type: ignore[arg-type]
    assert result is not None and result.status == "ok"
    [item] = jobs.cron.outbox()
    assert item.status == "failed" and "operator's own jobs" in (item.last_error or "")
    assert not (home / "alerts" / "ana.md").exists()


# --------------------------------------------------------------------------- the CLI


def test_cron_list_shows_owners_and_filters_by_principal(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert add_job("Operator watch") == 0
    store = CronStore(open_store(home))
    [job] = store.all()
    sql(store, "UPDATE cron_jobs SET owner = ? WHERE id = ?", ANA.id, job.id)
    assert add_job("Second operator watch") == 0
    capsys.readouterr()
    assert main(["cron", "list", "--principal", "telegram:222", "--json"]) == 0
    [only] = json.loads(capsys.readouterr().out)
    assert only["name"] == "Operator watch" and only["owner"] == ANA.id
    assert main(["cron", "list"]) == 0
    table = capsys.readouterr().out
    assert "Owner" in table and "telegram:222" in table and "Second operator watch" in table
    assert main(["cron", "list", "--principal", "operator", "--json"]) == 0
    assert [j["name"] for j in json.loads(capsys.readouterr().out)] == ["Second operator watch"]
    store.add_alert(
        job=store.all()[0],
        run_id=None,
        text="NVDA filed.",
        target="telegram:222",
        created_at=START,
        delivered=False,
    )
    assert main(["cron", "logs"]) == 0
    assert "Operator watch (for telegram:222) -> telegram:222" in capsys.readouterr().out
    # The operator removes anyone's job.
    assert main(["cron", "rm", job.id]) == 0
    assert [j.name for j in store.all()] == ["Second operator watch"]


# --------------------------------------------------------------------------- unattended runs


async def test_a_chat_principals_job_runs_as_that_principal(principal_home: Path) -> None:
    operator_memory = principal_home / "memory" / "MEMORY.md"
    operator_memory.parent.mkdir(parents=True)
    operator_memory.write_text("- I hold 300 AAPL shares\n")
    rt = runtime_with(
        calls(("memory_search", {"query": "AAPL shares"})), text("Nothing new: HEARTBEAT_OK")
    )
    model = rt._clients[rt.resolve(MAIN).spec]
    assert isinstance(model, ScriptedModel)
    async with rt:
        tool = rt.tools(AgentSpec(channel=GATEWAY, principal=ANA)).get("cron")
        assert tool is not None
        ctx = ToolContext(home=principal_home, principal=ANA)
        add = {"action": "add", "name": "AAPL check", "message": "Check AAPL.", "every": "1h"}
        add["model"] = MAIN
        await tool.run(CronArgs.model_validate(add), ctx)
        [job] = CronStore(rt.store).all()
        assert job.owner == ANA.id and job.target == "telegram:222"
        outcome = await tool.run(CronArgs(action="run", job_id=job.id), ctx)
        assert "ran" in str(outcome)
        assert rt.writer.wait_idle(10)
        [run_session] = [s for s in SessionStore(rt.store).list(principal_id=ANA.id)]
        assert SessionStore(rt.store).list(principal_id=OPERATOR.id) == []
        assert run_session.principal_id == ANA.id
    seen = json.dumps([repr(r) for r in model.requests])
    assert "300 AAPL" not in seen
    assert model.calls_made == 2 and "memory_search" in seen


def test_a_jobs_owner_is_resolved_from_the_principals_table(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    PrincipalStore(store).touch(Principal("slack:T01/C03", "group", "Desk"))
    desk = principal_for_job(store, "slack:T01/C03")
    assert (desk.kind, desk.display_name, desk.reply_target) == ("group", "Desk", "slack:C03")
    assert desk.grants.empty
    # Not (yet) in the table: the id says what it is, and it gets no more than the default.
    member = principal_for_job(store, "slack:T01/U02")
    assert (member.kind, member.reply_target) == ("user", "slack:U02")
    group = principal_for_job(store, "telegram:group:-100")
    assert (group.kind, group.reply_target) == ("group", "telegram:-100")
    host = principal_for_job(store, "mcp:claude-desktop")
    assert (host.kind, host.reply_target) == ("mcp", None)
    assert principal_for_job(store, "operator") is OPERATOR
    store.close()
