"""EU issuers' ESEF annual reports from filings.xbrl.org, end to end: the data layer, the router,
`dexter data income|balance|cashflow|filings`, and the get_financials tool.

The index responses are real recordings (../shared/fixtures/nonus/filings.xbrl.org). The
xBRL-JSON reports are NOT: no real one is in the fixtures, so the ASML report
(tests/data/esef/asml-2022-built-from-spec.json) and the small UPM/KONE reports are built by hand
from XBRL International's published xBRL-JSON 1.0 specification. Their figures are test values
modelled on the companies' accounts, not recorded ones.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.data.errors import NotFound, Unavailable, UpstreamError
from dexter.data.esef.names import is_lei, parse_esef_name
from dexter.data.esef.provider import EsefProvider
from dexter.data.esef.report import read_report
from dexter.data.router import DataRouter
from dexter.data.settings import DataSettings
from dexter.models.scripted import ScriptedModel, calls
from dexter.tools.base import ToolContext
from dexter.tools.finance.datacalls import data_call_tools
from dexter.tools.finance.routed import GetFinancials, RoutedArgs
from tests.support.esef import (
    ASML,
    ASML_REPORT,
    BASE,
    CREDIT_SUISSE,
    KONE,
    ORIOLA,
    UPM,
    EsefServer,
    Routes,
    recorded,
    recorded_leis,
    recorded_routes,
    recorded_url,
    standard_routes,
)

ASML_JSON = f"{BASE}/{ASML}/2022-12-31/ESEF/NL/0/asml-2022-12-31-en.json"


async def _no_wait(_: float) -> None:
    return None


def provider(tmp_path: Path, routes: Routes) -> EsefProvider:
    settings = DataSettings(cache_dir=tmp_path / "cache", esef_rate=1000.0)
    return EsefProvider(settings, transport=routes.transport(), sleep=_no_wait)


@pytest.fixture
def routes() -> Routes:
    return standard_routes()


@pytest.fixture
def esef(tmp_path: Path, routes: Routes) -> EsefProvider:
    return provider(tmp_path, routes)


# -- naming a company -------------------------------------------------------------------------


def test_an_lei_is_recognised_by_its_check_digits() -> None:
    assert is_lei(ASML) and is_lei(CREDIT_SUISSE) and is_lei("31570010000000004460")
    assert not is_lei(ASML[:-1] + "8")  # one digit off: a typo, not an issuer
    assert not is_lei("AAPL") and not is_lei("320193")
    assert parse_esef_name("AAPL") is None
    named = parse_esef_name("esef:kone@fi")
    assert named is not None and (named.name, named.country) == ("kone", "FI")
    with pytest.raises(ValueError, match="esef:kone@FI"):
        parse_esef_name("esef:kone")


# -- the report ----------------------------------------------------------------------------------


def test_report_keeps_plain_ifrs_facts_and_reads_midnight_as_the_day_before() -> None:
    facts = read_report(json.loads(ASML_REPORT.read_text()), url=ASML_JSON)
    revenue = [f for f in facts if f.concept == "Revenue"]
    # The product line's revenue (a dimensional fact) is gone; both years and the rounded
    # duplicate remain.
    assert sorted(f.value for f in revenue) == [18_611_000_000, 21_173_000_000, 21_173_400_000]
    assert all(f.value != 15_430_900_000 for f in revenue)
    current = next(f for f in revenue if f.decimals == -5 and f.value == 21_173_400_000)
    assert (current.start.isoformat() if current.start else None, current.end.isoformat()) == (
        "2022-01-01",
        "2022-12-31",
    )
    assert current.unit == "EUR"
    assert not any(f.concept.startswith("NameOfReporting") for f in facts)  # text, not a number


# -- statements through the provider -------------------------------------------------------------


async def test_asml_income_statement_in_euros_with_citations(esef: EsefProvider) -> None:
    [income] = await esef.income_statements(ASML)
    assert income.currency == "EUR"
    assert income.report_period == "2022-12-31" and income.fiscal_period == "2022-FY"
    assert income.revenue == 21_173_400_000  # the precise fact, not the one rounded to millions
    assert income.gross_profit == 10_700_400_000
    assert income.operating_income == 6_501_000_000
    assert income.net_income == 5_624_200_000
    assert income.earnings_per_share == 14.14 and income.earnings_per_share_diluted == 14.13
    assert income.weighted_average_shares == 397_800_000
    source = income.sources["revenue"]
    assert source.provider == "filings.xbrl.org" and source.concept == "ifrs-full:Revenue"
    assert source.unit == "EUR" and source.url == ASML_JSON
    assert source.accession_number == f"{ASML}-2022-12-31-ESEF-NL-0"
    assert income.sources["earnings_per_share"].unit == "EUR/shares"


async def test_asml_balance_sheet_ignores_the_equity_component(esef: EsefProvider) -> None:
    [balance] = await esef.balance_sheets(ASML)
    assert balance.total_assets == 36_300_300_000
    assert balance.cash_and_equivalents == 7_268_300_000
    # Total equity (no owners' share tagged), not the retained-earnings component of it.
    assert balance.shareholders_equity == 8_772_600_000
    assert balance.total_liabilities == 27_527_700_000


async def test_asml_cash_flow_signs_outflows_negative(esef: EsefProvider) -> None:
    [cash] = await esef.cash_flow_statements(ASML)
    assert cash.net_cash_flow_from_operations == 8_486_800_000
    assert cash.capital_expenditure == -1_281_800_000
    assert cash.free_cash_flow == 8_486_800_000 - 1_281_800_000
    assert cash.dividends_and_other_cash_distributions == -2_235_000_000
    assert cash.ending_cash_balance == 7_268_300_000


async def test_several_years_newest_first_and_date_bounds(esef: EsefProvider) -> None:
    rows = await esef.income_statements(UPM, limit=4)
    assert [(r.report_period, r.revenue) for r in rows] == [
        ("2023-12-31", 10_464_000_000),
        ("2022-12-31", 11_720_000_000),
    ]
    only = await esef.income_statements(UPM, report_period_lte="2022-12-31")
    assert [r.report_period for r in only] == ["2022-12-31"]


async def test_the_english_version_is_read_of_a_report_in_two_languages(
    esef: EsefProvider, routes: Routes
) -> None:
    [income] = await esef.income_statements(KONE)
    assert income.revenue == 10_906_900_000
    assert not any(url.endswith("-fi.json") for url in routes.requests)


async def test_a_filing_without_xbrl_json_says_so(esef: EsefProvider) -> None:
    with pytest.raises(NotFound, match="has no xBRL-JSON version") as caught:
        await esef.income_statements(CREDIT_SUISSE)
    assert "CREDIT SUISSE INTERNATIONAL" in str(caught.value)
    assert "E58DKGMJYYYJLN8C3868-2021-12-31-ESEF-LU-0" in str(caught.value)


async def test_quarters_are_refused_plainly(esef: EsefProvider) -> None:
    with pytest.raises(Unavailable, match="annual reports only"):
        await esef.income_statements(ASML, period="quarterly")


async def test_as_of_hides_reports_received_later(tmp_path: Path, routes: Routes) -> None:
    from datetime import date

    settings = DataSettings(
        cache_dir=tmp_path / "cache", as_of=date(2023, 12, 31), esef_rate=1000.0
    )
    esef = EsefProvider(settings, transport=routes.transport(), sleep=_no_wait)
    rows = await esef.income_statements(UPM)
    assert [r.report_period for r in rows] == ["2022-12-31"]  # 2023's arrived in March 2024


# -- the index -------------------------------------------------------------------------------------


async def test_pages_are_followed_by_links_next(esef: EsefProvider, routes: Routes) -> None:
    first = recorded_url("CZ-2020-12-31-paged-3-pages.1.json")
    pages = await esef.index_pages(first, what="CZ filings", max_pages=10)
    assert len(pages) == 3 and pages[0].count == 29
    filings = [f for page in pages for f in page.filings]
    assert len(filings) == 29 and len({f.fxo_id for f in filings}) == 29
    assert all(f.country == "CZ" and f.period_end == "2020-12-31" for f in filings)
    assert len(routes.requests) == 3


async def test_company_by_lei_and_by_name_within_a_country(esef: EsefProvider) -> None:
    asml = await esef.company(ASML)
    assert (asml.ticker, asml.name) == (ASML, "ASML Holding N.V.")
    oriola = await esef.company("esef:oriola@FI")
    assert (oriola.ticker, oriola.name) == (ORIOLA, "Oriola Oyj")


async def test_unknown_lei_is_not_found(esef: EsefProvider) -> None:
    with pytest.raises(NotFound, match="no issuer with the LEI 529900T8BM49AURSDO55"):
        await esef.company("529900T8BM49AURSDO55")


async def test_the_apis_400_body_is_said_plainly(tmp_path: Path, routes: Routes) -> None:
    url = f"{BASE}/api/filings?filter%5Bcountry%5D=XX&include=entity&page%5Bsize%5D=100"
    routes.add(url, recorded("error-400-unknown-filter.json"), status=400)
    with pytest.raises(UpstreamError) as caught:
        await provider(tmp_path, routes).company("esef:acme@XX")
    said = str(caught.value)
    assert "refused" in said and "HTTP 400" in said
    assert "Invalid filters querystring parameter (FilingSchema has no attribute abcdef)" in said


async def test_the_apis_500_body_is_said_plainly_after_retries(
    tmp_path: Path, routes: Routes
) -> None:
    url = f"{BASE}/api/entities/{ASML}/filings?page%5Bsize%5D=100"
    routes.add(url, recorded("error-500-bad-page-number.json"), status=500)
    with pytest.raises(UpstreamError) as caught:
        await provider(tmp_path, routes).income_statements(ASML)
    said = str(caught.value)
    assert "HTTP 500: Unknown error (code 9h9h)" in said and "on its side" in said
    assert sum(1 for u in routes.requests if u.startswith(url.split("?")[0])) == 3


# -- the router ------------------------------------------------------------------------------------


class _Refuses:
    """A provider for everyone else: must never be asked about an LEI."""

    name = "other"
    from dexter.data.provider import Capability as _C

    capabilities = frozenset({_C.STATEMENTS, _C.FILINGS, _C.INSIDER_TRADES})

    async def company(self, query: str) -> object:
        raise AssertionError(f"asked about {query}")

    async def income_statements(self, ticker: str, **kw: object) -> object:
        raise AssertionError(f"asked about {ticker}")

    async def aclose(self) -> None:
        return None


async def test_router_sends_an_lei_to_esef_and_nothing_else(esef: EsefProvider) -> None:
    router = DataRouter([_Refuses(), esef])  # type: ignore[list-item]
    company = await router.company(ASML)
    assert company.name == "ASML Holding N.V."
    [income] = await router.income_statements(company.ticker)
    assert income.currency == "EUR"
    with pytest.raises(
        Unavailable, match=r"Insider trades: not available for .*filings\.xbrl\.org"
    ):
        await router.insider_trades(ASML)


# -- end to end: the CLI and the tool --------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, routes: Routes) -> Iterator[EsefServer]:
    monkeypatch.chdir(tmp_path)
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_HOME", "DEXTER_AS_OF"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "160")
    # The polite default (2 a second) would only make the test wait.
    monkeypatch.setenv("DEXTER_ESEF_RATE_LIMIT", "1000")
    with EsefServer(routes) as running:
        monkeypatch.setenv("DEXTER_ESEF_URL", running.url)
        yield running


def test_cli_income_for_an_lei_in_euros_with_sources(
    server: EsefServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", ASML]) == 0
    out = capsys.readouterr().out
    assert f"ASML Holding N.V. ({ASML})" in out
    assert "21,173" in out and "5,624" in out and "14.14" in out  # EUR millions
    assert "EUR" in out and "USD" not in out
    # The citation names the entity and period (in the filing's id) and the report's URL.
    assert (
        f"filings.xbrl.org ESEF annual report filed 2023-02-16, acc. {ASML}-2022-12-31-ESEF-NL-0 "
        f"{server.url}/{ASML}/2022-12-31/ESEF/NL/0/asml-2022-12-31-en.json"
    ) in " ".join(out.split())


def test_cli_balance_and_cashflow_by_name_as_json(
    server: EsefServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "balance", ASML, "--json"]) == 0
    [balance] = json.loads(capsys.readouterr().out)
    assert balance["currency"] == "EUR" and balance["total_assets"] == 36_300_300_000
    assert main(["data", "cashflow", ASML, "--json"]) == 0
    [cash] = json.loads(capsys.readouterr().out)
    assert cash["capital_expenditure"] == -1_281_800_000
    assert cash["sources"]["capital_expenditure"]["url"].endswith("asml-2022-12-31-en.json")


def test_cli_filings_lists_the_reports_and_says_which_lack_xbrl_json(
    server: EsefServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "filings", f"esef:{KONE}", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["accession_number"] for r in rows] == [
        f"{KONE}-2022-12-31-ESEF-FI-1",
        f"{KONE}-2022-12-31-ESEF-FI-0",
    ]
    assert "fi" in rows[0]["description"] and "en" in rows[1]["description"]
    assert main(["data", "income", CREDIT_SUISSE]) == 1
    err = capsys.readouterr().err
    assert "has no xBRL-JSON version" in err and "Traceback" not in err


def test_cli_esef_name_without_country_is_a_usage_error(
    server: EsefServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", "esef:asml"]) == 2
    err = capsys.readouterr().err
    assert "esef:kone@FI" in err and "Traceback" not in err


async def test_get_financials_reads_an_esef_issuer(
    tmp_path: Path, routes: Routes, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter.config import load_settings

    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEXTER_ESEF_RATE_LIMIT", "1000")
    from dexter.data.sources import build_router

    settings = load_settings()
    router = build_router(settings, esef_transport=routes.transport())
    try:
        router_model = ScriptedModel(
            [
                calls(
                    ("income_statements", {"company": ASML}),
                    ("balance_sheets", {"company": ASML}),
                )
            ]
        )
        wanted = {"income_statements", "balance_sheets"}
        inner = [t for t in data_call_tools(router) if t.name in wanted]
        tool = GetFinancials(inner, lambda: router_model)
        ctx = ToolContext()
        result = await tool.run(RoutedArgs(query="ASML revenue and assets 2022"), ctx)
    finally:
        await router.aclose()
    assert "ASML Holding N.V." in result.content
    assert "21,173.4" in result.content and "36,300.3" in result.content
    assert "EUR millions" in result.content and "USD" not in result.content
    cited = [(entry.label, entry.url) for entry in ctx.sources.entries()]
    assert any(
        f"acc. {ASML}-2022-12-31-ESEF-NL-0" in label and url == ASML_JSON for label, url in cited
    )


async def test_real_recorded_reports_when_someone_has_recorded_them(tmp_path: Path) -> None:
    """Runs only after `scripts/record_esef.py` (network needed) has added real reports."""
    leis = recorded_leis()
    if not leis:
        pytest.skip("no real xBRL-JSON report recorded; run `uv run python scripts/record_esef.py`")
    esef = provider(tmp_path, recorded_routes())
    for lei in leis:
        rows = await esef.balance_sheets(lei, limit=1)
        assert rows, f"{lei}: no balance sheet read from its recorded report"
        [row] = rows
        assert len(row.currency) == 3 and row.total_assets
        if row.total_liabilities and row.shareholders_equity and not row.non_controlling_interest:
            # IFRS balance: assets = liabilities + equity, to within rounding.
            gap = row.total_assets - row.total_liabilities - row.shareholders_equity
            assert abs(gap) <= 0.001 * row.total_assets, f"{lei}: does not balance"


def _record_with_script(routes: Routes, dest: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run scripts/record_esef.py's recorder for ASML against `routes`, into `dest`."""
    import importlib.util

    import httpx2

    script = Path(__file__).resolve().parents[1] / "scripts" / "record_esef.py"
    spec = importlib.util.spec_from_file_location("record_esef", script)
    assert spec is not None and spec.loader is not None
    recorder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorder)
    monkeypatch.setattr(recorder, "PAUSE", 0.0)
    folder = dest / "nonus" / "filings.xbrl.org"
    manifest: list[dict[str, object]] = []
    with httpx2.Client(transport=routes.transport()) as client:
        recorder.record(client, folder, manifest, ASML, 2)
    (folder / "MANIFEST.json").write_text(json.dumps(manifest))
    return folder


