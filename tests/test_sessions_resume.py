"""Sessions survive the process: resume restores history and constraints, and the ledger's
totals are exactly what the models reported, failed calls included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.agent.events import Done, Event
from dexter.cli.main import main
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.scripted import ScriptedModel, text
from dexter.models.types import SystemMessage, Usage
from dexter.session import Session
from dexter.store import Ledger, SessionStore, open_store
from tests.support.sessions import hand_session
from tests.support.wire_server import WireServer, sse


def session_agent(home: Path, model: ScriptedModel) -> Session:
    return hand_session(home, model)


async def ask(agent: Session, query: str) -> Done:
    events: list[Event] = [e async for e in agent.run(query)]
    assert isinstance(events[-1], Done)
    return events[-1]


async def test_resume_restores_history_constraints_and_usage(tmp_path: Path) -> None:
    first = session_agent(
        tmp_path,
        ScriptedModel(
            [
                text("Apple FY2025 revenue was $416.2B.", usage=Usage(100, 20)),
                ModelError(ErrorKind.RATE_LIMIT, "slow down", retry_after=0),
                text("About EUR 383B at 0.92.", usage=Usage(150, 30, cached_tokens=40)),
            ]
        ),
    )
    session_id = first.new_session()
    await ask(first, "What was Apple's FY2025 revenue?")
    done = await ask(first, "From now on, report everything in EUR. Convert that figure.")
    assert done.usage == Usage(150, 30, cached_tokens=40)

    ledger = Ledger(open_store(tmp_path))
    totals = ledger.totals(session_id=session_id)
    assert (totals.input_tokens, totals.output_tokens, totals.cached_tokens) == (250, 50, 40)
    assert totals.calls == 3 and totals.failed_calls == 1  # the 429 is on the books too

    # A new process: a fresh agent resumes the latest session.
    model = ScriptedModel([text("Noted.")])
    second = session_agent(tmp_path, model)
    info = second.resume(None)
    assert info.id == session_id and info.turns == 2
    assert list(second.agent.constraints.items) == ["Report everything in EUR"]
    await ask(second, "And NVIDIA?")
    request = model.requests[0]
    system = request.messages[0]
    assert isinstance(system, SystemMessage) and "Report everything in EUR" in system.content
    contents = [m.content for m in request.messages[1:]]
    assert contents[:4] == [
        "What was Apple's FY2025 revenue?",
        "Apple FY2025 revenue was $416.2B.",
        "From now on, report everything in EUR. Convert that figure.",
        "About EUR 383B at 0.92.",
    ]
    assert SessionStore(open_store(tmp_path)).get(session_id).turns == 3


def test_resume_from_the_command_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    wire_server: WireServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("DEXTER_HOME", "DEXTER_MODEL", "FINANCIAL_DATASETS_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    # Scripted answers with no data behind them: the figure check (tested on its own) is off.
    monkeypatch.setenv("DEXTER_VERIFY", "off")

    def answer(words: str) -> object:
        base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        return sse(
            [
                {**base, "choices": [{"index": 0, "delta": {"content": words}}]},
                {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                {**base, "choices": [], "usage": {"prompt_tokens": 70, "completion_tokens": 7}},
            ]
        )

    wire_server.push(answer("Revenue was $416.2B."), answer("Up 6.4%."))  # type: ignore[arg-type]
    assert main(["ask", "--model", "openai:gpt-test", "Apple revenue FY2025?"]) == 0
    assert main(["ask", "--model", "openai:gpt-test", "--continue", "How much growth?"]) == 0
    resumed = wire_server.requests[1].json()["messages"]
    assert [m["content"] for m in resumed[1:]] == [
        "Apple revenue FY2025?",
        "Revenue was $416.2B.",
        "How much growth?",
    ]
    capsys.readouterr()

    assert main(["sessions", "list", "--json"]) == 0
    sessions = json.loads(capsys.readouterr().out)
    assert len(sessions) == 1 and sessions[0]["turns"] == 2
    assert main(["usage", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "140" in json.dumps(report)  # two main calls of 70 input tokens each
