"""`dexter web` in team mode: a question goes on the team's queue, a worker answers it as the web
user, and the page's event stream shows it live from Postgres (a second web process too);
cancel reaches the worker; another user still gets 403.

Real parts: Postgres (the `postgres_url` fixture), the app served by uvicorn as `dexter web`
builds it, the queue (procrastinate) and a worker with its own runtime in a thread, the local
SEC mirror; only the model is scripted.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from dexter.models.scripted import Reply, ScriptedModel
from dexter.models.types import ModelRequest
from tests.support.sec_mirror import Mirror, MirrorServer
from tests.support.web import MAIN, PASSWORDS, PAUSE, ROUTER, Script, WebServer, tool_results

REVENUE = ("income_statements", {"company": "AAPL", "period": "annual", "limit": 2})


def revenue(request: ModelRequest) -> Reply:
    if not tool_results(request):
        return Reply(tool_calls=[REVENUE])
    return Reply(text="Apple's revenue in FY2024 was **$391,035 million** [S1].")


NOTE = "notes/aapl.md"


def save_note(request: ModelRequest) -> Reply:
    if not tool_results(request):
        return Reply(tool_calls=[("write_file", {"path": NOTE, "content": "AAPL FY2024\n"})])
    return Reply(text="Saved the note.")


def clarify(request: ModelRequest) -> Reply:
    if not tool_results(request):
        options = [{"label": "Annual"}, {"label": "Quarterly"}]
        question = {"question": "Annual or quarterly figures?", "options": options}
        return Reply(tool_calls=[("ask_user_question", question)])
    return Reply(text=f"You chose: {tool_results(request)[0].content}")


SCRIPT = Script(
    [
        ("revenue", revenue),
        ("note", save_note),
        ("margins", clarify),
        ("slowly", lambda request: Reply(text="Working on it" + PAUSE + " and done.")),
    ]
)


class TeamWebServer(WebServer):
    def __init__(self, root: Path, sec_env: dict[str, str], url: str) -> None:
        super().__init__(root, SCRIPT, sec_env)
        self.url = url

    def environ(self) -> dict[str, str]:
        return super().environ() | {"DEXTER_DATABASE_URL": self.url}


class Worker:
    """`dexter worker` for web questions, on its own event loop and runtime."""

    def __init__(self, environ: dict[str, str], root: Path, url: str) -> None:
        self.environ, self.root, self.url = environ, root, url
        self.ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        from dexter.cli.open_runtime import open_runtime
        from dexter.config import load_settings
        from dexter.web.queued import web_handler
        from dexter.work.engine import PgQueue
        from dexter.work.queue import WEB, Limits

        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        settings = load_settings(cwd=self.root, environ=self.environ)
        async with PgQueue(self.url) as queue, open_runtime(settings) as runtime:
            runtime._clients[runtime.resolve(MAIN).spec] = SCRIPT.model()
            runtime._clients[runtime.resolve(ROUTER).spec] = ScriptedModel([Reply(text="[]")] * 99)
            self.ready.set()
            await queue.work({WEB: web_handler(runtime, self.url)}, Limits(2, (WEB,)), self._stop)

    def __enter__(self) -> Worker:
        self._thread.start()
        assert self.ready.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)


@pytest.fixture
def team(tmp_path: Path, postgres_url: str) -> Iterator[TeamWebServer]:
    with MirrorServer(Mirror()) as sec:
        server = TeamWebServer(tmp_path, sec.env(), postgres_url)
        server.start()
        try:
            with Worker(server.environ(), tmp_path, postgres_url):
                yield server
        finally:
            server.stop()


def log_in(server: WebServer, name: str) -> tuple[httpx2.Client, str]:
    """A client logged in as `name`, and its CSRF token."""
    client = httpx2.Client(base_url=server.base, timeout=20)
    form = client.get("/login")
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token
    done = client.post(
        "/login", data={"csrf": token.group(1), "name": name, "password": PASSWORDS[name]}
    )
    assert done.status_code == 303
    page = client.get("/", headers={"accept": "text/html"})
    found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert found
    return client, found.group(1)


def ask(client: httpx2.Client, csrf: str, question: str) -> dict[str, Any]:
    started = client.post(
        "/ask",
        data={"question": question},
        headers={"accept": "application/json", "x-csrf-token": csrf},
    )
    assert started.status_code == 200, started.text
    return dict(started.json())


def events(client: httpx2.Client, run: dict[str, Any], until: str = "end") -> Iterator[Any]:
    """The run's server-sent events as (event, data) until `until`."""
    with client.stream("GET", run["events"], headers={"accept": "text/event-stream"}) as stream:
        name = ""
        for line in stream.iter_lines():
            if line.startswith("event:"):
                name = line.partition(":")[2].strip()
            elif line.startswith("data:"):
                data = json.loads(line.partition(":")[2].strip())
                yield name, data
                if name == until:
                    return


