"""`dexter model comps`: the four recorded companies (../shared/fixtures/sec-mirror) with given
prices, recalculated once by the `formulas` engine."""

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
from dexter.workbooks.comps import (
    COMPS_LINES,
    COMPS_REQUIRED,
    EV_EBITDA,
    Peer,
    PeerValues,
    comps_workbook,
)
from dexter.workbooks.history import History, annual_history
from dexter.workbooks.xlsx import to_xlsx
from tests.support.fixtures import companyfacts
from tests.support.sec_mirror import Mirror, MirrorServer, mirror_transport

CIKS = {"AAPL": "0000320193", "NVDA": "0001045810", "TSLA": "0001318605", "SNOW": "0001640147"}
PRICES = {"AAPL": 230.0, "NVDA": 180.0, "TSLA": 400.0, "SNOW": 170.0}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Book, list[PeerValues]]:
    for cik in CIKS.values():
        companyfacts(cik)  # skips with the fetch_fixtures hint when absent
    tmp = tmp_path_factory.mktemp("comps")

    async def fetch() -> list[History]:
        settings = DataSettings(cache_dir=tmp / "cache", sec_user_agent="T t@example.com")
        router = DataRouter([SecEdgarProvider(settings, transport=mirror_transport(Mirror()))])
        try:
            return [await annual_history(router, t, 1, COMPS_LINES, COMPS_REQUIRED) for t in CIKS]
        finally:
            await router.aclose()

    peers = [Peer(h, PRICES[h.ticker], "test") for h in asyncio.run(fetch())]
    return comps_workbook(peers)


@pytest.fixture(scope="module")
def solution(built: tuple[Book, list[PeerValues]], tmp_path_factory: pytest.TempPathFactory) -> Any:
    formulas = pytest.importorskip("formulas")
    path = tmp_path_factory.mktemp("engine") / "comps.xlsx"
    path.write_bytes(to_xlsx(built[0]))
    model = formulas.ExcelModel().loads(str(path)).finish()
    return model.calculate()


def _value(solution: Any, sheet: str, row: int, column: int) -> Any:
    value = solution[f"'[comps.xlsx]{sheet.upper()}'!{address(row, column, absolute=False)}"]
    got = value.value[0][0]
    return got.item() if hasattr(got, "item") else got


def test_multiples_hand_checked_for_apple(built: tuple[Book, list[PeerValues]]) -> None:
    apple = built[1][0]
    # FY2025 10-K: 14,773,260,000 shares x 230 = 3,397,849.8 M; debt 12,350 + 7,979 + 78,328 =
    # 98,657 M; cash 35,934 + 18,763 = 54,697 M; EV = 3,441,809.8 M. EBITDA = 133,050 + 11,698
    # = 144,748 M: EV/EBITDA 23.78; P/E = 3,397,849.8 / 112,010 = 30.33.
    assert apple.enterprise_value == pytest.approx(3_441_809.8e6)
    assert apple.ev_ebitda == pytest.approx(3_441_809.8 / 144_748)
    assert apple.pe == pytest.approx(3_397_849.8 / 112_010)
    snowflake = built[1][3]
    assert snowflake.ev_ebitda == "n/m" and snowflake.pe == "n/m"  # losses: not meaningful


def test_recalculated_workbook_equals_dexters_calculation(
    built: tuple[Book, list[PeerValues]], solution: Any
) -> None:
    checked = 0
    for sheet in built[0].sheets:
        for (row, column), cell in sheet.cells.items():
            if cell.formula is None:
                continue
            got = _value(solution, sheet.name, row, column)
            if isinstance(cell.value, bool):
                assert bool(got) is cell.value
            elif isinstance(cell.value, str):
                assert got == cell.value, (sheet.name, row, column)
            else:
                assert isinstance(cell.value, int | float)
                assert abs(got - cell.value) < 0.005, (sheet.name, row, column, cell.formula)
            checked += 1
    assert checked > 60
    # The median EV/EBITDA of the three meaningful ones (AAPL, NVDA, TSLA).
    ev_ebitda = [v.ev_ebitda for v in built[1] if isinstance(v.ev_ebitda, float)]
    assert _value(solution, "Comps", 3 + 4 + 1, EV_EBITDA) == pytest.approx(sorted(ev_ebitda)[1])


def test_inputs_are_values_with_sources_and_checks_true(
    built: tuple[Book, list[PeerValues]],
) -> None:
    book = built[0]
    assert all(c.formula is None for c in book.sheet("Inputs").cells.values())
    rows = {r for (r, _) in book.sheet("Inputs").cells if r >= 4}
    for row in rows:
        accession, url = (
            book.sheet("Inputs").at(row, 6).value,
            book.sheet("Inputs").at(row, 8).value,
        )
        assert isinstance(accession, str) and isinstance(url, str)
        assert accession.replace("-", "") in url
    checks = book.sheet("Checks")
    assert [c.value for (r, col), c in checks.cells.items() if col == 1 and r > 2]
    assert all(c.value is True for (r, col), c in checks.cells.items() if col == 1 and r != 2)


def test_cli_comps_and_a_bad_price(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_HOME", "DEXTER_SEC_RATE_LIMIT"):
        monkeypatch.delenv(name, raising=False)
    companyfacts(CIKS["AAPL"])
    with MirrorServer(Mirror()) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        argv = ["model", "comps", "AAPL", "NVDA", "--price", "AAPL=230", "--price", "nvda=180"]
        assert main([*argv, "-o", "c.xlsx"]) == 0
        assert "AAPL EV/EBITDA 23.8" in capsys.readouterr().out
        assert main(["model", "comps", "AAPL", "NVDA", "--price", "AAPL", "-o", "c.xlsx"]) == 2
        assert "TICKER=USD" in capsys.readouterr().err
