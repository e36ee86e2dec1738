"""Defects found reviewing `dexter web`: each test shows what a user or an attacker could do
before its fix. Requests go to the app in process, with a scripted model."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.models.scripted import Reply, ScriptedModel
from dexter.store.sessions import SessionStore
from dexter.web.accounts import load_accounts
from dexter.web.app import create_app
from dexter.web.state import WebState
from tests.support.web import MAIN, PASSWORDS, ROUTER, web_settings
from tests.test_web_auth import as_user, csrf_of


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[tuple[httpx2.AsyncClient, WebState]]:
    home = tmp_path / ".dexter"
    web_settings(home)
    environ = {
        "DEXTER_HOME": str(home),
        "OPENAI_API_KEY": "sk-test-123456",
        "DEXTER_MEMORY": "off",
        "DEXTER_ROUTER_MODEL": ROUTER,
    }
    settings = load_settings(cwd=tmp_path, environ=environ)
    runtime = open_runtime(settings)
    runtime._clients[runtime.resolve(MAIN).spec] = ScriptedModel(
        [Reply(text="Margins rose.")] * 20, name="web-test"
    )
    runtime._clients[runtime.resolve(ROUTER).spec] = ScriptedModel([Reply(text="[]")] * 20)
    state = WebState(runtime, load_accounts(settings), cookie="dexter_web_1", model=MAIN)
    transport = httpx2.ASGITransport(app=create_app(state))
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client, state
    await state.hub.aclose()
    state.runtime.close_local()


async def test_a_double_submitted_question_starts_one_run_not_two(app: tuple) -> None:
    client, state = app
    session = SessionStore(state.runtime.store).create("web-test", principal_id="web:ana")
    assert (await as_user(client, "ana", PASSWORDS["ana"])).status_code == 303
    csrf = csrf_of((await client.get("/", headers={"accept": "text/html"})).text)
    form = {"question": "Margins?", "session": session, "csrf": csrf}
    headers = {"accept": "application/json"}
    first, second = await asyncio.gather(
        client.post("/ask", data=form, headers=headers),
        client.post("/ask", data=form, headers=headers),
    )
    assert sorted([first.status_code, second.status_code]) == [200, 409]
    assert len([r for r in state.hub.runs.values() if r.session_id == session]) == 1


async def test_a_users_search_finds_their_sessions_however_many_others_match(
    app: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, state = app
    sessions = SessionStore(state.runtime.store)
    anas = sessions.create("web-test", "Ana on margins", principal_id="web:ana")
    sessions.add_turn(anas, "run-a", "Ana on margins", "Margins rose.", "answered", 1, 5.0)
    for n in range(3):  # newer matches of another user's
        bobs = sessions.create("web-test", f"Bob on margins {n}", principal_id="web:bob")
        sessions.add_turn(bobs, f"run-b{n}", "Bob on margins", "Fell.", "answered", 1, 5.0)
    # Stands for the hundreds of other users' sessions a team's database holds.
    monkeypatch.setattr("dexter.web.views.sessions.SEARCHED", 2, raising=False)
    assert (await as_user(client, "ana", PASSWORDS["ana"])).status_code == 303
    listing = await client.get("/sessions?q=margins")
    assert "Ana on margins" in listing.text and "Bob on margins" not in listing.text


async def test_password_guesses_sent_all_at_once_are_throttled_too(app: tuple) -> None:
    client, _ = app
    form = await client.get("/login")
    found = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert found
    token = found.group(1)
    # Each guess carries the same form cookie (a fresh client per guess keeps no jar).
    cookie = {"cookie": f"dexter_login_form={token}"}

    async def guess(password: str) -> int:
        async with httpx2.AsyncClient(
            transport=client._transport, base_url="http://testserver"
        ) as one:
            sent = {"csrf": token, "name": "ana", "password": password}
            return (await one.post("/login", data=sent, headers=cookie)).status_code

    answers = await asyncio.gather(*[guess(f"guess-{n}") for n in range(12)])
    # Five tries per name and address, as one at a time; the rest wait, never checked.
    assert answers.count(401) == 5 and answers.count(429) == 7, answers
    assert await guess(PASSWORDS["ana"]) == 429


async def test_the_printed_link_works_on_any_loopback_address(tmp_path: Path) -> None:
    from dexter.cli.web_command import bind, build

    home = tmp_path / ".dexter"
    web_settings(home)
    environ = {"DEXTER_HOME": str(home), "OPENAI_API_KEY": "sk-test-123456"}
    settings = load_settings(cwd=tmp_path, environ=environ)
    sock = bind("127.0.0.2", 0)  # `dexter web --host 127.0.0.2`: all of 127/8 is this machine
    served = build(settings, load_accounts(settings), sock, model="openai:gpt-4o-mini")
    try:
        transport = httpx2.ASGITransport(app=served.app)
        async with httpx2.AsyncClient(transport=transport, base_url=served.base) as client:
            assert (await client.get("/login")).status_code == 200, served.base
        async with httpx2.AsyncClient(transport=transport, base_url="http://evil.example") as c:
            assert (await c.get("/login")).status_code == 421
    finally:
        sock.close()
        served.state.runtime.close_local()


def test_a_citation_inside_a_link_title_does_not_break_the_answers_html() -> None:
    from html.parser import HTMLParser

    from dexter.web.render import markdown_html

    html = markdown_html('Revenue rose [S1]. [10-K](https://sec.gov/x "as filed [S2]")')

    found: list[tuple[str, str | None]] = []

    class Attributes(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.extend(attrs)

    Attributes().feed(html)
    # Before: the citation's own <a href="…"> was written inside the title and ended it early.
    assert ("title", "as filed [S2]") in found, html
    assert 'href="#src-S1"' in html


async def test_the_answer_being_written_is_rendered_off_the_loop_once_per_change(
    app: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long answer's Markdown takes tens of milliseconds to render: on the loop, once per
    # change per open page, it stalled every other page and stream of the server.
    from dexter.web import runs

    rendered: list[tuple[str, bool]] = []

    def recording(text: str) -> str:
        try:
            asyncio.get_running_loop()
            rendered.append((text, True))
        except RuntimeError:
            rendered.append((text, False))
        return f"<p>{len(text)}</p>"

    monkeypatch.setattr(runs, "markdown_html", recording)
    client, state = app
    assert (await as_user(client, "ana", PASSWORDS["ana"])).status_code == 303
    csrf = csrf_of((await client.get("/", headers={"accept": "text/html"})).text)
    started = await client.post(
        "/ask", data={"question": "Margins?", "csrf": csrf}, headers={"accept": "application/json"}
    )
    live = state.hub.get(started.json()["run"])
    assert live.task is not None
    await live.task
    pages = await asyncio.gather(*[client.get(started.json()["events"]) for _ in range(3)])
    assert all("event: end" in page.text for page in pages)
    assert rendered and not any(on_loop for _, on_loop in rendered)
    # Three pages following the run: the final text was rendered once, not once for each.
    assert len(rendered) == 1, rendered


async def test_a_login_survives_another_local_apps_cookie(app: tuple) -> None:
    # Cookies are not kept apart by port: every app a developer runs on localhost sends its own
    # to dexter web too, and many hold JSON or spaces, which the strict parser gave up on.
    client, state = app
    found = await client.get(f"/login?token={state.token.value}")
    assert found.status_code == 303
    login = client.cookies["dexter_web_1"]
    async with httpx2.AsyncClient(transport=client._transport, base_url="http://testserver") as c:
        for other in ('prefs={"theme":"dark"}', "greeting=hello world", "filters[0]=10-K"):
            cookie = {"cookie": f"{other}; dexter_web_1={login}"}
            assert (await c.get("/sessions", headers=cookie)).status_code == 200, other
