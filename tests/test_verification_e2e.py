"""Every answer's figures checked against the data the run saw, end to end.

Real Apple statements come from the recorded SEC mirror on 127.0.0.1 (FY2024 revenue is
391,035 million, FY2025 416,161 million); the model is scripted. A transposed digit (391,305) is
sent back once and the corrected answer is the one that goes out; a figure the model will not fix
goes out marked, in the terminal, in `--json`, in the HTML report and in a chat; `flag` marks
without asking; `off` and `--no-verify` cost no model call at all.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.agent.events import Done, Event, Revising
from dexter.agent.subagent import SubagentArgs, SubagentTool
from dexter.cli.main import main
from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.figure_marks import verification_from_dict
from dexter.gateway.config import ConfigSource, config_path
from dexter.gateway.service import build_service
from dexter.models.scripted import Reply, ScriptedModel, calls
from dexter.models.types import ModelRequest, UserMessage
from dexter.runtime import AgentSpec, Runtime
from dexter.store.sessions import SessionStore
from tests.support.fake_telegram import FakeTelegram, serve_telegram
from tests.support.sec_mirror import Mirror, MirrorServer
from tests.support.wire_server import WireServer
from tests.test_research_e2e import text_reply, tool_calls_reply

MAIN = "openai:main-test"
ROUTER = "openai:router-test"
QUESTION = "What was Apple's revenue in FY2024?"
FETCH = ("income_statements", {"company": "AAPL", "period": "annual", "limit": 2})
WRONG = "Apple's revenue in FY2024 was $391,305 million [S1]."
RIGHT = "Apple's revenue in FY2024 was $391,035 million [S1]."


@pytest.fixture(scope="module")
def sec() -> Iterator[dict[str, str]]:
    with MirrorServer(Mirror()) as server:
        yield server.env()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sec: dict[str, str]) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    for key, value in sec.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("DEXTER_FINANCE_TOOLS", "direct")
    monkeypatch.setenv("DEXTER_MEMORY", "off")
    monkeypatch.setenv("DEXTER_ROUTER_MODEL", ROUTER)
    home = tmp_path / ".dexter"
    monkeypatch.setenv("DEXTER_HOME", str(home))
    yield home


def settings_file(home: Path, **values: object) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(json.dumps(values))


def runtime_with(model: ScriptedModel) -> Runtime:
    rt = open_runtime(load_settings())
    rt._clients[rt.resolve(MAIN).spec] = model
    rt._clients[rt.resolve(ROUTER).spec] = ScriptedModel([Reply(text="[]")] * 20)
    return rt


async def ask(model: ScriptedModel, question: str = QUESTION, **spec: object) -> list[Event]:
    async with runtime_with(model) as rt:
        agent = rt.agent(AgentSpec(model=MAIN, **spec))  # type: ignore[arg-type]
        return [event async for event in agent.run(question)]


def the_done(events: list[Event]) -> Done:
    done = events[-1]
    assert isinstance(done, Done) and done.status == "answered", done
    return done


def repair_request(request: ModelRequest) -> str:
    return request.messages[-1].content if isinstance(request.messages[-1], UserMessage) else ""


def test_a_transposed_digit_is_sent_back_once_and_the_correction_is_what_goes_out(
    home: Path,
) -> None:
    def corrects(request: ModelRequest) -> Reply:
        # The one repair call: no tools wanted, the figure named with where it stands.
        assert request.tool_choice == "none"
        text = repair_request(request)
        assert "- $391,305 million" in text and "revenue in FY2024 was $391,305 million" in text
        return Reply(text=RIGHT)

    model = ScriptedModel([calls(FETCH), Reply(text=WRONG), corrects])
    events = asyncio.run(ask(model))
    done = the_done(events)
    assert model.calls_made == 3
    assert [e.unsupported for e in events if isinstance(e, Revising)] == [["$391,305 million"]]
    assert done.answer == RIGHT
    assert done.verification is not None
    assert done.verification.summary() == {
        "checked": 1,
        "verified": 1,
        "derived": 0,
        "unsupported": 0,
        "repaired": 1,
    }
    (figure,) = done.verification.figures
    assert figure.status == "verified" and figure.value == 391_035_000_000
    assert figure.source and "income_statements" in figure.source
    # The stored turn holds the corrected answer and its check.
    rt = open_runtime(load_settings())
    try:
        store = rt.existing_store()
        assert store is not None
        (session,) = SessionStore(store).list()
        (turn,) = SessionStore(store).turns(session.id)
    finally:
        rt.close_local()
    assert turn.answer == RIGHT
    assert verification_from_dict(turn.verification) == done.verification


def test_a_figure_the_model_will_not_fix_is_marked_in_the_terminal_json_and_report(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    wire_server: WireServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    fetch = tool_calls_reply(("c1", *FETCH))
    wire_server.push(fetch, text_reply(WRONG), text_reply(WRONG))
    report = home.parent / "memo.html"
    assert main(["ask", "--model", "openai:gpt-test", "-o", str(report), QUESTION]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Apple's revenue in FY2024 was $391,305 million† [S1].\n\n")
    assert "† 1 figure could not be checked against the data: $391,305 million\n" in out
    assert "↻ checking figures: $391,305 million not found in the data; revising" in err
    assert "0 of 1 figure checked" in err
    html = report.read_text()
    assert '$391,305 million</mark><sup class="unchecked"><a href="#fig-1">†</a></sup>' in html
    assert "† 1 figure could not be checked against the data: $391,305 million" in html

    wire_server.push(fetch, text_reply(WRONG), text_reply(WRONG))
    assert main(["ask", "--model", "openai:gpt-test", "--json", QUESTION]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    done = lines[-1]
    assert done["type"] == "done" and done["answer"] == WRONG
    assert done["figures"] == [
        {"text": "$391,305 million", "value": 391_305_000_000, "unit": "USD",
         "status": "unsupported"}
    ]  # fmt: skip
    assert done["verification"] == {
        "checked": 1,
        "verified": 0,
        "derived": 0,
        "unsupported": 1,
        "repaired": 0,
    }
    # Joining the `text` events still gives exactly the answer, once; `revising` says why
    # the first round's drafts were superseded.
    assert "".join(e["text"] for e in lines if e["type"] == "text") == WRONG
    assert [e["unsupported"] for e in lines if e["type"] == "revising"] == [["$391,305 million"]]


def test_no_verify_and_verify_off_cost_no_model_call_and_report_nothing(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    wire_server: WireServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    wire_server.push(tool_calls_reply(("c1", *FETCH)), text_reply(WRONG))
    argv = ["ask", "--model", "openai:gpt-test", "--json", "--no-verify", QUESTION]
    assert main(argv) == 0
    done = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert len(wire_server.requests) == 2
    assert done["answer"] == WRONG and done["figures"] is None and done["verification"] is None

    settings_file(home, verify="off")
    model = ScriptedModel([calls(FETCH), Reply(text=WRONG)])
    done_off = the_done(asyncio.run(ask(model)))
    assert model.calls_made == 2 and done_off.verification is None


def test_flag_marks_without_asking_the_model_again(home: Path) -> None:
    settings_file(home, verify="flag")
    model = ScriptedModel([calls(FETCH), Reply(text=WRONG)])
    events = asyncio.run(ask(model))
    done = the_done(events)
    assert model.calls_made == 2
    assert not any(isinstance(e, Revising) for e in events)
    assert done.answer == WRONG
    assert done.verification is not None
    assert [f.status for f in done.verification.figures] == ["unsupported"]


def test_a_follow_up_is_checked_against_what_the_earlier_turn_fetched(home: Path) -> None:
    model = ScriptedModel(
        [calls(FETCH), Reply(text=RIGHT), Reply(text="That is about $391.0 billion.")]
    )

    async def conversation() -> Done:
        async with runtime_with(model) as rt:
            agent = rt.agent(AgentSpec(model=MAIN))
            [e async for e in agent.run(QUESTION)]
            events = [e async for e in agent.run("And in billions?")]
            return the_done(events)

    done = asyncio.run(conversation())
    # No repair call: the figure is in the data the first turn fetched.
    assert model.calls_made == 3
    assert done.verification is not None and done.verification.unsupported == ()


def test_a_resumed_session_checks_against_what_its_earlier_turns_fetched(home: Path) -> None:
    asyncio.run(ask(ScriptedModel([calls(FETCH), Reply(text=RIGHT)])))
    # Another process, days later: `dexter ask --continue "And in billions?"`.
    later = ScriptedModel([Reply(text="That is about $391.0 billion.")])
    done = the_done(asyncio.run(ask(later, "And in billions?", resume="latest")))
    assert later.calls_made == 1
    assert done.verification is not None and done.verification.count("verified") == 1


def test_sub_agents_do_not_check_their_own_answers(home: Path) -> None:
    async def prepared() -> tuple[str, str]:
        async with runtime_with(ScriptedModel([])) as rt:
            session = rt.agent(AgentSpec(model=MAIN))
            tool = session.tools.get("spawn_subagent")
            assert isinstance(tool, SubagentTool)
            worker, _ = tool._prepare(SubagentArgs(description="AAPL revenue", task="find it"))
            return session.config.verify, worker.config.verify

    assert asyncio.run(prepared()) == ("repair", "off")


def write_gateway_config(home: Path, fake: FakeTelegram) -> None:
    home.mkdir(parents=True, exist_ok=True)
    account = {"token": fake.token, "api_base": fake.url}
    config = {
        "model": MAIN,
        "channels": {"telegram": {"allow_from": ["42"], "accounts": {"default": account}}},
    }
    config_path(home).write_text(json.dumps(config))


async def test_a_chat_answer_shows_the_mark_and_names_the_figure(home: Path) -> None:

    # The model fetches Apple's statements, then keeps the wrong figure when asked to fix it.
    model = ScriptedModel([calls(FETCH), Reply(text=WRONG), Reply(text=WRONG)])
    with serve_telegram() as fake:
        write_gateway_config(home, fake)
        async with runtime_with(model) as rt:
            service = build_service(rt, ConfigSource(config_path(home), interval=0))
            await service.start()
            try:
                fake.push(QUESTION, user=42)
                await asyncio.to_thread(fake.wait_for, lambda: fake.texts(42))
            finally:
                await service.stop()
    (sent,) = fake.texts(42)
    assert "was $391,305 million† [S1]" in sent
    assert sent.endswith("† 1 figure could not be checked against the data: $391,305 million")
    assert model.calls_made == 3


async def test_the_interactive_session_shows_the_revision_and_switches_modes(
    tmp_path: Path,
) -> None:
    from dexter.agent.loop import Agent, AgentConfig
    from dexter.cli.interactive import DexterApp
    from dexter.tools.finance.calculate import CalculateTool
    from dexter.tools.registry import ToolRegistry
    from tests.test_interactive_app import answers, ask, notes

    growth = ("calculate", {"operation": "percent_change", "start": 391035, "end": 416161})
    model = ScriptedModel(
        [
            calls(growth),
            Reply(text="Revenue grew 6.3%."),
            Reply(text="Revenue grew 6.4%."),
            calls(growth),
            Reply(text="So it grew 6.3%."),
        ]
    )
    config = AgentConfig(home=tmp_path / ".dexter", verify="repair")
    app = DexterApp(Agent(model, ToolRegistry([CalculateTool()]), config=config))
    async with app.run_test(size=(100, 40)) as pilot:
        await ask(pilot, app, "How much did revenue grow?")
        # The first draft gives way to the note; the revision is the answer.
        assert answers(app) == ["Revenue grew 6.4%."]
        assert notes(app, "notice") == ["↻ checking figures: 6.3% not found in the data; revising"]
        assert notes(app, "stats")[-1].endswith("1 figure checked")
        await ask(pilot, app, "/verify flag")
        assert notes(app, "info")[-1].startswith("Figure check: flag")
        await ask(pilot, app, "Check again?")
        assert model.calls_made == 5  # flag: no repair call for the second answer
        assert answers(app)[-1] == (
            "So it grew 6.3%†.\n\n† 1 figure could not be checked against the data: 6.3%"
        )


def test_a_scheduled_alert_goes_out_with_the_figure_marked(home: Path) -> None:
    from datetime import UTC, datetime

    from dexter.cron.agent_executor import AgentExecutor
    from dexter.cron.model import Job
    from dexter.cron.schedule import Every

    settings_file(home, verify="flag")
    now = datetime(2026, 12, 1, tzinfo=UTC)
    job = Job("j1", "AAPL watch", Every(3600, now), QUESTION, now, now, model=MAIN)
    model = ScriptedModel([calls(FETCH), Reply(text=WRONG)])

    async def alert() -> str:
        async with runtime_with(model) as rt:
            return (await AgentExecutor(rt).execute(job, QUESTION)).answer

    assert asyncio.run(alert()) == (
        "Apple's revenue in FY2024 was $391,305 million† [S1].\n\n"
        "† 1 figure could not be checked against the data: $391,305 million"
    )


def test_a_failed_repair_call_keeps_the_first_answer_marked_and_the_json_whole(
    home: Path,
) -> None:
    from dexter.cli.render import JsonRenderer
    from dexter.models.errors import ErrorKind, ModelError

    refused = ModelError(ErrorKind.BAD_REQUEST, "the server refused the request")
    model = ScriptedModel([calls(FETCH), Reply(text=WRONG), refused])
    events = asyncio.run(ask(model))
    done = the_done(events)
    assert model.calls_made == 3
    assert done.answer == WRONG and done.error is None
    assert done.verification is not None and done.verification.count("unsupported") == 1
    # `--json`: the superseded round's text is sent after all, since it is the answer.
    out = io.StringIO()
    renderer = JsonRenderer(out)
    for event in events:
        renderer.handle(event)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert "".join(e["text"] for e in lines if e["type"] == "text") == WRONG


def test_a_revision_that_drops_the_answer_is_not_sent(home: Path) -> None:
    # A reply such as "Nothing to do." is no answer: the first one stands, with its mark.
    long_wrong = WRONG + " Services and wearables grew too, and the installed base kept rising."
    model = ScriptedModel([calls(FETCH), Reply(text=long_wrong), Reply(text="Nothing to do.")])
    done = the_done(asyncio.run(ask(model)))
    assert model.calls_made == 3
    assert done.answer == long_wrong
    assert done.verification is not None
    assert done.verification.summary()["unsupported"] == 1
    assert done.verification.repaired == 0