async def test_the_recording_script_saves_what_the_tests_then_read(
    tmp_path: Path, routes: Routes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """scripts/record_esef.py run against the same routes (no network): the files and the
    manifest it writes are served by `recorded_routes`, and the recorded report reads end to
    end, as the test above does for real recordings."""
    folder = _record_with_script(routes, tmp_path / "fixtures", monkeypatch)
    saved = await asyncio.to_thread((folder / "reports" / "asml-2022-12-31-en.json").read_bytes)
    assert saved == await asyncio.to_thread(ASML_REPORT.read_bytes)
    monkeypatch.setenv("DEXTER_FIXTURES", str(tmp_path / "fixtures"))
    assert recorded_leis() == [ASML]
    [row] = await provider(tmp_path, recorded_routes()).balance_sheets(ASML)
    assert row.total_assets == 36_300_300_000 and row.currency == "EUR"


async def test_a_ticker_is_never_answered_by_esef(esef: EsefProvider) -> None:
    """Listed before SEC EDGAR, ESEF still leaves other names to the other providers."""
    from dexter.data.errors import UnknownCompany

    class _Sec:
        name = "SEC EDGAR"
        capabilities = frozenset()

        async def company(self, query: str) -> object:
            raise UnknownCompany(query)

        async def aclose(self) -> None:
            return None

    router = DataRouter([esef, _Sec()])  # type: ignore[list-item]
    with pytest.raises(UnknownCompany, match="No SEC filer matches 'APPL'"):
        await router.company("APPL")


def test_a_bad_rate_limit_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter.config import load_settings
    from dexter.data.errors import ConfigurationNeeded

    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEXTER_ESEF_RATE_LIMIT", "fast")
    with pytest.raises(ConfigurationNeeded, match="DEXTER_ESEF_RATE_LIMIT must be a positive"):
        DataSettings.from_settings(load_settings())
    monkeypatch.setenv("DEXTER_ESEF_RATE_LIMIT", "0.5")
    assert DataSettings.from_settings(load_settings()).esef_rate == 0.5


async def test_a_year_without_xbrl_json_is_left_out_and_said(
    tmp_path: Path, routes: Routes
) -> None:
    """UPM's listing with its 2022 filing's json_url removed (a recorded object, changed so)."""
    import copy

    from tests.support.esef import entity_filings_page

    listing = entity_filings_page(
        "upm-2022-2023-with-validation-messages.1.json",
        "upm-2022-2023-with-validation-messages.3.json",
    )
    listing = copy.deepcopy(listing)
    listing["data"][0]["attributes"]["json_url"] = None
    routes.add(f"{BASE}/api/entities/{UPM}/filings?page%5Bsize%5D=100", listing)
    rows = await provider(tmp_path, routes).income_statements(UPM)
    assert [r.report_period for r in rows] == ["2023-12-31"]
    assert rows[0].notes == [
        f"No xBRL-JSON version of the report for 2022-12-31 ({UPM}-2022-12-31-ESEF-FI-0) at "
        "filings.xbrl.org; left out."
    ]