def test_the_worker_asks_for_approval_and_a_clarification_through_the_database(
    team: TeamWebServer,
) -> None:
    operator = httpx2.Client(base_url=team.base, timeout=20)
    assert operator.get(team.login_url()).status_code == 303
    page = operator.get("/", headers={"accept": "text/html"})
    found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert found
    csrf = {"x-csrf-token": found.group(1)}

    run = ask(operator, found.group(1), "Save a note on Apple")
    stream = events(operator, run)
    approval = next(data for name, data in stream if name == "approval")
    assert approval["tool"] == "write_file" and NOTE in json.dumps(approval["args"])
    assert approval["choices"] == ["once", "run", "always", "deny"]
    url = f"/runs/{run['run']}/approvals/{approval['id']}"
    assert operator.post(url, data={"answer": "always!"}, headers=csrf).status_code == 409
    assert operator.post(url, data={"answer": "once"}, headers=csrf).status_code == 200
    assert operator.post(url, data={"answer": "deny"}, headers=csrf).status_code == 409
    rest = list(stream)
    settled = next(data for name, data in rest if name == "approval_settled")
    assert settled["answer"] == "allow_once"
    assert any(name == "tool_end" and data["tool"] == "write_file" for name, data in rest)
    assert next(data for name, data in rest if name == "done")["status"] == "answered"
    assert (team.root / NOTE).read_text() == "AAPL FY2024\n"

    run = ask(operator, found.group(1), "Show Apple's margins")
    stream = events(operator, run)
    question = next(data for name, data in stream if name == "question")
    assert question["question"] == "Annual or quarterly figures?"
    url = f"/runs/{run['run']}/questions/{question['id']}"
    assert operator.post(url, data={"selected": "Quarterly"}, headers=csrf).status_code == 200
    done = next(data for name, data in stream if name == "done")
    assert "Quarterly" in done["html"]


def test_a_queued_question_streams_from_the_worker_and_cancel_reaches_it(
    team: TeamWebServer, postgres_url: str
) -> None:
    ana, csrf = log_in(team, "ana")
    run = ask(ana, csrf, "What was Apple's revenue in FY2024?")
    seen = list(events(ana, run))
    kinds = [name for name, _ in seen]
    # Queued, then the worker's run: a live tool row with its result, the answer, the end.
    logged = [(name, data) for name, data in seen if name not in ("answer", "end")]
    assert logged[0][0] == "note" and "worker" in logged[0][1]["text"]
    assert "started" in kinds and "tool_start" in kinds
    tool = next(data for name, data in seen if name == "tool_end")
    assert tool["tool"] == "income_statements" and "391035" in tool["result"].replace(",", "")
    answers = [data["html"] for name, data in seen if name == "answer"]
    assert any("391,035" in html for html in answers)
    done = next(data for name, data in seen if name == "done")
    assert done["status"] == "answered" and "391,035" in done["html"]
    assert done["session_id"] == run["session"]

    # The worker answered as ana, in her session: the page of the session shows the turn.
    session_page = ana.get(f"/sessions/{run['session']}", headers={"accept": "text/html"})
    assert session_page.status_code == 200 and "391,035" in session_page.text

    # A second web process (its own hub, nothing in memory) shows the same run from Postgres.
    from dexter.web.queued import QueuedRunHub

    async def elsewhere() -> list[dict[str, Any]]:
        hub = QueuedRunHub(team.state.runtime, postgres_url)
        try:
            live = await hub.find(run["run"])
            assert live is not None and live.principal_id == "web:ana"
            while not live.finished:
                await live.wait(len(live.log), live.text_version)
            return live.log
        finally:
            await hub.aclose()

    replayed = asyncio.run(elsewhere())
    assert [item["type"] for item in replayed] == [name for name, _ in logged]

    # Another user: 403 on the run's stream and on the session.
    bob, _ = log_in(team, "bob")
    assert bob.get(run["events"]).status_code == 403
    assert bob.get(f"/sessions/{run['session']}").status_code == 403

    # Cancel crosses processes: the worker stops the run mid-answer.
    SCRIPT.resume.clear()
    slow = ask(ana, csrf, "think slowly")
    stream = events(ana, slow)
    for name, data in stream:
        if name == "answer" and "Working on it" in data["html"]:
            break
    # One run at a time per session, whichever process is asked.
    again = ana.post(
        "/ask",
        data={"question": "hello", "session": slow["session"]},
        headers={"accept": "application/json", "x-csrf-token": csrf},
    )
    assert again.status_code == 409
    answer = ana.post(f"/runs/{slow['run']}/cancel", headers={"x-csrf-token": csrf})
    assert answer.json() == {"cancelled": True}
    rest = [name for name, _ in stream]
    SCRIPT.resume.set()
    assert "cancelled" in rest and "done" not in rest and rest[-1] == "end"
