"""`dexter model three-statement`: linked statements built from the recorded SEC companyfacts
(../shared/fixtures/sec-mirror), recalculated by the `formulas` engine once for the module
(Tesla: debt, inventory and non-controlling interests all present); the other companies are
built without recalculation."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from dexter.data.router import DataRouter
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from dexter.workbooks.book import Book, address
from dexter.workbooks.history import (
    THREE_STATEMENT_LINES,
    THREE_STATEMENT_REQUIRED,
    History,
    annual_history,
)
from dexter.workbooks.three_statement import (
    ASSETS,
    CASH,
    CLAIMS,
    REV,
    Forecast,
    default_drivers,
    three_statement_workbook,
)
from dexter.workbooks.xlsx import to_xlsx
from tests.support.fixtures import companyfacts
from tests.support.sec_mirror import Mirror, MirrorServer, mirror_transport

CIKS = {"AAPL": "0000320193", "NVDA": "0001045810", "TSLA": "0001318605", "SNOW": "0001640147"}


def _history(ticker: str, tmp: Path) -> History:
    async def fetch() -> History:
        settings = DataSettings(cache_dir=tmp / "cache", sec_user_agent="T t@example.com")
        router = DataRouter([SecEdgarProvider(settings, transport=mirror_transport(Mirror()))])
        try:
            return await annual_history(
                router, ticker, 4, THREE_STATEMENT_LINES, THREE_STATEMENT_REQUIRED
            )
        finally:
            await router.aclose()

    companyfacts(CIKS[ticker])  # skips with the fetch_fixtures hint when absent
    return asyncio.run(fetch())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[History, Book, Forecast]]:
    out = {}
    for ticker in CIKS:
        history = _history(ticker, tmp_path_factory.mktemp(ticker))
        book, values = three_statement_workbook(history, default_drivers(history))
        out[ticker] = (history, book, values)
    return out


@pytest.fixture(scope="module")
def tesla(
    built: dict[str, tuple[History, Book, Forecast]], tmp_path_factory: pytest.TempPathFactory
) -> Any:
    formulas = pytest.importorskip("formulas")
    path = tmp_path_factory.mktemp("engine") / "tsla.xlsx"
    path.write_bytes(to_xlsx(built["TSLA"][1]))
    model = formulas.ExcelModel().loads(str(path)).finish()
    return model, model.calculate()


def _key(sheet: str, row: int, column: int) -> str:
    return f"'[tsla.xlsx]{sheet.upper()}'!{address(row, column, absolute=False)}"


def _value(solution: Any, sheet: str, row: int, column: int) -> Any:
    value = solution[_key(sheet, row, column)].value[0][0]
    return value.item() if hasattr(value, "item") else value


def test_forecast_balances_and_checks_are_true_for_every_company(
    built: dict[str, tuple[History, Book, Forecast]],
) -> None:
    for ticker, (_, book, values) in built.items():
        for assets, claims in zip(values.total_assets, values.total_claims, strict=True):
            assert assets == pytest.approx(claims, abs=0.5), ticker
        checks = book.sheet("Checks")
        results = [c.value for (r, col), c in checks.cells.items() if col == 1 and r > 2]
        assert results and all(v is True for v in results), ticker
        labels = [str(c.value) for (_, col), c in checks.cells.items() if col == 0]
        assert sum("(forecast) balances" in label for label in labels) == 5, ticker


def test_every_derived_cell_is_a_formula(
    built: dict[str, tuple[History, Book, Forecast]],
) -> None:
    for _, book, _ in built.values():
        model = book.sheet("Model")
        typed = [
            c for c in model.cells.values() if isinstance(c.value, int | float) and not c.formula
        ]
        assert len(typed) == 5 and all(c.style == "year" for c in typed)  # filed years' labels


def test_recalculated_workbook_equals_dexters_calculation_to_the_cent(
    built: dict[str, tuple[History, Book, Forecast]], tesla: Any
) -> None:
    _, book, values = built["TSLA"]
    _, solution = tesla
    checked = 0
    for sheet in book.sheets:
        for (row, column), cell in sheet.cells.items():
            if cell.formula is None:
                continue
            got = _value(solution, sheet.name, row, column)
            if isinstance(cell.value, bool):
                assert bool(got) is cell.value, (sheet.name, row, column, cell.formula)
            else:
                assert isinstance(cell.value, int | float)
                assert abs(got - cell.value) < 0.005, (sheet.name, row, column, cell.formula)
            checked += 1
    assert checked > 150
    assert _value(solution, "Checks", 1, 1) is True or _value(solution, "Checks", 1, 1) == 1
    last = 5 + 5  # five filed years (four growth rates), then five forecast years
    assert _value(solution, "Model", ASSETS, last) == pytest.approx(values.total_assets[-1])


def test_changing_growth_moves_revenue_and_the_model_still_balances(
    built: dict[str, tuple[History, Book, Forecast]], tesla: Any
) -> None:
    history, book, _ = built["TSLA"]
    model, _ = tesla
    cell = book.names["RevenueGrowthYear1"].split("!")[1]
    row = int(cell.split("$")[2]) - 1
    changed = model.calculate(inputs={_key("Assumptions", row, 1): 0.5})
    # Tesla FY2021 revenue 53,823 M (us-gaap:Revenues, 10-K 0000950170-22-000796) x 1.5.
    assert history.value("revenue", "2021-FY") == 53_823_000_000
    assert _value(changed, "Model", REV, 5) == 53_823_000_000
    assert _value(changed, "Model", REV, 6) == pytest.approx(80_734.5e6)
    for column in range(5, 11):
        assets = _value(changed, "Model", ASSETS, column)
        assert assets == pytest.approx(_value(changed, "Model", CLAIMS, column), abs=0.5)
    # The cash line follows (the default forecast grew 30% in year 1, not 50%).
    assert _value(changed, "Model", CASH, 6) != built["TSLA"][2].cash[0]
    assert bool(_value(changed, "Checks", 1, 1))


def test_cli_writes_the_three_statement_workbook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_HOME", "DEXTER_SEC_RATE_LIMIT"):
        monkeypatch.delenv(name, raising=False)
    companyfacts(CIKS["AAPL"])
    with MirrorServer(Mirror()) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        code = main(["model", "three-statement", "AAPL", "--years", "5", "-o", "aapl.xlsx"])
        assert code == 0
        assert "AAPL three statements, 2021-FY..2025-FY filed, 5 forecast years" in (
            capsys.readouterr().out
        )
        assert (tmp_path / "aapl.xlsx").read_bytes()[:2] == b"PK"
        assert main(["model", "three-statement", "AAPL", "--years", "2", "-o", "a.xlsx"]) == 2
        assert "--years must be 3 to 10" in capsys.readouterr().err
