"""`dexter web`'s views in real Chromium: a citation opens the filing at its highlighted passage
(and the XBRL facts it came from), the run's tables and charts beside the answer, jobs created
and paused, usage by day and model, the phone layout and keyboard focus, an axe-core check of
every main view, and the OpenBB endpoint mounted outside the login gate.

One server (scripted model, the recorded SEC mirror on 127.0.0.1) and one browser for the module.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.models.scripted import Reply
from dexter.models.types import ModelRequest
from dexter.tools.web.browser import find_chromium, playwright_installed
from tests.support.web import Script, WebServer, chromium, tool_results, web_server

if not playwright_installed() or find_chromium() is None:
    pytest.skip("no Chromium and Playwright here", allow_module_level=True)

from playwright.sync_api import Browser, BrowserContext, Page, expect

# One worker runs the module (tests/conftest.py's _ONE_WORKER_MODULES): its server and browser
# start once.

AXE = Path(__file__).parent / "support" / "vendor" / "axe.min.js"
MARGIN = "Apple's total gross margin percentage was **46.2%** in 2024, up from 44.1% [S1]."
REVENUE = "Apple's revenue in FY2024 was **$391,035 million** [S1]."


def margin(request: ModelRequest) -> Reply:
    if not tool_results(request):
        args = {
            "company": "AAPL",
            "form": "10-K",
            "item": "7",
            "year": 2024,
            "focus": "gross margin percentage",
        }
        return Reply(tool_calls=[("filing_section", args)])
    return Reply(text=MARGIN)


def revenue(request: ModelRequest) -> Reply:
    if not tool_results(request):
        args = {"company": "AAPL", "period": "annual", "limit": 3}
        return Reply(tool_calls=[("income_statements", args)])
    return Reply(text=REVENUE)


SCRIPT = Script([("margin", margin), ("revenue", revenue)])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    with web_server(tmp_path_factory.mktemp("web-views"), SCRIPT) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def _login(browser: Browser, server: WebServer, **options: Any) -> BrowserContext:
    context = browser.new_context(**options)
    page = context.new_page()
    page.goto(server.login_url())
    expect(page).to_have_url(f"{server.base}/")
    page.close()
    return context


@pytest.fixture(scope="module")
def desk(browser: Browser, server: WebServer) -> Iterator[BrowserContext]:
    context = _login(browser, server, viewport={"width": 1280, "height": 800})
    yield context
    context.close()


@pytest.fixture(scope="module")
def phone(browser: Browser, server: WebServer) -> Iterator[BrowserContext]:
    context = _login(
        browser, server, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    yield context
    context.close()


@pytest.fixture
def page(desk: BrowserContext) -> Iterator[Page]:
    opened = desk.new_page()
    opened.set_default_timeout(10_000)
    yield opened
    opened.close()


def ask(page: Page, server: WebServer, question: str) -> None:
    page.goto(f"{server.base}/")
    page.get_by_label("Your question").fill(question)
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.locator("#live")).to_have_attribute("data-finished", "1")


@pytest.fixture(scope="module")
def answered(desk: BrowserContext, server: WebServer) -> dict[str, str]:
    """Two answered questions (a filing passage, statement figures): their session pages."""
    page = desk.new_page()
    urls = {}
    for name, question in (
        ("margin", "Apple's gross margin in 2024?"),
        ("revenue", "Apple's revenue in FY2024?"),
    ):
        ask(page, server, question)
        urls[name] = page.url.split("?")[0]
    page.close()
    return urls


def axe_violations(page: Page) -> list[str]:
    """Serious and critical axe-core violations on the page, one line each."""
    # Evaluated through the debugging protocol: the app's CSP (script-src 'self') would refuse
    # it as a script tag, rightly.
    page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate("async () => (await axe.run(document)).violations")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in result
        if v["impact"] in ("serious", "critical")
    ]


def test_a_citation_opens_the_filing_at_the_highlighted_passage(
    page: Page, server: WebServer, answered: dict[str, str]
) -> None:
    page.goto(answered["margin"])
    page.locator("article.turn .answer a.cite").first.click()
    expect(page).to_have_url(re.compile(r"/sources/[^/]+/S1\?c=0#passage$"))
    expect(page.get_by_role("heading", level=1)).to_contain_text("0000320193-24-000123")
    passage = page.locator("#passage")
    expect(passage).to_have_class("hit")
    expect(passage.locator("mark").first).to_have_text("46.2")
    expect(passage).to_contain_text("Total gross margin percentage")
    expect(passage).to_be_in_viewport()
    expect(page.locator("blockquote")).to_contain_text("46.2%")  # the sentence that cites it
    # Filing text is shown as text: nothing from the filing runs or styles the page.
    assert page.locator(".document script, .document style, .document img").count() == 0


def test_a_cited_figure_opens_its_xbrl_fact_and_the_tables_sit_beside_the_answer(
    page: Page, server: WebServer, answered: dict[str, str]
) -> None:
    page.goto(answered["revenue"])
    aside = page.locator("article.turn aside.evidence")
    expect(aside.locator("h3").first).to_have_text("Apple Inc.: Income statement")
    point = aside.locator("svg.chart circle title", has_text="Revenue, FY2024")
    expect(point).to_have_text(re.compile(r"Revenue, FY2024: 391,035 USD millions"))
    # Beside, not under: the tables' column starts right of the answer on a laptop screen.
    answer_box = page.locator("article.turn .answer").bounding_box()
    aside_box = aside.bounding_box()
    assert answer_box and aside_box and aside_box["x"] > answer_box["x"] + answer_box["width"]
    page.locator("article.turn .answer a.cite").first.click()
    fact = page.locator("#passage")
    expect(fact).to_contain_text("Revenue")
    expect(fact.locator("mark")).to_have_text(["Revenue", "391,035 (millions)"])
    expect(fact).to_contain_text("us-gaap:")
    expect(fact).to_contain_text("FY2024")
    expect(fact.get_by_role("link", name=re.compile("^10-K filed"))).to_have_attribute(
        "href", re.compile(r"^https://www\.sec\.gov/")
    )


def test_tables_and_charts_appear_beside_a_streamed_answer(page: Page, server: WebServer) -> None:
    ask(page, server, "Apple's revenue again?")
    chart = page.locator("#live aside.evidence svg.chart").first
    expect(chart).to_have_attribute("role", "img")
    expect(page.locator("#live .answer a.cite")).to_have_attribute(
        "href", re.compile(r"^/sources/.+/S1\?c=0#passage$")
    )


def test_create_pause_and_resume_a_job(page: Page, server: WebServer) -> None:
    page.goto(f"{server.base}/jobs")
    page.get_by_label("Name").fill("AAPL filings")
    page.get_by_label("What to check or research").fill("Any new Apple 8-K? Summarise it.")
    page.get_by_label("Every (e.g. 1h, 30m, 1d)").check()
    page.get_by_label("When").fill("2x")
    page.get_by_role("button", name="Add job").click()
    expect(page.get_by_role("alert")).to_contain_text("2x")  # the cron API's own refusal
    expect(page.get_by_label("Name")).to_have_value("AAPL filings")  # nothing typed is lost
    page.get_by_label("When").fill("1h")
    page.get_by_role("button", name="Add job").click()
    job = page.locator("li.job", has=page.get_by_role("heading", name="AAPL filings"))
    expect(job).to_contain_text("every 1h")
    expect(job).to_contain_text("outbox")
    job.get_by_role("button", name="Pause AAPL filings").click()
    expect(job.locator("dd").nth(1)).to_have_text("paused")
    job.get_by_role("button", name="Resume AAPL filings").click()
    expect(job.get_by_role("button", name="Pause AAPL filings")).to_be_visible()
    expect(job).to_contain_text("No alerts yet.")


def test_usage_by_day_and_model(page: Page, server: WebServer, answered: dict[str, str]) -> None:
    page.goto(f"{server.base}/usage")
    expect(page.locator(".totals")).to_contain_text("model calls")
    by_model = page.get_by_role("region", name="By model")
    expect(by_model.get_by_role("row", name=re.compile("web-test"))).to_be_visible()
    by_day = page.get_by_role("region", name="By day (UTC)")
    expect(by_day.locator("tbody th").first).to_have_text(re.compile(r"\d{4}-\d{2}-\d{2}"))
    expect(page.get_by_role("region", name="By principal")).to_contain_text("operator")


def test_the_phone_layout_and_the_keyboard(
    phone: BrowserContext, server: WebServer, answered: dict[str, str]
) -> None:
    page = phone.new_page()
    page.goto(answered["margin"])
    page.locator("article.turn .answer a.cite").first.click()
    expect(page.locator("#passage")).to_be_in_viewport()
    source = page.url
    for url in (
        f"{server.base}/",
        answered["revenue"],
        source,
        f"{server.base}/jobs",
        f"{server.base}/usage",
    ):
        page.goto(url)
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= 390, f"{url} scrolls sideways on a phone ({wide} px)"
    page.goto(answered["revenue"])
    # Under the answer on a phone, not squeezed beside it.
    answer_box = page.locator("article.turn .answer").bounding_box()
    aside_box = page.locator("article.turn aside.evidence").bounding_box()
    assert answer_box and aside_box and aside_box["width"] > 300
    # Keyboard: the skip link first, then the navigation, each with a visible focus ring.
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Dexter")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Ask", exact=True)).to_be_focused()
    assert axe_violations(page) == []
    page.close()


def test_axe_finds_no_serious_problem_on_any_main_view(
    page: Page, server: WebServer, answered: dict[str, str]
) -> None:
    views = [
        f"{server.base}/",
        answered["margin"],
        answered["revenue"],
        f"{server.base}/sessions",
        f"{server.base}/jobs",
        f"{server.base}/usage",
    ]
    found: dict[str, list[str]] = {}
    for url in views:
        page.goto(url)
        found[url] = axe_violations(page)
    page.goto(answered["margin"])
    page.locator("article.turn .answer a.cite").first.click()
    found["source"] = axe_violations(page)
    assert found == {url: [] for url in found}
