"""Screenshots of `dexter web`'s main views for the README: docs/images/web-*.png at 1280x800
and 390x844 (phone).

The app is served as the browser tests serve it (tests/support/web.py: the real app and runtime,
a scripted model, the recorded SEC mirror on 127.0.0.1), so the pages show real filing data:
Apple's FY2024 10-K and its XBRL statements. The one alert on the jobs page is written through
the cron store, as the cron service would after a run (no cron service runs here).

Run: DEXTER_FIXTURES=../shared/fixtures uv run python scripts/web_screenshots.py
"""

from __future__ import annotations

import io
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.web import Script, tool_results, web_server

from dexter.models.scripted import Reply
from dexter.models.types import ModelRequest

OUT = Path(__file__).resolve().parents[1] / "docs" / "images"
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
# The sources the run registers, in order: the FY2025 10-K (S1) and the FY2023 10-K (S2, for
# an older comparative) from the statements, then the FY2024 10-K's MD&A text (S3).
QUESTION = "How did Apple's revenue and gross margin change from FY2023 to FY2024?"
# Services were 24.6% of FY2024 revenue (96,169 of 391,035): the 28% below is wrong on purpose,
# so the pictures show how the figure check marks what the data does not support.
ANSWER = """Apple's revenue grew 2.0% in FY2024, to $391,035 million from $383,285 million [S1], \
while Services reached 28% of revenue and the gross margin widened [S1].

| | FY2023 | FY2024 |
|---|---|---|
| Revenue ($M) | 383,285 | 391,035 |
| Gross margin | 44.1% | 46.2% |

- **Revenue** was **$391,035 million**, up from $383,285 million [S1].
- **Total gross margin percentage** was 46.2%, up from 44.1% [S3]; Apple credits cost savings \
and a higher mix of Services [S3].
"""


def research(request: ModelRequest) -> Reply:
    done = tool_results(request)
    if not done:
        statements = {"company": "AAPL", "period": "annual", "limit": 3}
        section = {
            "company": "AAPL",
            "form": "10-K",
            "item": "7",
            "year": 2024,
            "focus": "gross margin percentage",
        }
        return Reply(tool_calls=[("income_statements", statements), ("filing_section", section)])
    return Reply(text=ANSWER)


SCRIPT = Script(
    [
        ("revenue", research),
        ("cash", lambda r: Reply(text="Apple held $65.2 billion in cash and securities.")),
        ("dividend", lambda r: Reply(text="Apple raised its quarterly dividend to $0.25.")),
    ]
)


def shrink(png: bytes) -> bytes:
    """A palette PNG: screenshots of flat pages lose nothing visible at 256 colours."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    out = io.BytesIO()
    image.quantize(256, method=Image.Quantize.MEDIANCUT).save(out, "PNG", optimize=True)
    return out.getvalue()


def main() -> None:
    from playwright.sync_api import expect, sync_playwright

    from dexter.cron.jobs import create_job
    from dexter.cron.schedule import parse_every
    from dexter.cron.store import CronStore
    from dexter.tools.web.browser import find_chromium

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as root, web_server(Path(root), SCRIPT) as server:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=find_chromium(), args=["--headless", "--no-sandbox"]
            )
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            page.goto(server.login_url())
            # Two earlier sessions for the list, then the question shown, in a session of its own.
            for questions in (("Apple's cash position?", "Apple's latest dividend?"), (QUESTION,)):
                page.goto(f"{server.base}/")
                for question in questions:
                    label = "Your question" if question == questions[0] else "Ask a follow-up"
                    page.get_by_label(label).fill(question)
                    page.get_by_role("button", name="Ask", exact=True).click()
                    expect(page.locator("#live")).to_have_attribute("data-finished", "1")
            expect(page.locator("#live aside.evidence")).to_be_visible()
            live_url = page.url
            session = live_url.split("?")[0]
            page.locator("#live .answer a.cite").nth(3).click()  # the margin, in the 10-K text
            source_url = page.url
            now = datetime.now(UTC)
            cron = CronStore(server.state.runtime.store)
            job = create_job(
                cron,
                name="Apple 8-K watch",
                message="Did Apple file a new 8-K? Summarise what it says about results.",
                schedule=parse_every("1d", anchor=now),
                now=now,
            )
            cron.add_alert(
                job=job,
                run_id=None,
                text="Apple filed an 8-K on 2024-10-31: Q4 FY2024 revenue $94.9 billion [S1].",
                target="outbox",
                created_at=now,
                delivered=True,
            )
            views = {
                "ask": live_url,
                "source": source_url,
                "sessions": f"{server.base}/sessions",
                "jobs": f"{server.base}/jobs",
                "usage": f"{server.base}/usage",
            }
            for size, (width, height) in SIZES.items():
                page.set_viewport_size({"width": width, "height": height})
                for name, url in views.items():
                    page.goto(url)
                    if name == "ask":
                        page.goto(session)  # the answer as it stands once streamed
                    path = OUT / f"web-{name}-{size}.png"
                    path.write_bytes(shrink(page.screenshot()))
                    print(f"{path.relative_to(OUT.parent.parent)}: {path.stat().st_size:,} B")
            browser.close()


if __name__ == "__main__":
    main()
