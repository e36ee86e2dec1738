"""`dexter model dcf`: a DCF workbook with live formulas, built from the recorded SEC
companyfacts (../shared/fixtures/sec-mirror) and recalculated by the `formulas` engine.

The Apple workbook is built and recalculated once for the module (the engine takes seconds to
load a workbook); the other companies are built without recalculation."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from dexter.data.router import DataRouter
from dexter.data.sec.facts import fact_series
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from dexter.workbooks.book import Book, address
from dexter.workbooks.dcf import DcfValues, dcf_workbook, default_assumptions
from dexter.workbooks.history import History, annual_history
from dexter.workbooks.xlsx import to_xlsx
from tests.support.fixtures import companyfacts
from tests.support.sec_mirror import Mirror, MirrorServer, mirror_transport

CIKS = {"AAPL": "0000320193", "NVDA": "0001045810", "TSLA": "0001318605", "SNOW": "0001640147"}
PRICE = 200.0


def _history(ticker: str, tmp: Path) -> History:
    async def fetch() -> History:
        settings = DataSettings(cache_dir=tmp / "cache", sec_user_agent="T t@example.com")
        router = DataRouter([SecEdgarProvider(settings, transport=mirror_transport(Mirror()))])
        try:
            return await annual_history(router, ticker, 4)
        finally:
            await router.aclose()

    companyfacts(CIKS[ticker])  # skips with the fetch_fixtures hint when absent
    return asyncio.run(fetch())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[History, Book, DcfValues]]:
    out = {}
    for ticker in CIKS:
        history = _history(ticker, tmp_path_factory.mktemp(ticker))
        book, values = dcf_workbook(history, default_assumptions(history, PRICE, "test price"))
        out[ticker] = (history, book, values)
    return out


class Recalculated:
    """The Apple workbook loaded into the formula engine once; `cell` reads a recalculated value."""

    def __init__(self, data: bytes, folder: Path) -> None:
        import formulas

        path = folder / "aapl.xlsx"
        path.write_bytes(data)
        self.model = formulas.ExcelModel().loads(str(path)).finish()
        self.solution = self.model.calculate()

    @staticmethod
    def key(sheet: str, row: int, column: int) -> str:
        return f"'[aapl.xlsx]{sheet.upper()}'!{address(row, column, absolute=False)}"

    def cell(self, sheet: str, row: int, column: int, solution: Any = None) -> Any:
        value = (solution or self.solution)[self.key(sheet, row, column)].value[0][0]
        return value.item() if hasattr(value, "item") else value

    def recalculate(self, changes: dict[tuple[str, int, int], float]) -> Any:
        inputs = {self.key(s, r, c): v for (s, r, c), v in changes.items()}
        return self.model.calculate(inputs=inputs)


@pytest.fixture(scope="module")
def apple(
    built: dict[str, tuple[History, Book, DcfValues]], tmp_path_factory: pytest.TempPathFactory
) -> Recalculated:
    pytest.importorskip("formulas")
    return Recalculated(to_xlsx(built["AAPL"][1]), tmp_path_factory.mktemp("engine"))


def _named(book: Book, name: str) -> tuple[str, int, int]:
    target = book.names[name]  # "'DCF'!$B$40"
    sheet, cell = target.split("!")
    letters = "".join(ch for ch in cell if ch.isalpha())
    row = int("".join(ch for ch in cell if ch.isdigit())) - 1
    column = 0
    for ch in letters:
        column = column * 26 + ord(ch) - 64
    return sheet.strip("'"), row, column - 1


def test_every_derived_cell_is_a_formula_and_inputs_are_values(
    built: dict[str, tuple[History, Book, DcfValues]],
) -> None:
    for _, book, _ in built.values():
        dcf = book.sheet("DCF")
        numbers = [c for c in dcf.cells.values() if isinstance(c.value, int | float)]
        # Only the filed years' labels are typed; everything else on the DCF sheet is derived.
        typed = [c for c in numbers if c.formula is None]
        assert all(c.style == "year" for c in typed) and len(typed) == 5
        assert all(
            c.formula for c in book.sheet("Checks").cells.values() if c.value in (True, False)
        )
        inputs = book.sheet("Inputs").cells.values()
        assert all(c.formula is None for c in inputs)
        assumed = [
            c for c in book.sheet("Assumptions").cells.values() if c.style.startswith("input")
        ]
        assert assumed and all(c.formula is None for c in assumed)


def test_no_macros_links_or_volatile_functions(
    built: dict[str, tuple[History, Book, DcfValues]],
) -> None:
    import zipfile

    data = to_xlsx(built["AAPL"][1])
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert not any("vbaProject" in n or "externalLink" in n for n in names)
    formulas = [c.formula or "" for s in built["AAPL"][1].sheets for c in s.cells.values()]
    for volatile in ("NOW(", "TODAY(", "RAND", "OFFSET(", "INDIRECT("):
        assert not any(volatile in f for f in formulas)
    assert not any("[" in f for f in formulas)  # no reference to another workbook


def test_recalculated_workbook_equals_dexters_calculation_to_the_cent(
    built: dict[str, tuple[History, Book, DcfValues]], apple: Recalculated
) -> None:
    _, book, values = built["AAPL"]
    checked = 0
    for sheet in book.sheets:
        for (row, column), cell in sheet.cells.items():
            if cell.formula is None:
                continue
            got = apple.cell(sheet.name, row, column)
            if isinstance(cell.value, bool):
                assert got is True or got == cell.value
            else:
                assert isinstance(cell.value, int | float)
                assert abs(got - cell.value) < 0.005, (sheet.name, row, column, cell.formula)
            checked += 1
    assert checked > 100
    assert values.per_share == pytest.approx(apple.cell(*_named(book, "ValuePerShare")), abs=0.005)


def test_changing_inputs_moves_the_value_as_hand_checked(
    built: dict[str, tuple[History, Book, DcfValues]], apple: Recalculated
) -> None:
    _, book, _ = built["AAPL"]
    changes = {_named(book, f"RevenueGrowthYear{t}"): 0.0 for t in range(1, 6)}
    changes |= {
        _named(book, "EbitMargin"): 0.30,
        _named(book, "TaxRate"): 0.20,
        _named(book, "DaPercent"): 0.03,
        _named(book, "CapexPercent"): 0.03,
        _named(book, "NwcPercent"): 0.0,
        _named(book, "RiskFree"): 0.05,
        _named(book, "Beta"): 1.0,
        _named(book, "EquityPremium"): 0.05,
        _named(book, "CostOfDebt"): 0.125,
        _named(book, "TerminalGrowth"): 0.0,
    }
    solution = apple.recalculate(changes)
    # No growth: FCF = 416,161 M (FY2025 revenue) x (0.30 x (1 - 0.20) + 0.03 - 0.03) =
    # 99,878.64 M a year. Cost of equity 5% + 1 x 5% = 10% = after-tax cost of debt
    # 12.5% x 0.8, so WACC is 10% whatever the weights, and five years plus a zero-growth
    # terminal value are the perpetuity 99,878.64 / 0.10 = 998,786.4 M. Plus cash 35,934 and
    # short-term investments 18,763, less debt 12,350 + 7,979 + 78,328 = 98,657:
    # equity 954,826.4 M over 14,773,260,000 shares = 64.632 USD.
    assert apple.cell(*_named(book, "WACC"), solution) == pytest.approx(0.10)
    ev = apple.cell(*_named(book, "EnterpriseValue"), solution)
    assert ev == pytest.approx(998_786.4e6, abs=0.01)
    assert apple.cell(*_named(book, "ValuePerShare"), solution) == pytest.approx(64.63207, abs=1e-5)


def test_every_input_resolves_to_a_filed_fact(
    built: dict[str, tuple[History, Book, DcfValues]],
) -> None:
    for ticker, (history, _, _) in built.items():
        facts = companyfacts(CIKS[ticker])
        for fact in history.facts:
            assert fact.url.startswith("https://www.sec.gov/Archives/edgar/data/")
            assert fact.accession.replace("-", "") in fact.url
            if fact.concept.startswith("computed:"):
                # A rule that is not a plain sum (Tesla's 2017 debt) names its concepts.
                for name in ("us-gaap:DebtCurrent", "us-gaap:CapitalLeaseObligationsNoncurrent"):
                    assert name in fact.concept and fact_series(facts, name)
                continue
            points = fact_series(facts, fact.concept)
            assert any(
                p.end == fact.period_end
                and p.value == fact.value
                and p.accession_number == fact.accession
                for p in points
            ) or _filed_in(facts, fact.concept, fact.period_end, fact.value, fact.accession), fact


def _filed_in(facts: dict[str, Any], concept: str, end: str, value: float, acc: str) -> bool:
    """The raw companyfacts entry (fact_series keeps one filing per value)."""
    taxonomy, name = concept.split(":")
    for unit in facts["facts"][taxonomy][name]["units"].values():
        for raw in unit:
            # A cover-page count (dei:) is dated when counted, after the period end.
            dated = raw["end"] == end or taxonomy == "dei"
            if dated and raw["val"] == value and raw["accn"] == acc:
                return True
    return False


def test_checks_sheet_is_all_true(built: dict[str, tuple[History, Book, DcfValues]]) -> None:
    for ticker, (_, book, _) in built.items():
        checks = book.sheet("Checks")
        results = [c.value for (r, col), c in checks.cells.items() if col == 1 and r > 2]
        assert results and all(v is True for v in results), ticker
        assert checks.at(1, 1).value is True
        ties = [
            c.value
            for (r, col), c in checks.cells.items()
            if col == 0 and "Cash ties" in str(c.value)
        ]
        if ticker != "TSLA":  # Tesla's ending cash excludes restricted cash; said as a note
            assert ties, ticker


def test_recalculated_checks_are_true(apple: Recalculated, built: Any) -> None:
    assert apple.cell("Checks", 1, 1) is True or apple.cell("Checks", 1, 1) == 1


def test_cli_writes_the_workbook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_HOME", "DEXTER_SEC_RATE_LIMIT"):
        monkeypatch.delenv(name, raising=False)
    companyfacts(CIKS["NVDA"])
    with MirrorServer(Mirror()) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        assert main(["model", "dcf", "NVDA", "--price", "180", "-o", "nvda.xlsx"]) == 0
        out = capsys.readouterr().out
        assert "NVDA DCF, 2022-FY..2026-FY filed, 5 forecast years" in out
        assert (tmp_path / "nvda.xlsx").read_bytes()[:2] == b"PK"
        assert main(["model", "dcf", "NVDA", "--price", "180", "-o", "nvda.csv"]) == 2
        assert "xlsx" in capsys.readouterr().err
        assert main(["model", "dcf", "NVDA", "--price", "180", "-o", "no/such/x.xlsx"]) == 1
        assert "does not exist" in capsys.readouterr().err
        assert main(["model", "dcf", "NVDAX", "--price", "180", "-o", "x.xlsx"]) == 2
        assert "NVDAX" in capsys.readouterr().err and not (tmp_path / "x.xlsx").exists()
