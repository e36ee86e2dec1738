"""Reports from a stored research run: a scripted `dexter ask` over the recorded SEC data, then
`dexter report` as Markdown (with chart images), HTML, PDF and XLSX, and `ask --output`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.reports.build import read_scratchpad, tables_from_calls
from dexter.reports.charts import charts_for, terminal_chart
from tests.support.sec_mirror import Mirror, MirrorServer
from tests.support.wire_server import WireServer
from tests.test_research_e2e import offers_tool, text_reply, tool_calls_reply

QUESTION = "How did Apple's revenue and net margin change over the last four fiscal years?"
# With headings of its own, as models write them: a report must put them below its sections.
ANSWER = (
    "## Summary\n\nApple's revenue rose to $416.2B in FY2025 from $391.0B in FY2024 [S1], and "
    "its net margin stayed near 24-27% [S1].\n\n### By year\n\n| Year | Revenue |\n|---|---|\n"
    "| FY2025 | $416.2B |"
)


@pytest.fixture(scope="module")
def researched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # One scripted research run serves every test here: each only reads what it stored.
    tmp_path = tmp_path_factory.mktemp("research")
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from _research(tmp_path, monkeypatch)


def _research(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    from tests.support.wire_server import running_server

    server = running_server()
    wire_server = next(server)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_DUCKDUCKGO_BASE_URL", "http://127.0.0.1:9")
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_MODEL", "DEXTER_ROUTER_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    monkeypatch.setenv("DEXTER_FINANCE_TOOLS", "routed")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    with MirrorServer(Mirror()) as sec:
        for key, value in sec.env().items():
            monkeypatch.setenv(key, value)
        script_apple_research(wire_server, ANSWER)
        out = tmp_path / "memo.md"
        assert main(["ask", "--model", "openai:gpt-test", "--output", str(out), QUESTION]) == 0
    yield tmp_path
    server.close()


def script_apple_research(wire_server: WireServer, answer: str) -> None:
    """The model's side of a run that fetches Apple's last four annual income statements
    (through the finance router) and answers `answer`."""
    wire_server.push(
        tool_calls_reply(("c1", "get_financials", {"query": "Apple income, 4 fiscal years"}))
    )
    wire_server.route(
        offers_tool("income_statements"),
        tool_calls_reply(
            ("r1", "income_statements", {"company": "AAPL", "period": "annual", "limit": 4})
        ),
    )
    wire_server.push(text_reply(answer))


def run_id(home: Path) -> str:
    (pad,) = (home / ".dexter" / "scratchpad").glob("*.jsonl")
    return pad.stem


def test_ask_output_writes_a_markdown_report_with_tables_sources_and_charts(
    researched: Path,
) -> None:
    text = (researched / "memo.md").read_text()
    assert QUESTION in text and "$416.2B in FY2025" in text
    assert "[^S1]" in text and "[^S1]: SEC EDGAR" in text  # footnoted, with its filing
    assert "| Revenue | 394,328 | 383,285 | 391,035 | 416,161 | USD millions |" in text
    charts = sorted((researched / "memo_charts").glob("*.png"))
    assert charts and all(p.read_bytes().startswith(b"\x89PNG") for p in charts)
    assert "![AAPL: Revenue" in text


def test_html_report_parses_and_holds_figures_charts_and_links(
    researched: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = researched / "memo.html"
    assert main(["report", run_id(researched), "-o", str(out)]) == 0
    html = out.read_text()
    HTMLParser().feed(html)  # parses
    assert "<svg" in html and "416,161" in html and 'href="#src-S1"' in html
    assert "https://www.sec.gov/Archives/" in html
    assert "<table>" in html  # the answer's own markdown table, rendered
    assert "<dt>Figures to</dt><dd>2025-09-27</dd>" in html  # how fresh the figures are
    assert "400,000" in html  # chart axes read as money, not 400000
    assert "Wrote" in capsys.readouterr().err


def test_xlsx_report_has_numeric_cells_units_and_sources(researched: Path) -> None:
    import openpyxl

    out = researched / "memo.xlsx"
    assert main(["report", run_id(researched), "--format", "xlsx", "-o", str(out)]) == 0
    book = openpyxl.load_workbook(out)
    assert "Sources" in book.sheetnames and "Report" in book.sheetnames
    sheet = book[next(n for n in book.sheetnames if "income" in n)]
    rows = {row[0]: row for row in sheet.iter_rows(values_only=True) if row[0]}
    assert rows["Line"][-1] == "FY2025"
    revenue = rows["Revenue"]
    assert revenue[1] == "USD millions" and revenue[-1] == pytest.approx(416161.0)
    assert isinstance(revenue[-1], int | float)  # a real number, not text
    sources = list(book["Sources"].iter_rows(values_only=True))
    assert sources[1][0] == "S1" and "SEC EDGAR" in sources[1][1]


def test_pdf_report_has_pages_numbers_and_the_figures(researched: Path) -> None:
    from pypdf import PdfReader

    out = researched / "memo.pdf"
    assert main(["report", run_id(researched), "-o", str(out)]) == 0
    reader = PdfReader(out)
    text = "\n".join(page.extract_text() for page in reader.pages)
    assert 2 <= len(reader.pages) <= 4
    assert "416,161" in text and "Page 1 of" in text and QUESTION[:30] in text
    # The statement table flows on from the answer on page 1, rather than page 1 ending half
    # empty before a chart that cannot be split.
    first = reader.pages[0].extract_text()
    assert "Apple Inc.: Income statement" in first and "394,328" in first


def test_report_of_a_session_id_and_bad_references(
    researched: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sessions", "list", "--json"]) == 0
    session = json.loads(capsys.readouterr().out)[0]["id"]
    assert main(["report", session[:8]]) == 0
    assert QUESTION in capsys.readouterr().out
    assert main(["report", "nope-nope"]) == 2
    assert "No session" in capsys.readouterr().err
    assert main(["report", session, "-o", str(researched / "x.docx")]) == 2


def test_terminal_chart_fits_80_columns_with_every_figure(researched: Path) -> None:
    pad = researched / ".dexter" / "scratchpad" / f"{run_id(researched)}.jsonl"
    (table,) = tables_from_calls(read_scratchpad(pad))
    lines = terminal_chart(charts_for(table)[0], width=80)
    assert all(len(line) <= 80 for line in lines)
    assert any(line.rstrip().endswith("416,161") for line in lines)


def test_ask_output_to_an_unwritable_folder_fails_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    assert main(["ask", "-o", str(tmp_path / "missing" / "memo.pdf"), "q"]) == 2
    assert "no tokens are spent" in capsys.readouterr().err


def test_report_to_a_missing_folder_creates_no_folder(
    researched: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report -o` (and `/export`) used to create every missing folder on the way to the file."""
    target = researched / "no-such" / "deeper" / "memo.md"
    assert main(["report", run_id(researched), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"the folder {target.parent} does not exist" in err
    assert not (researched / "no-such").exists()


def test_writing_a_report_shows_progress_only_on_a_terminal(
    researched: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PDF takes seconds to lay out; a terminal used to see nothing until "Wrote"."""
    from rich.console import Console

    out = researched / "progress.html"
    assert main(["report", run_id(researched), "-o", str(out)]) == 0
    piped = capsys.readouterr().err
    assert "writing" not in piped and piped.startswith("Wrote")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr(Console, "is_terminal", property(lambda self: True))
    assert main(["report", run_id(researched), "-o", str(out)]) == 0
    shown = capsys.readouterr().err
    assert f"writing {out}" in shown
    assert shown.index(f"writing {out}") < shown.index("Wrote")


# A demanding new user's reading: the answer's headings under the report's, charts titled once
# and drawn from zero, whole millions in XLSX, each period citing its own filings, and an as-of
# date earlier than the figures never stamped silently.


def _report(home: Path, name: str, *extra: str) -> Path:
    out = home / name
    assert main(["report", run_id(home), "-o", str(out), *extra]) == 0
    return out


def test_the_answers_headings_sit_below_the_reports_sections(researched: Path) -> None:
    markdown = (researched / "memo.md").read_text()
    answer = markdown[markdown.index("## Answer") : markdown.index("## Apple Inc.")]
    assert "\n### Summary\n" in answer and "\n#### By year\n" in answer
    assert "\n## Summary" not in answer
    html = _report(researched, "memo.html").read_text()
    assert "<h3>Summary</h3>" in html and "<h4>By year</h4>" in html
    assert "<h2>Summary</h2>" not in html


def test_chart_titles_are_not_repeated_as_captions(researched: Path) -> None:
    html = _report(researched, "memo.html").read_text()
    assert html.count("<svg") == 3 and "<figcaption" not in html


def test_chart_value_axes_start_at_zero(researched: Path) -> None:
    import matplotlib.pyplot as plt

    from dexter.reports.charts import _figure

    pad = researched / ".dexter" / "scratchpad" / f"{run_id(researched)}.jsonl"
    (table,) = tables_from_calls(read_scratchpad(pad))
    eps = next(c for c in charts_for(table) if "EPS" in c.title)
    figure = _figure(eps)
    try:
        low, high = figure.axes[0].get_ylim()
    finally:
        plt.close(figure)
    assert low == 0 and high >= 7.46  # 6.08 -> 7.46 drawn as the 23% rise it is


def test_xlsx_millions_are_whole_like_the_tables(researched: Path) -> None:
    import openpyxl

    book = openpyxl.load_workbook(_report(researched, "memo.xlsx"))
    sheet = book[next(n for n in book.sheetnames if "income" in n)]
    rows = {row[0].value: row for row in sheet.iter_rows() if row[0].value}
    revenue = rows["Revenue"]
    assert revenue[-1].value == pytest.approx(416161.0)
    assert revenue[-1].number_format == "#,##0"
    assert rows["EPS, diluted"][-1].number_format == "0.00"


def test_each_period_cites_the_filings_its_own_figures_came_from(researched: Path) -> None:
    markdown = (researched / "memo.md").read_text()
    assert "- FY2022: SEC EDGAR 10-K filed 2024-11-01, acc. 0000320193-24-000123" in markdown
    assert "- FY2025: SEC EDGAR 10-K filed 2025-10-31, acc. 0000320193-25-000079" in markdown
    html = _report(researched, "memo.html").read_text()
    assert "<strong>FY2022</strong>" in html and "0000320193-24-000123" in html
    import openpyxl

    book = openpyxl.load_workbook(_report(researched, "memo.xlsx"))
    sheet = book[next(n for n in book.sheetnames if "income" in n)]
    filed = next(row for row in sheet.iter_rows(values_only=True) if row[0] == "Filed in")
    assert "0000320193-24-000123" in str(filed[2]) and "0000320193-25-000079" in str(filed[-1])


def test_an_as_of_date_earlier_than_the_figures_is_warned_about(
    researched: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", run_id(researched), "--as-of", "2020-01-01"]) == 0
    captured = capsys.readouterr()
    assert "warning" in captured.err and "periods to 2025-09-27" in captured.err
    assert "2020-01-01 (stated on request; the figures below are later" in captured.out
    with pytest.raises(SystemExit):
        main(["report", run_id(researched), "--as-of", "2025-13-01"])
    assert "month must be in 1..12" in capsys.readouterr().err
