"""`dexter web` in real Chromium: log in with the printed link, ask and watch the answer stream
with a live tool row, approve a write, export a PDF, resume a session; another user gets 403 on
the first one's session; a POST without the CSRF token is refused.

One server (scripted model, the recorded SEC mirror on 127.0.0.1) and one browser serve the
whole module; each test has its own page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.models.scripted import Reply
from dexter.models.types import ModelRequest, UserMessage
from dexter.tools.web.browser import find_chromium, playwright_installed
from tests.support.web import (
    PASSWORDS,
    PAUSE,
    Script,
    WebServer,
    chromium,
    tool_results,
    web_server,
)

if not playwright_installed() or find_chromium() is None:
    pytest.skip("no Chromium and Playwright here", allow_module_level=True)

from playwright.sync_api import Browser, Page, expect

# One worker runs the module (tests/conftest.py's _ONE_WORKER_MODULES): its server and browser
# start once.
REVENUE = ("income_statements", {"company": "AAPL", "period": "annual", "limit": 2})
ANSWER_START = "Apple's revenue in FY2024 was **$391,035 million** [S1]."
ANSWER_END = " It was <b>not</b> a loss."
NOTE = "notes/aapl.md"


def revenue(request: ModelRequest) -> Reply:
    if not tool_results(request):
        return Reply(tool_calls=[REVENUE])
    return Reply(text=ANSWER_START + PAUSE + ANSWER_END)


def save_note(request: ModelRequest) -> Reply:
    if not tool_results(request):
        return Reply(tool_calls=[("write_file", {"path": NOTE, "content": "AAPL FY2024\n"})])
    return Reply(text="Saved the note.")


def follow_up(request: ModelRequest) -> Reply:
    earlier = [m.content for m in request.messages if isinstance(m, UserMessage)]
    return Reply(text=f"Earlier you asked: {earlier[0]}")


def clarify(request: ModelRequest) -> Reply:
    if not tool_results(request):
        options = [{"label": "Annual"}, {"label": "Quarterly"}]
        question = {"question": "Annual or quarterly figures?", "options": options}
        return Reply(tool_calls=[("ask_user_question", question)])
    return Reply(text=f"You chose: {tool_results(request)[0].content}")


def slow(request: ModelRequest) -> Reply:
    return Reply(text="Working on it" + PAUSE + " and done.")


SCRIPT = Script(
    [
        ("margins", clarify),
        ("slowly", slow),
        ("revenue", revenue),
        ("note", save_note),
        ("remind me", follow_up),
        ("hello", lambda request: Reply(text="Hello there.")),
    ]
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    with web_server(tmp_path_factory.mktemp("web"), SCRIPT) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def page(browser: Browser, server: WebServer) -> Iterator[Page]:
    """The operator's page, logged in with the printed link; shared by the module's tests (a
    page is a renderer process: cheaper to navigate than to start)."""
    context = browser.new_context(accept_downloads=True)
    opened = context.new_page()
    opened.set_default_timeout(10_000)
    opened.goto(server.login_url())
    expect(opened).to_have_url(f"{server.base}/")
    yield opened
    context.close()


def ask(page: Page, question: str) -> None:
    page.get_by_label(re.compile("Your question|Ask a follow-up")).fill(question)
    page.get_by_role("button", name="Ask", exact=True).click()


def finished(page: Page) -> None:
    expect(page.locator("#live")).to_have_attribute("data-finished", "1")


def log_in(browser: Browser, server: WebServer, name: str) -> Page:
    page = browser.new_context().new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{server.base}/sessions")  # not logged in: sent to the login page
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password").fill(PASSWORDS[name])
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{server.base}/sessions")
    return page


def test_ask_and_watch_the_answer_stream(page: Page, server: WebServer) -> None:
    SCRIPT.resume.clear()
    page.goto(f"{server.base}/")
    ask(page, "What was Apple's revenue in FY2024?")
    live = page.locator("#live")
    row = live.locator("li.tool", has_text="income_statements")
    expect(row).to_be_visible()
    # Half the answer is on the page while the model is still writing the rest.
    expect(live.locator(".answer strong")).to_have_text("$391,035 million")
    expect(live).to_have_attribute("aria-busy", "true")
    expect(live.locator(".answer")).not_to_contain_text("not")
    SCRIPT.resume.set()
    finished(page)
    expect(page.get_by_role("status")).to_have_text("Answer ready.")  # what a screen reader hears
    expect(live.locator(".answer")).to_contain_text("It was <b>not</b> a loss.")  # shown, not run
    expect(live.locator(".answer b")).to_have_count(0)
    # The verifier found the figure in the statements the tool fetched.
    expect(live.locator(".answer .fig.verified")).to_have_text("$391,035 million")
    expect(live.locator(".after .figures")).to_contain_text("1 figure checked")
    expect(live.locator(".after .sources")).to_contain_text("S1")
    row.locator("summary").click()
    expect(row.locator("pre.args")).to_contain_text('"company": "AAPL"')
    expect(row.locator("pre.result")).to_contain_text("391")
    expect(page).to_have_url(re.compile(r"/sessions/[0-9a-f]{8}\?run="))
    expect(live.locator(".exports a")).to_have_text(["Markdown", "HTML", "PDF", "Excel"])
    # Reopened, the session shows the same answer, its tool call and its sources.
    page.reload()
    turn = page.locator("article.turn")
    expect(turn.locator("li.tool")).to_contain_text("income_statements")
    expect(turn.locator(".answer .fig.verified")).to_have_text("$391,035 million")
    # The citation opens its source's page (tests/test_web_views.py follows it there).
    cite = turn.locator(".answer a.cite")
    expect(cite).to_have_attribute("href", re.compile(r"^/sources/[^/]+/S1\?c=0#passage$"))
    expect(turn.locator(".sources")).to_contain_text("[S1] SEC EDGAR 10-K")


def test_approve_a_write(page: Page, server: WebServer) -> None:
    page.goto(f"{server.base}/")
    ask(page, "Save a note on Apple")
    dialog = page.get_by_role("group", name="Allow write_file?")
    expect(dialog).to_contain_text(NOTE)
    expect(dialog.get_by_role("button", name="Deny")).to_be_visible()
    expect(dialog.get_by_role("button", name="Allow for this run")).to_be_visible()
    dialog.get_by_role("button", name="Allow once").click()
    finished(page)
    expect(page.locator("#live li.tool.done", has_text="write_file")).to_be_visible()
    expect(page.locator("#live .answer")).to_have_text("Saved the note.")
    assert (server.root / NOTE).read_text() == "AAPL FY2024\n"


def test_resume_a_session_and_export_a_pdf(page: Page, server: WebServer) -> None:
    page.goto(f"{server.base}/")
    ask(page, "hello from the first visit")
    finished(page)
    page.goto(f"{server.base}/sessions")
    page.get_by_role("link", name="hello from the first visit").click()
    expect(page.locator("article.turn .answer")).to_have_text("Hello there.")
    ask(page, "remind me what I asked")
    finished(page)
    expect(page.locator("#live .answer")).to_have_text(
        "Earlier you asked: hello from the first visit"
    )
    page.reload()
    turns = page.locator("article.turn")
    expect(turns.locator("h2")).to_have_text(
        ["hello from the first visit", "remind me what I asked"]
    )
    # Any answer exports; a PDF of one without tables costs no charts.
    with page.expect_download() as download:
        turns.first.get_by_role("link", name="PDF").click()
    assert re.fullmatch(r"dexter-report-\w{8}\.pdf", download.value.suggested_filename)
    assert Path(download.value.path()).read_bytes()[:5] == b"%PDF-"


def test_another_user_gets_403_on_the_first_users_session(
    browser: Browser, server: WebServer
) -> None:
    ana = log_in(browser, server, "ana")
    ana.goto(f"{server.base}/")
    ask(ana, "hello, I am Ana")
    finished(ana)
    session_url = ana.url.split("?")[0]
    run = ana.locator("#live").get_attribute("data-run")
    bob = log_in(browser, server, "bob")
    response = bob.goto(session_url)
    assert response is not None and response.status == 403
    expect(bob.get_by_role("heading", level=1)).to_have_text("This belongs to another user.")
    events = bob.request.get(f"{server.base}/runs/{run}/events")
    assert events.status == 403
    bob.goto(f"{server.base}/sessions")
    expect(bob.get_by_text("hello, I am Ana")).to_have_count(0)
    ana.context.close()
    bob.context.close()


def test_a_post_without_the_csrf_token_is_refused(page: Page, server: WebServer) -> None:
    page.goto(f"{server.base}/sessions")
    refused = page.request.post(f"{server.base}/ask", form={"question": "hello"})
    assert refused.status == 403
    assert "security token" in json.loads(refused.text())["error"]
    token = page.locator('meta[name="csrf-token"]').get_attribute("content") or ""
    taken = page.request.post(
        f"{server.base}/ask", form={"question": " "}, headers={"x-csrf-token": token}
    )
    assert taken.status == 400  # past the check: the view refused the empty question


def test_a_clarifying_question_is_answered_on_the_page(page: Page, server: WebServer) -> None:
    page.goto(f"{server.base}/")
    ask(page, "Show Apple's margins")
    question = page.get_by_role("group", name="Annual or quarterly figures?")
    question.get_by_label("Quarterly").check()
    page.get_by_role("button", name="Answer").click()
    finished(page)
    expect(page.locator("#live .answer")).to_contain_text("Quarterly")


def test_cancel_stops_the_run(page: Page, server: WebServer) -> None:
    SCRIPT.resume.clear()
    page.goto(f"{server.base}/")
    ask(page, "think slowly")
    expect(page.locator("#live .answer")).to_have_text("Working on it")
    page.get_by_role("button", name="Cancel").click()
    finished(page)
    expect(page.locator("#live .tools")).to_contain_text("Cancelled.")
    expect(page.get_by_role("button", name="Cancel")).to_be_hidden()
    SCRIPT.resume.set()  # let the model's paused stream end; nothing reads it any more
