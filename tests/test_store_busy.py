"""A database another process holds locked never stalls a run or loses its answer: records are
written off the event loop, retried, and journalled when the process ends before the lock goes."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from dexter.agent.events import Done, TextDelta
from dexter.agent.loop import AgentModels
from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.models.scripted import ScriptedModel, text
from dexter.runtime import ASK, AgentSpec, Runtime
from dexter.store import SessionStore, open_store
from dexter.store.writer import JOURNAL_NAME


def runtime_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("DEXTER_MEMORY", "off")
    # The scripted answer has no data behind it: its figure is marked, with no repair call.
    monkeypatch.setenv("DEXTER_VERIFY", "flag")
    monkeypatch.chdir(tmp_path)
    return open_runtime(load_settings())


def lock(home: Path) -> sqlite3.Connection:
    """Another process's write transaction on the database."""
    other = sqlite3.connect(home / "dexter.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


async def run_scripted(runtime: Runtime, answer: str) -> tuple[list[str], Done, str]:
    agent = runtime.agent(AgentSpec(channel=ASK))
    # The scripted model stands in for the provider, with no fast model.
    agent.agent.use_models(AgentModels(ScriptedModel([text(answer)])))
    deltas: list[str] = []
    done: Done | None = None
    async for event in agent.run("What was Apple's FY2025 revenue?"):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        elif isinstance(event, Done):
            done = event
    assert done is not None
    return deltas, done, agent.session_id


async def test_a_locked_database_does_not_stop_the_run_and_the_answer_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(tmp_path, monkeypatch)
    home = runtime.settings.home
    assert runtime.store  # created and migrated before the other process takes its lock
    other = lock(home)
    try:
        deltas, done, session_id = await asyncio.wait_for(
            run_scripted(runtime, "Revenue was $416.2B."), timeout=30
        )
        assert "".join(deltas) == "Revenue was $416.2B." and done.status == "answered"
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert await runtime.writer.drain(20)
    turns = SessionStore(runtime.store).turns(session_id)
    assert [t.answer for t in turns] == ["Revenue was $416.2B."]
    await runtime.aclose()


async def test_records_still_locked_at_exit_are_journalled_and_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(tmp_path, monkeypatch)
    home = runtime.settings.home
    assert runtime.store
    other = lock(home)
    try:
        _, done, session_id = await run_scripted(runtime, "Kept through the journal.")
        assert done.status == "answered"
        await runtime.aclose()  # the process ends while the lock is still held
        journal = home / JOURNAL_NAME
        assert journal.is_file() and "Kept through the journal." in journal.read_text()
    finally:
        other.execute("ROLLBACK")
        other.close()
    later = open_runtime(load_settings())
    turns = SessionStore(later.store).turns(session_id)  # opening the store replays the journal
    assert [t.answer for t in turns] == ["Kept through the journal."]
    assert not (home / JOURNAL_NAME).exists()
    later.close_local()
    with open_store(home) as store:
        assert store.query("SELECT COUNT(*) FROM turns")[0][0] == 1
