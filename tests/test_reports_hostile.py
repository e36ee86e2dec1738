"""Reports and exports of hostile research: a question, an answer, web page titles and filing data
carrying markup, links, local-file attachments, requests to internal addresses and spreadsheet
formulas. Every format shows them as text; nothing runs, loads, embeds or computes when a report
is opened or rendered; `-o` never writes through a symlink."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.figures.types import Figure, Verification
from dexter.reports.model import Report, Row, Source, Table
from dexter.reports.render import write_report
from dexter.store import SessionStore, open_store
from tests import test_cli_sessions
from tests.support.hostile import (
    FORMULAS,
    MD_LINK,
    SCRIPT,
    Listener,
    attachment,
    hostile_text,
    image,
    listening,
    live_markup,
    markdown_as_viewers_render_it,
)

RUN = "run-hostile-0001"
home = test_cli_sessions.home  # the fixture: a DEXTER_HOME of its own in tmp_path


@pytest.fixture
def listener() -> Iterator[Listener]:
    with listening() as server:
        yield server


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text("PRIVATE-KEY-MATERIAL\n")
    return path


def question(port: int, secret: Path) -> str:
    return f"{FORMULAS[0]} {hostile_text(port, str(secret))}"


def answer(port: int, secret: Path) -> str:
    return (
        f"Revenue rose [S1]. {hostile_text(port, str(secret))} "
        f"![chart](http://127.0.0.1:{port}/answer-image) <https://www.sec.gov/a>\n\n"
        "[ref]: javascript:alert(2)\n\nSee [ref], [S2] and [the filing](https://www.sec.gov/f).\n\n"
        "| Year | Revenue |\n|---|---|\n| FY2025 | $416.2B |\n"
    )


def sources(port: int, secret: Path) -> list[dict[str, str | None]]:
    labels = [
        (SCRIPT, "javascript:alert(1)"),
        (attachment(str(secret)), f"http://127.0.0.1:{port}/s2"),
        (image(port, "s3"), None),
        ("javascript:alert(4)", None),  # as a footnote line, a link definition in CommonMark
        (MD_LINK, "file:///etc/passwd"),
        *((formula, None) for formula in FORMULAS),
    ]
    return [{"id": f"S{n}", "label": label, "url": url} for n, (label, url) in enumerate(labels, 1)]


def seed_run(home: Path, port: int, secret: Path) -> None:
    """A stored answered turn and its scratchpad, as a research run leaves them."""
    with open_store(home) as store:
        sessions = SessionStore(store)
        session = sessions.create("openai:gpt-test", session_id="feedbeef")
        sessions.add_turn(
            session, RUN, question(port, secret), answer(port, secret), "answered", 1, 10.0
        )
    company = {
        "name": f"{SCRIPT} {image(port, 'company')} Corp $\\frac{{1}}{{$",
        "ticker": "@SUM(1)",
    }
    records = [
        {
            "ticker": "@SUM(1)",
            "report_period": end,
            "fiscal_period": fiscal,
            "period": "annual",
            "currency": MD_LINK,
            "revenue": revenue,
            "net_income": revenue / 4,
            "gross_profit": revenue / 2,
        }
        for end, fiscal, revenue in (("2024-09-28", "-2+3", 391e9), ("=1+2", "2025-FY", 416e9))
    ]
    data = {"company": company, "records": records, "period": "annual"}
    lines = [
        {"type": "tool_call", "tool": "income_statements", "data": data},
        {"type": "answer", "content": "", "status": "answered", "sources": sources(port, secret)},
    ]
    pad = home / "scratchpad" / f"{RUN}.jsonl"
    pad.parent.mkdir(parents=True, exist_ok=True)
    pad.write_text("".join(json.dumps(line) + "\n" for line in lines))


def hostile_checks(text: str, port: int, secret: Path) -> Verification:
    """A figure check whose sources quote hostile tool arguments and page text."""
    at = text.index("$416.2B")
    hostile = f"{FORMULAS[0]} {hostile_text(port, str(secret))}"
    return Verification(
        (
            Figure("$416.2B", 416.2e9, "USD", "verified", source=hostile, start=at, end=at + 7),
            Figure("Revenue", 1.0, "", "unsupported", source=hostile, start=0, end=7),
        )
    )


def hostile_report(port: int, secret: Path) -> Report:
    """The same run with hostile row labels too, which no stored run can produce."""
    table = Table(
        kind="income",
        company=f"{SCRIPT} Corp",
        ticker="=1+1",
        currency="+1",
        periods=("-2+3", "FY2025"),
        period_ends=("@SUM(1)", "2025-09-27"),
        rows=(
            Row("revenue", hostile_text(port, str(secret)), "money", (-2e9, 416e9)),
            Row("net_income", FORMULAS[0], "money", (None, 100e9)),
        ),
    )
    text = answer(port, secret)
    return Report(
        question=question(port, secret),
        answer=text,
        status="answered",
        model="openai:gpt-test",
        created_at="2026-01-01T00:00:00Z",
        session_id="feedbeef",
        run_id=RUN,
        sources=tuple(
            Source(str(s["id"]), str(s["label"]), s["url"]) for s in sources(port, secret)
        ),
        tables=(table,),
        verification=hostile_checks(text, port, secret),
    )


def assert_inert_html(html: str, port: int, secret: Path) -> None:
    problems, text = live_markup(html)
    assert problems == []
    # Shown to the reader as the text it is, not dropped.
    assert SCRIPT in text and attachment(str(secret)) in text and image(port) in text
    assert 'href="https://www.sec.gov/f"' in html  # a plain web link stays a link


def assert_inert_markdown(markdown: str, folder: Path) -> None:
    charts = tuple(f"{p.parent.name}/{p.name}" for p in sorted(folder.glob("*_charts/*.png")))
    for html in markdown_as_viewers_render_it(markdown):
        problems, text = live_markup(html, allowed_images=charts)
        assert problems == []
        assert SCRIPT in text and MD_LINK in text
        # The answer keeps its Markdown: its table and its plain web link still render.
        assert "<td>$416.2B</td>" in html and 'href="https://www.sec.gov/f"' in html


def assert_no_formulas(path: Path, expected_text: list[str]) -> None:
    import openpyxl

    book = openpyxl.load_workbook(path)
    cells = [cell for sheet in book.worksheets for row in sheet.iter_rows() for cell in row]
    assert [c.coordinate for c in cells if c.data_type == "f"] == []
    texts = [_decoded(c.value) if c.data_type == "s" else "" for c in cells]
    for wanted in expected_text:
        assert wanted in texts  # exactly as written, not computed or altered
    for cell, text in zip(cells, texts, strict=True):
        if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
            assert cell.quotePrefix, cell.coordinate  # stays text when edited, too
        if cell.hyperlink is not None:
            assert cell.hyperlink.target.startswith(("https://", "http://")), cell.hyperlink.target


def _decoded(value: str) -> str:
    # OOXML writes a carriage return as _x000D_, which Excel decodes and openpyxl leaves as is.
    return re.sub(r"_x([0-9A-F]{4})_", lambda m: chr(int(m.group(1), 16)), value)


def assert_pdf_embeds_nothing(path: Path) -> str:
    from pypdf import PdfReader

    reader = PdfReader(path)
    names = reader.trailer["/Root"].get("/Names")
    assert names is None or "/EmbeddedFiles" not in names.get_object()
    for page in reader.pages:
        for annotation in page.get("/Annots") or []:
            assert annotation.get_object().get("/Subtype") != "/FileAttachment"
    return "\n".join(page.extract_text() for page in reader.pages)


# --------------------------------------------------------------------------- `dexter report`


def reported(home: Path, listener: Listener, secret: Path, fmt: str) -> Path:
    """`dexter report RUN -o memo.FMT` of the stored hostile run; the file written."""
    seed_run(home, listener.port, secret)
    out = home.parent / f"memo.{fmt}"
    assert main(["report", RUN, "-o", str(out)]) == 0
    return out


def test_html_report_shows_hostile_text_as_text(
    home: Path, listener: Listener, secret: Path
) -> None:
    out = reported(home, listener, secret, "html")
    html = out.read_text()
    assert_inert_html(html, listener.port, secret)
    assert "Content-Security-Policy" in html  # a browser loads and runs nothing, whatever slips
    assert listener.hits == []


def test_pdf_report_loads_nothing_and_attaches_no_file(
    home: Path, listener: Listener, secret: Path
) -> None:
    out = reported(home, listener, secret, "pdf")
    text = assert_pdf_embeds_nothing(out)
    assert listener.hits == []  # no request to the internal address while rendering
    assert b"PRIVATE-KEY-MATERIAL" not in out.read_bytes()
    assert "<script>alert(1)</script>" in text.replace("\n", "")  # shown as text


def test_pdf_renderer_loads_nothing_even_from_raw_markup(
    tmp_path: Path, listener: Listener, secret: Path
) -> None:
    # The second wall: markup that reached the renderer still cannot fetch or attach anything.
    from dexter.reports.render import html_to_pdf

    raw = (
        f"<html><head>{attachment(str(secret))}"
        f"<link rel=stylesheet href=http://127.0.0.1:{listener.port}/css></head><body>"
        f"<p>hello</p>{image(listener.port)}<a rel=attachment href=file://{secret}>a</a>"
        f"<img src=file://{secret}><img src='data:image/gif;base64,"
        "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7'></body></html>"
    )
    out = tmp_path / "raw.pdf"
    out.write_bytes(html_to_pdf(raw))
    assert_pdf_embeds_nothing(out)
    assert listener.hits == []
    assert b"PRIVATE-KEY-MATERIAL" not in out.read_bytes()


def test_markdown_report_renders_no_live_markup_or_links(
    home: Path, listener: Listener, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = reported(home, listener, secret, "md")
    assert list((home.parent / "memo_charts").glob("*.png"))  # the chart survived a `$` title
    assert_inert_markdown(out.read_text(), home.parent)
    assert main(["report", RUN]) == 0  # to stdout, as a person reads it in a terminal
    assert_inert_markdown(capsys.readouterr().out, home.parent)


def test_xlsx_report_writes_every_text_as_text(
    home: Path, listener: Listener, secret: Path
) -> None:
    out = reported(home, listener, secret, "xlsx")
    heading = " ".join(question(listener.port, secret).split())[:87].rstrip() + "…"
    assert_no_formulas(out, [heading, question(listener.port, secret), *FORMULAS, "=1+2"])
    import openpyxl

    sheet = openpyxl.load_workbook(out)["@SUM(1) income"]
    revenue = next(row for row in sheet.iter_rows(values_only=True) if row[0] == "Revenue")
    assert revenue[-1] == pytest.approx(416000.0)  # figures stay numbers


@pytest.mark.parametrize("fmt", ["md", "html", "pdf", "xlsx"])
def test_hostile_table_labels_in_every_format(
    tmp_path: Path, listener: Listener, secret: Path, fmt: str
) -> None:
    report = hostile_report(listener.port, secret)
    out = tmp_path / f"memo.{fmt}"
    write_report(report, out, fmt)  # type: ignore[arg-type]
    if fmt == "md":
        assert_inert_markdown(out.read_text(), tmp_path)
    elif fmt == "html":
        assert_inert_html(out.read_text(), listener.port, secret)
    elif fmt == "pdf":
        text = assert_pdf_embeds_nothing(out)
        assert "<script>alert(1)</script> Corp" in text
    else:
        assert_no_formulas(out, [FORMULAS[0], "-2+3", "@SUM(1)", "+1 millions"])
        import openpyxl

        sheet = openpyxl.load_workbook(out).worksheets[1]
        values = {row[0]: row for row in sheet.iter_rows(values_only=True) if row[0]}
        assert values[hostile_text(listener.port, str(secret))][2] == pytest.approx(-2000.0)
    assert listener.hits == []


# --------------------------------------------------------------------------- CSV


def test_sessions_csv_writes_formula_prefixes_as_text(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(home) as store:
        sessions = SessionStore(store)
        for n, formula in enumerate(FORMULAS):
            session = sessions.create("openai:gpt-test", session_id=f"0000000{n}")
            sessions.add_turn(session, f"r{n}", f"{formula} findme", "-", "answered", 1, 1.0)
    for command in (["sessions", "list", "--csv"], ["sessions", "search", "findme", "--csv"]):
        assert main(command) == 0
        rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
        assert len(rows) == len(FORMULAS)
        texts = {row["Title" if "list" in command else "Match"] for row in rows}
        # make_title folds whitespace, so "\t=1" is titled "=1": still a formula, still quoted.
        expected = {"'" + " ".join(f"{f} findme".split()) for f in FORMULAS}
        assert texts == expected
        assert {row["Turns"] for row in rows} == {"1"}  # numbers stay numbers


def test_csv_keeps_numbers_and_quotes_only_formula_text() -> None:
    from dexter.cli.tables import Col, Figure, Grid, write_csv

    grid = Grid("t", [Col("name"), Col("value", figure=True)])
    grid.add_row("-2+3", Figure("-2.5", -2.5))
    grid.add_row("Apple", Figure("+1", "+1"))
    grid.add_row("@SUM(1)", Figure("1", 1))
    out = io.StringIO()
    write_csv(grid, out)
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [
        ["name", "value"],
        ["'-2+3", "-2.5"],
        ["Apple", "'+1"],
        ["'@SUM(1)", "1"],
    ]


# --------------------------------------------------------------------------- -o PATH


@pytest.mark.parametrize("fmt", ["md", "html", "pdf", "xlsx"])
def test_report_refuses_a_symlink_at_the_target(
    home: Path,
    listener: Listener,
    secret: Path,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
) -> None:
    seed_run(home, listener.port, secret)
    link = home.parent / f"memo.{fmt}"
    link.symlink_to(secret)
    assert main(["report", RUN, "-o", str(link)]) == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and "Traceback" not in err
    assert secret.read_text() == "PRIVATE-KEY-MATERIAL\n" and link.is_symlink()
    assert not (home.parent / "memo_charts").exists()  # nothing written beside it either


def test_markdown_report_refuses_a_symlinked_chart_folder(
    home: Path, listener: Listener, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_run(home, listener.port, secret)
    elsewhere = home.parent / "elsewhere"
    elsewhere.mkdir()
    (home.parent / "memo_charts").symlink_to(elsewhere)
    assert main(["report", RUN, "-o", str(home.parent / "memo.md")]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == [] and not (home.parent / "memo.md").exists()


def test_ask_output_to_a_symlink_fails_before_the_run(
    tmp_path: Path,
    secret: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    (tmp_path / "memo.pdf").symlink_to(secret)
    assert main(["ask", "-o", str(tmp_path / "memo.pdf"), "q"]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert secret.read_text() == "PRIVATE-KEY-MATERIAL\n"


# --------------------------------------------------------------------------- eval reports


def test_eval_reports_show_hostile_answers_and_sources_as_text(
    tmp_path: Path, listener: Listener, secret: Path
) -> None:
    from dexter.evals.report import build_report, to_html, to_markdown
    from dexter.evals.results import QuestionResult, RunInfo

    run = RunInfo(
        "ev1", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "finance.csv", "abc",
        "openai:gpt-test", ["openai:gpt-judge"], {}, ["q1"], "finished",
    )  # fmt: skip
    result = QuestionResult(
        question_id="q1",
        position=0,
        category=SCRIPT,
        question=question(listener.port, secret),
        reference="-",
        status="scored",
        score=1.0,
        answer=answer(listener.port, secret),
        verdicts=[
            {"operator": "correctness", "passed": True, "criterion": SCRIPT, "rationale": MD_LINK}
        ],
        sources=[dict(s) for s in sources(listener.port, secret)],
        error=image(listener.port, "error"),
    )
    report = build_report(run, [result])
    assert_inert_markdown(to_markdown(report), tmp_path)
    problems, text = live_markup(to_html(report))
    assert problems == [] and SCRIPT in text


def test_a_citation_inside_a_link_title_keeps_the_html_report_well_formed() -> None:
    from html.parser import HTMLParser

    from dexter.reports.render import _answer_html

    report = Report(
        question="q",
        answer='Revenue rose [S1]. [10-K](https://www.sec.gov/f "as filed [S2]")',
        status="answered",
        model="openai:gpt-test",
        created_at="2026-01-01T00:00:00Z",
        session_id="feedbeef",
        run_id=RUN,
        sources=(),
        tables=(),
        verification=None,
    )
    html = _answer_html(report)
    found: list[tuple[str, str | None]] = []

    class Attributes(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.extend(attrs)

    Attributes().feed(html)
    # A citation link written into the title would end the attribute early.
    assert ("title", "as filed [S2]") in found, html
    assert 'href="#src-S1"' in html
