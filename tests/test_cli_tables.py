"""Every figure of a table survives any terminal width, a pipe and a file."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from dexter.cli.data_render import statements_table
from dexter.cli.main import main
from dexter.cli.tables import Col, Figure, Grid, render
from dexter.data.models import IncomeStatement
from dexter.reports.model import fiscal_label
from tests.support.sec_mirror import Mirror, MirrorServer

_BASE = {"ticker", "report_period", "fiscal_period", "period", "currency", "accession_number"}


@pytest.fixture
def sec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MirrorServer]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_SEC_RATE_LIMIT", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    with MirrorServer(Mirror()) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        yield server


def _expected(field: str, value: float) -> str:
    """How a statement figure reads: USD millions, per-share in dollars, shares in millions."""
    if "per_share" in field or "per_common_share" in field:
        return f"{value:,.2f}"
    if "shares" in field:
        return f"{value / 1e6:,.1f}"
    return f"{value / 1e6:,.0f}"


def _income(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert main(["data", "income", "AAPL", "--json"]) == 0
    rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    assert rows and rows[0]["revenue"] == 416_161_000_000
    return rows


def _assert_whole(out: str, rows: list[dict[str, object]], width: int) -> None:
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= width
    for row in rows:
        assert fiscal_label(str(row["fiscal_period"]), str(row["period"])) in out
        for field, value in row.items():
            if field in _BASE or not isinstance(value, int | float) or isinstance(value, bool):
                continue
            figure = re.escape(_expected(field, value))
            assert re.search(rf"(?<![\d,.]){figure}(?![\d,.])", out), (field, value, width)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_no_income_figure_is_cut_at_any_width(
    sec: MirrorServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    width: int,
) -> None:
    rows = _income(capsys)
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["data", "income", "AAPL"]) == 0
    out = capsys.readouterr().out
    _assert_whole(out, rows, width)
    assert "416,161" in out and "7.46" in out


def test_no_figure_is_cut_when_piped_into_a_file(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = _income(capsys)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    target = tmp_path / "income.txt"
    with target.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "dexter.cli.main", "data", "income", "AAPL"],
            stdout=out,
            stderr=subprocess.PIPE,
            env=env,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    text = target.read_text()
    # No screen to fit: no width limit, so no label is hard-wrapped and no line is padded.
    _assert_whole(text, rows, 200)
    assert "│ Selling general and administrative expenses │" in text
    assert "\x1b[" not in text  # no colour codes in a file
    assert [line for line in text.splitlines() if line != line.rstrip()] == []


def test_csv_has_raw_numbers(sec: MirrorServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "income", "AAPL", "--limit", "2", "--csv"]) == 0
    table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert table[0] == ["line item", "FY2024", "FY2025"]  # oldest to newest, as on screen
    revenue = next(row for row in table if row[0] == "Revenue")
    assert revenue[1:] == ["391035000000", "416161000000"]


def test_many_periods_fold_onto_a_second_table() -> None:
    rows = [
        IncomeStatement(
            ticker="X",
            report_period=f"{2025 - i}-12-31",
            fiscal_period=f"{2025 - i}-FY",
            period="annual",
            currency="USD",
            revenue=123_456_789_000_000 + i,
            net_income=-9_876_543_000_000,
        )
        for i in range(6)
    ]
    console = Console(width=60, file=io.StringIO(), color_system=None)
    render(console, statements_table(rows, title="X — income statement"))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "(continued)" in out and "…" not in out
    assert out.count("123,456,789") == 6 and out.count("-9,876,543") == 6
    assert max(len(line) for line in out.splitlines()) <= 60


def test_too_narrow_for_columns_prints_each_row_whole() -> None:
    grid = Grid(
        title="wide",
        columns=[Col("Name", key=True), Col("Value", figure=True), Col("Id", whole=True)],
    )
    grid.add_row("Apple", Figure("12,345,678,901", 12345678901), "0000320193-25-000079")
    console = Console(width=30, file=io.StringIO(), color_system=None)
    render(console, grid)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "12,345,678,901" in out and "0000320193-25-000079" in out and "…" not in out


def test_brackets_in_cells_are_shown_not_read_as_markup() -> None:
    # A tool description citing [ref=e5], a question citing [S1], an XBRL label "[Member]".
    grid = Grid(title="[bold]t[/bold]", columns=[Col("[h]", key=True), Col("text")])
    grid.add_row("browser", "element refs like [ref=e5] and [S1]; [bold]x[/bold] [Member]")
    console = Console(width=200, file=io.StringIO(), color_system=None)
    render(console, grid)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "[ref=e5]" in out and "[S1]" in out and "[bold]x[/bold]" in out and "[Member]" in out
    assert "[bold]t[/bold]" in out and "[h]" in out


def test_filings_form_is_normalised(sec: MirrorServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "filings", "AAPL", "--form", "10k", "--limit", "2", "--json"]) == 0
    filings = json.loads(capsys.readouterr().out)
    assert len(filings) == 2 and {f["filing_type"] for f in filings} == {"10-K"}
