"""SecEdgarProvider over the recorded SEC mirror: what `dexter data` and the tools get."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from dexter.data.errors import ConfigurationNeeded, NotFound, UnknownCompany, UpstreamError
from dexter.data.models import Holdings
from dexter.data.router import DataRouter
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from tests.support.fixtures import fixtures_dir
from tests.support.ownership_filings import snowflake_insider_filings
from tests.support.sec_mirror import Mirror, mirror_transport
from tests.support.thirteen_f import example_13f_filing

AGENT = "Dexter Tests tests@example.com"


def provider(tmp_path: Path, mirror: Mirror, **settings: Any) -> SecEdgarProvider:
    options: dict[str, Any] = {"cache_dir": tmp_path / "cache", "sec_user_agent": AGENT}
    options.update(settings)
    return SecEdgarProvider(DataSettings(**options), transport=mirror_transport(mirror))


@pytest.fixture
def mirror() -> Mirror:
    return Mirror()


async def test_resolves_tickers_names_and_suggests(tmp_path: Path, mirror: Mirror) -> None:
    sec = provider(tmp_path, mirror)
    assert (await sec.company("aapl")).cik == "0000320193"
    assert (await sec.company("Apple")).ticker == "AAPL"
    assert (await sec.company("nvidia corp")).ticker == "NVDA"
    assert (await sec.company("brk.b")).ticker == "BRK-B"
    assert (await sec.company("320193")).ticker == "AAPL"
    with pytest.raises(UnknownCompany) as info:
        await sec.company("AAPLE")
    assert any(s.startswith("AAPL") for s in info.value.suggestions)
    assert "Did you mean" in str(info.value)
    assert all(ua == AGENT for ua in mirror.user_agents), "every SEC request declares who we are"


async def test_resolves_edgar_ciks_former_names_and_suggests_names(
    tmp_path: Path, mirror: Mirror
) -> None:
    sec = provider(tmp_path, mirror)
    # Snowflake's submissions are not recorded: the ticker table alone must answer.
    assert (await sec.company("CIK0001640147")).ticker == "SNOW"
    # Former names come from the submissions of the filers that share the first word.
    assert (await sec.company("Tesla Motors")).ticker == "TSLA"
    assert (await sec.company("APPLE COMPUTER INC")).cik == "0000320193"
    with pytest.raises(UnknownCompany) as info:
        await sec.company("Microsfot")
    assert info.value.suggestions[0] == "MSFT (MICROSOFT CORP)", "a misspelt name: names first"
    with pytest.raises(UnknownCompany):
        await sec.company("Apple Tractors")  # shares a first word, was never Apple's name


async def test_apple_annual_income_with_sources(tmp_path: Path, mirror: Mirror) -> None:
    statements = await provider(tmp_path, mirror).income_statements("AAPL", limit=2)
    fy25, fy24 = statements
    assert (fy25.fiscal_period, fy25.revenue, fy25.net_income) == (
        "2025-FY",
        416_161_000_000,
        112_010_000_000,
    )
    assert (fy24.fiscal_period, fy24.revenue) == ("2024-FY", 391_035_000_000)
    assert fy25.report_period.startswith("2025-09")
    source = fy25.sources["revenue"]
    assert source.form == "10-K" and source.accession_number
    assert "RevenueFromContractWithCustomer" in (source.concept or "")
    assert source.accession_number in source.cite()


async def test_nvidia_fiscal_year_is_labelled_as_nvidia_does(
    tmp_path: Path, mirror: Mirror
) -> None:
    latest = (await provider(tmp_path, mirror).income_statements("NVDA", limit=1))[0]
    assert latest.report_period == "2026-01-25"
    assert latest.fiscal_period == "2026-FY"
    assert latest.revenue == 215_938_000_000


async def test_metrics_from_statements(tmp_path: Path, mirror: Mirror) -> None:
    metrics = (await provider(tmp_path, mirror).financial_metrics("AAPL", limit=2))[0]
    assert metrics.fiscal_period == "2025-FY"
    assert metrics.net_margin == pytest.approx(112_010 / 416_161)
    assert metrics.revenue_growth == pytest.approx(416_161 / 391_035 - 1)
    assert metrics.price_to_earnings_ratio is None, "no price source, no valuation ratios"


async def test_concurrent_callers_share_one_fetch(tmp_path: Path, mirror: Mirror) -> None:
    sec = provider(tmp_path, mirror)
    await asyncio.gather(
        sec.income_statements("AAPL"), sec.balance_sheets("AAPL"), sec.cash_flow_statements("AAPL")
    )
    facts = [r for r in mirror.requests if "companyfacts" in r]
    assert len(facts) == 1


async def test_disk_cache_serves_a_new_process(tmp_path: Path, mirror: Mirror) -> None:
    await provider(tmp_path, mirror).income_statements("AAPL")
    before = len(mirror.requests)
    await provider(tmp_path, mirror).income_statements("AAPL")  # fresh provider, same cache
    assert len(mirror.requests) == before


async def test_filings_and_a_10k_section(tmp_path: Path, mirror: Mirror) -> None:
    # Apple's older history page (1994 .. 2015-03-11) in the SEC's shape, so a year before the
    # recent table is looked up in a history that loads (rows cut from the real recent table).
    recent = json.loads(
        (fixtures_dir() / "sec-mirror/data.sec.gov/submissions/CIK0000320193.json").read_bytes()
    )["filings"]["recent"]
    older = {key: values[-2:] for key, values in recent.items()}
    older.update(
        filingDate=["2014-10-27", "1994-12-13"],
        reportDate=["2014-09-27", "1994-09-30"],
        form=["10-K", "10-K"],
    )
    mirror.extra["data.sec.gov/submissions/CIK0000320193-submissions-001.json"] = json.dumps(
        older
    ).encode()
    sec = provider(tmp_path, mirror)
    tenks = await sec.filings("AAPL", forms=["10-K"], limit=3)
    assert [f.filing_type for f in tenks] == ["10-K"] * 3
    assert tenks[0].filing_date > tenks[1].filing_date
    section = await sec.filing_section("AAPL", form="10-K", item="risk factors", year=2024)
    assert section.accession_number == "0000320193-24-000123"
    assert section.item == "1A" and len(section.text) > 20_000
    assert "<" not in section.text[:2000]
    assert section.source.accession_number == "0000320193-24-000123"
    mdna = await sec.filing_section("AAPL", form="10-K", item="7", year=2024)
    assert "net sales" in mdna.text.lower()
    with pytest.raises(NotFound, match="fiscal year 1990"):
        await sec.filing_section("AAPL", form="10-K", item="1A", year=1990)


async def test_insider_trades_from_form4(tmp_path: Path) -> None:
    form4 = (fixtures_dir() / "sec-documents" / "form4.snow.xml").read_bytes()
    accession = "0001640147-22-000999"  # a synthetic wrapper around the real Form 4 document
    folder = accession.replace("-", "")
    submissions = {
        "cik": "1640147", "name": "Snowflake Inc.", "tickers": ["SNOW"], "exchanges": ["NYSE"],
        "filings": {"recent": {
            "accessionNumber": [accession], "filingDate": ["2022-12-15"],
            "reportDate": ["2022-12-13"], "acceptanceDateTime": ["2022-12-15T18:00:00.000Z"],
            "form": ["4"], "primaryDocument": ["xslF345X03/form4.xml"],
            "primaryDocDescription": ["FORM 4"],
        }, "files": []},
    }  # fmt: skip
    mirror = Mirror(
        {
            "data.sec.gov/submissions/CIK0001640147.json": json.dumps(submissions).encode(),
            f"www.sec.gov/Archives/edgar/data/1640147/{folder}/form4.xml": form4,
        }
    )
    trades = await provider(tmp_path, mirror).insider_trades("SNOW", limit=50)
    assert trades and all(t.ticker == "SNOW" for t in trades)
    assert {t.name for t in trades} == {"Scarpelli Michael"}
    assert all(t.source and t.source.accession_number == accession for t in trades)


async def test_insider_trades_read_forms_4_and_5_and_their_amendments(tmp_path: Path) -> None:
    mirror = Mirror(snowflake_insider_filings())
    trades = await provider(tmp_path, mirror).insider_trades("SNOW", limit=50)
    by_form: dict[str | None, int] = {}
    for trade in trades:
        by_form[trade.form_type] = by_form.get(trade.form_type, 0) + 1
    # Seven Form 4 rows; the Form 5's one gift, in the 5 and again in the 5/A; its two
    # holding rows are positions, not transactions; the Form 3 is never read.
    assert by_form == {"4": 7, "5": 1, "5/A": 1}
    gift = next(t for t in trades if t.form_type == "5")
    assert (gift.name, gift.transaction_type, gift.transaction_shares) == (
        "McMahon John Dennis",
        "Gift",
        -61386,
    )
    assert (gift.transaction_date, gift.filing_date) == ("2021-12-23", "2022-03-11")
    assert gift.source is not None and gift.source.form == "5"
    assert gift.source.accession_number == "0001640147-22-000502"
    assert not any("form3" in r for r in mirror.requests)
    dates = [t.transaction_date or "" for t in trades]
    assert dates == sorted(dates, reverse=True)


async def test_13f_holdings_are_the_largest_by_value_with_the_whole_report_counted(
    tmp_path: Path,
) -> None:
    sec = provider(tmp_path, Mirror(example_13f_filing()))
    top = await sec.institutional_holdings(filer_cik="1234567", limit=50)
    assert isinstance(top, Holdings)
    assert len(top) == 50 and (top.total_count, top.omitted_count) == (255, 205)
    assert top.total_value_usd == 350_153_407  # every row of the table, in dollars
    assert top.omitted_value_usd == 116_646_663  # what the 205 rows left out are worth
    values = [h.value_usd or 0 for h in top]
    assert values == sorted(values, reverse=True)
    assert (top[0].name_of_issuer, top[0].value_usd) == ("VANGUARD INDEX FDS", 26_689_322)
    assert top[0].filer_name == "Example Capital LLC" and top[0].report_period == "2023-12-31"
    every = await sec.institutional_holdings(filer_cik="1234567", limit=None)
    assert (len(every), every.omitted_count, every.omitted_value_usd) == (255, 0, 0)
    assert min(h.value_usd or 0 for h in top) >= max(h.value_usd or 0 for h in every[50:])


async def test_missing_user_agent_explains_the_sec_rule(tmp_path: Path, mirror: Mirror) -> None:
    sec = provider(tmp_path, mirror, sec_user_agent=None)
    with pytest.raises(ConfigurationNeeded) as info:
        await sec.company("AAPL")
    assert "DEXTER_SEC_USER_AGENT" in str(info.value) and "email" in str(info.value)
    assert mirror.requests == []


async def test_truncated_companyfacts_is_an_error_and_not_cached(tmp_path: Path) -> None:
    real = fixtures_dir() / "sec-mirror/data.sec.gov/api/xbrl/companyfacts/CIK0000320193.json"
    mirror = Mirror(
        {"data.sec.gov/api/xbrl/companyfacts/CIK0000320193.json": real.read_bytes()[:5000]}
    )
    with pytest.raises(UpstreamError, match="not valid JSON"):
        await provider(tmp_path, mirror).income_statements("AAPL")
    mirror.extra.clear()  # the SEC recovers: a new attempt must refetch, not reuse the bad body
    statements = await provider(tmp_path, mirror).income_statements("AAPL", limit=1)
    assert statements[0].revenue == 416_161_000_000


async def test_company_without_facts(tmp_path: Path, mirror: Mirror) -> None:
    # Berkshire's class B is in the ticker table, but the mirror has no companyfacts for it.
    with pytest.raises(NotFound, match="no XBRL financial data"):
        await provider(tmp_path, mirror).income_statements("BRK-B")


async def test_router_says_what_is_missing_for_prices(tmp_path: Path, mirror: Mirror) -> None:
    router = DataRouter([provider(tmp_path, mirror)])
    with pytest.raises(Exception) as info:
        await router.prices("AAPL", start_date="2025-01-01", end_date="2025-02-01")
    assert "not available" in str(info.value) and "FINANCIAL_DATASETS_API_KEY" in str(info.value)
    await router.aclose()


async def test_older_history_is_paged_only_when_needed(tmp_path: Path) -> None:
    recent = json.loads(
        (fixtures_dir() / "sec-mirror/data.sec.gov/submissions/CIK0001318605.json").read_bytes()
    )
    columns = recent["filings"]["recent"]
    # A small older page in the SEC's format: the same columns at the top level.
    older = {key: values[:2] for key, values in columns.items()}
    older["filingDate"] = ["2010-06-01", "2010-05-01"]
    older["form"] = ["10-K", "10-K"]
    older["accessionNumber"] = ["0001193125-10-000001", "0001193125-10-000002"]
    mirror = Mirror(
        {"data.sec.gov/submissions/CIK0001318605-submissions-001.json": json.dumps(older).encode()}
    )
    sec = provider(tmp_path, mirror)
    few = await sec.filings("TSLA", forms=["10-K"], limit=2)
    assert len(few) == 2
    assert not any("submissions-001" in r for r in mirror.requests), "recent list was enough"
    everything = await sec.filings("TSLA", forms=["10-K"], limit=100)
    assert [f.accession_number for f in everything[-2:]] == [
        "0001193125-10-000001",
        "0001193125-10-000002",
    ]
    assert all(f.filing_date >= everything[-1].filing_date for f in everything)


async def test_a_missing_older_page_is_named_not_skipped(tmp_path: Path, mirror: Mirror) -> None:
    filings = await provider(tmp_path, mirror).filings("TSLA", limit=5000)
    assert len(filings) == 1001  # the recent list; the older page is not in the mirror
    [gap] = getattr(filings, "gaps", [])
    assert gap.page == "CIK0001318605-submissions-001.json" and "HTTP 404" in gap.reason
