"""Every run has a principal: what a chat user, a group or an MCP host gets from the runtime
(tools, memory, sessions, the permission gate), and how an existing database is upgraded."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from dexter.agent.events import Done, ToolDenied, ToolEnd
from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.models.scripted import Reply, ScriptedModel, calls, text
from dexter.permissions.gate import Decision
from dexter.principal import OPERATOR, FileGrants, Grants, Principal, PrincipalError
from dexter.runtime import CLI, GATEWAY, AgentSpec, Runtime
from dexter.store import open_store
from dexter.store.migrations import MIGRATIONS, apply_migrations
from dexter.store.principals import PrincipalStore
from dexter.store.sessions import SessionLookupError, SessionStore

MAIN = "openai:main-test"
ROUTER = "openai:router-test"
ANA = Principal("telegram:222", "user", "Ana", reply_target="telegram:222")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_BASE_URL", "DEXTER_MODEL", "DEXTER_MEMORY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("DEXTER_SEC_USER_AGENT", "Test t@example.com")
    monkeypatch.setenv("DEXTER_EMBEDDINGS", "none")
    monkeypatch.setenv("DEXTER_ROUTER_MODEL", ROUTER)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def runtime_with(*replies: Reply) -> Runtime:
    rt = open_runtime(load_settings())
    rt._clients[rt.resolve(MAIN).spec] = ScriptedModel(list(replies), name="main-test")
    rt._clients[rt.resolve(ROUTER).spec] = ScriptedModel([Reply(text="{}")] * 20)
    return rt


async def run(rt: Runtime, spec: AgentSpec, question: str) -> list[object]:
    session = rt.agent(replace(spec, model=MAIN))
    return [event async for event in session.run(question)]


def test_a_chat_principal_gets_research_tools_and_its_own_data_only(home: Path) -> None:
    rt = runtime_with()
    operator = set(rt.tools(AgentSpec(channel=GATEWAY)).names())
    chat = set(rt.tools(AgentSpec(channel=GATEWAY, principal=ANA)).names())
    assert {"read_file", "heartbeat"} <= operator
    assert {"get_financials", "calculate", "web_fetch", "memory_update", "cron"} <= chat
    assert not chat & {"read_file", "write_file", "edit_file", "bash", "heartbeat"}
    # Even on the terminal's channel, a principal never gets the shell or the operator's files.
    cli = set(rt.tools(AgentSpec(channel=CLI, principal=ANA)).names())
    assert not cli & {"read_file", "bash", "write_file"}
    rt.close_local()


async def test_granted_folder_is_the_only_one_a_principal_reads(home: Path, tmp_path: Path) -> None:
    shared = tmp_path / "research" / "shared"
    shared.mkdir(parents=True)
    (shared / "notes.md").write_text("NVDA thesis: data centre growth\n")
    (tmp_path / "portfolio.md").write_text("secret holdings\n")
    grants = Grants(FileGrants(read=(shared.resolve(),)))
    ana = Principal("telegram:222", "user", "Ana", grants)
    rt = runtime_with(
        calls(
            ("read_file", {"path": "notes.md"}),
            ("read_file", {"path": str(tmp_path / "portfolio.md")}),
            ("read_file", {"path": "../../portfolio.md"}),
        ),
        text("done"),
    )
    async with rt:
        events = await run(rt, AgentSpec(channel=GATEWAY, principal=ana), "read them")
    ended = [e for e in events if isinstance(e, ToolEnd)]
    denied = [e for e in events if isinstance(e, ToolDenied)]
    assert len(ended) == 1 and "data centre growth" in ended[0].result
    assert len(denied) == 2
    assert all("ask the operator" in e.reason for e in denied)
    assert all("secret holdings" not in str(e) for e in events)


@pytest.fixture
def wide_umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


async def test_memory_writes_land_in_the_principals_own_memory(
    home: Path, wide_umask: None
) -> None:
    operator_memory = home / "memory" / "MEMORY.md"
    operator_memory.parent.mkdir(parents=True)
    operator_memory.write_text("- I hold 300 AAPL shares\n")
    update = {"action": "add", "content": "I prefer dividend growers", "file": "long_term"}
    rt = runtime_with(
        calls(("memory_search", {"query": "AAPL shares"})),
        calls(("memory_update", update)),
        text("noted"),
    )
    async with rt:
        events = await run(rt, AgentSpec(channel=GATEWAY, principal=ANA), "remember this")
    searched = next(e for e in events if isinstance(e, ToolEnd) and e.tool == "memory_search")
    assert "300 AAPL" not in searched.result
    own = ANA.home(home) / "memory" / "MEMORY.md"
    assert "dividend growers" in own.read_text()
    # Another person's memory is private on this machine too, whatever the umask.
    assert own.stat().st_mode & 0o777 == 0o600
    assert (home / "principals").stat().st_mode & 0o777 == 0o700
    assert ANA.home(home).stat().st_mode & 0o777 == 0o700
    assert operator_memory.read_text() == "- I hold 300 AAPL shares\n"
    assert isinstance(events[-1], Done)


async def test_sessions_belong_to_their_principal(home: Path) -> None:
    rt = runtime_with(text("one"), text("two"))
    async with rt:
        await run(rt, AgentSpec(channel=CLI), "operator question")
        await run(rt, AgentSpec(channel=GATEWAY, principal=ANA), "Ana's question")
        assert rt.writer.wait_idle(10)
        sessions = SessionStore(rt.store)
        mine = sessions.list(principal_id=ANA.id)
        assert [s.principal_id for s in mine] == [ANA.id]
        operators = sessions.list(principal_id=OPERATOR.id)
        assert len(operators) == 1
        # Ana cannot resume the operator's session, even by its exact id.
        with pytest.raises(SessionLookupError):
            rt.agent(AgentSpec(model=MAIN, channel=GATEWAY, principal=ANA, resume=operators[0].id))
        listed = {row.id: row for row in PrincipalStore(rt.store).list()}
        assert listed[ANA.id].sessions == 1 and listed[ANA.id].display_name == "Ana"
        assert next(iter(listed)) == "operator"


def test_group_run_is_limited_to_what_the_asker_may_do(tmp_path: Path) -> None:
    shared = (tmp_path / "shared").resolve()
    shared.mkdir()
    group = Principal("telegram:group:-100", "group", "Desk", Grants(FileGrants(read=(shared,))))
    member = Principal("telegram:5", "user", "Bo")
    assert group.limited_to(member).grants.files.readable == ()
    assert group.limited_to(OPERATOR).grants.files.readable == (shared,)


def test_grants_parse_with_clear_errors(tmp_path: Path) -> None:
    grants = Grants.from_dict({"files": {"read": [str(tmp_path)]}, "tools": ["heartbeat"]})
    assert grants.files.read == (tmp_path.resolve(),) and grants.tools == {"heartbeat"}
    with pytest.raises(PrincipalError, match="absolute"):
        Grants.from_dict({"files": {"read": ["relative/folder"]}})
    with pytest.raises(PrincipalError, match="unknown file grant"):
        Grants.from_dict({"files": {"exec": ["/tmp"]}})
    with pytest.raises(PrincipalError, match="not a principal id"):
        Principal("../etc", "user")
    assert Principal("slack:T01/U02", "user").slug.startswith("slack_T01_U02-")


def test_policy_strips_operator_rules_from_a_principals_always(home: Path) -> None:
    rt = runtime_with()
    policy = rt.policy(ANA)
    verdict = policy.evaluate("memory_update", {"action": "add"}, needs_approval=True)
    assert verdict.decision is Decision.ASK
    save = policy.add_rule  # type: ignore[attr-defined]
    save("allow", verdict.proposed_rule)
    assert policy.evaluate("memory_update", {}, needs_approval=True).decision is Decision.ALLOW
    # The answer was kept in Ana's folder; the operator still gets asked.
    assert (ANA.home(home) / "permissions.json").exists()
    operator = rt.policy().evaluate("memory_update", {}, needs_approval=True)
    assert operator.decision is Decision.ASK
    rt.close_local()


def test_a_database_from_the_previous_release_upgrades_without_loss(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "dexter.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn, path, MIGRATIONS[:4])
    stamp = "2026-11-30T10:00:00.000000+00:00"
    conn.execute(
        "INSERT INTO sessions (id, created_at, updated_at, title, model) VALUES (?, ?, ?, ?, ?)",
        ("abcd1234", stamp, stamp, "old question", "openai:gpt"),
    )
    conn.execute(
        "INSERT INTO turns (session_id, run_id, started_at, query, answer, status) "
        "VALUES ('abcd1234', 'r1', ?, 'old question', 'old answer', 'answered')",
        (stamp,),
    )
    conn.execute(
        "INSERT INTO cron_jobs (id, name, schedule_json, message, created_at, updated_at) "
        "VALUES ('job1', 'watch', '{}', 'check NVDA', ?, ?)",
        (stamp, stamp),
    )
    conn.commit()
    conn.close()
    store = open_store(home)
    try:
        info = SessionStore(store).get("abcd1234", principal_id="operator")
        assert info.title == "old question" and info.principal_id == "operator"
        assert SessionStore(store).history("abcd1234") == [("old question", "old answer")]
        owner = store.query("SELECT owner FROM cron_jobs WHERE id = 'job1'")[0]["owner"]
        assert owner == "operator"
        operator = PrincipalStore(store).get("operator")
        assert operator is not None and operator.sessions == 1 and operator.jobs == 1
    finally:
        store.close()
