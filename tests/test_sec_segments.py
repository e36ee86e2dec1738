"""Segments without a key: revenue and operating income by business segment, geography and
product from two real 10-K XBRL filings (Amazon FY2022, Netflix FY2023), read end to end through
the SEC provider and the `segments` data call, served from a mock EDGAR transport.

The instances and label linkbases are the real files in `../shared/fixtures/xbrl/`. The fixtures
hold no submissions file or folder listing for these two filers, so both are composed here in the
documented shapes of those SEC responses (compare `sec-mirror/data.sec.gov/submissions/*.json`
and `sec-documents/0001213900-24-004875-index.json`): a `filings.recent` of columnar arrays, and
an `index.json` `directory.item` list naming the filing's real documents. Each instance is parsed
once per module (a module fixture makes the one data call per company).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from dexter.data.errors import NotFound, UpstreamError
from dexter.data.router import DataRouter
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.sec.xbrl_instance import parse_instance
from dexter.data.settings import DataSettings
from dexter.tools.base import ToolContext, ToolResult
from dexter.tools.finance.datacalls import Segments, SegmentsArgs
from tests.support.fixtures import fixtures_dir
from tests.support.sec_mirror import Mirror, mirror_transport

AGENT = "Dexter Tests tests@example.com"
M = 1_000_000

FILINGS = {
    "AMZN": {
        "cik": "1018724",
        "name": "AMAZON COM INC",
        "folder": "amzn-10k-2022",
        "stem": "amzn-20221231",
        "accession": "0001018724-23-000004",
        "filed": "2023-02-03",
        "report": "2022-12-31",
    },
    "NFLX": {
        "cik": "1065280",
        "name": "NETFLIX INC",
        "folder": "nflx-10k-2023",
        "stem": "nflx-20231231",
        "accession": "0001065280-24-000030",
        "filed": "2024-01-26",
        "report": "2023-12-31",
    },
}
# A 10-K from before XBRL: its folder (composed, like the others) holds only the HTML document.
OLD_AMAZON_ACCESSION = "0001193125-09-014406"


def _archive(cik: str, accession: str) -> str:
    return f"www.sec.gov/Archives/edgar/data/{cik}/{accession.replace('-', '')}"


def _submissions(ticker: str, rows: list[dict[str, str]]) -> bytes:
    info = FILINGS[ticker]
    columns = ("accessionNumber", "filingDate", "reportDate", "form", "primaryDocument")
    recent: dict[str, list[str]] = {c: [r[c] for r in rows] for c in columns}
    recent["acceptanceDateTime"] = [f"{r['filingDate']}T06:00:00.000Z" for r in rows]
    recent["items"] = ["" for _ in rows]
    recent["primaryDocDescription"] = ["10-K" for _ in rows]
    body = {
        "cik": info["cik"].zfill(10),
        "name": info["name"],
        "tickers": [ticker],
        "filings": {"recent": recent, "files": []},
    }
    return json.dumps(body).encode()


def _listing(names: list[str]) -> bytes:
    items = [{"name": n, "type": "text.gif", "size": "", "last-modified": ""} for n in names]
    return json.dumps({"directory": {"item": items}}).encode()


def edgar() -> Mirror:
    """The recorded ticker table, plus both filings laid out at their EDGAR URLs."""
    root = fixtures_dir() / "xbrl"
    extra: dict[str, bytes] = {}
    for ticker, info in FILINGS.items():
        folder = _archive(info["cik"], info["accession"])
        files = sorted((root / info["folder"]).glob(f"{info['stem']}*"))
        if not files:
            pytest.skip(f"{root / info['folder']} is missing; run scripts/fetch_fixtures.py.")
        for file in files:
            extra[f"{folder}/{file.name}"] = file.read_bytes()
        primary = f"{info['stem']}.htm"
        extra[f"{folder}/index.json"] = _listing(
            [f"{info['accession']}-index.html", f"{info['accession']}.txt", primary]
            + [f.name for f in files]
        )
        rows = [
            {
                "accessionNumber": info["accession"],
                "filingDate": info["filed"],
                "reportDate": info["report"],
                "form": "10-K",
                "primaryDocument": primary,
            }
        ]
        if ticker == "AMZN":
            rows.append(
                {
                    "accessionNumber": OLD_AMAZON_ACCESSION,
                    "filingDate": "2009-01-30",
                    "reportDate": "2008-12-31",
                    "form": "10-K",
                    "primaryDocument": "d10k.htm",
                }
            )
            old = _archive(info["cik"], OLD_AMAZON_ACCESSION)
            extra[f"{old}/index.json"] = _listing(["d10k.htm", f"{OLD_AMAZON_ACCESSION}.txt"])
        extra[f"data.sec.gov/submissions/CIK{info['cik'].zfill(10)}.json"] = _submissions(
            ticker, rows
        )
    # Apple's FY2024 10-K: the recorded inline-XBRL document and the recorded submissions; its
    # listing (composed) names no extracted `_htm.xml`, so the inline document itself is read.
    apple = "www.sec.gov/Archives/edgar/data/320193/000032019324000123"
    extra[f"{apple}/index.json"] = _listing(
        ["aapl-20240928.htm", "aapl-20240928.xsd", "0000320193-24-000123.txt"]
    )
    return Mirror(extra)


def _router(cache: Path, mirror: Mirror) -> DataRouter:
    # The SEC's 10 requests/second is tested with the HTTP client; here it would only add waiting.
    data = DataSettings(cache_dir=cache, sec_user_agent=AGENT, sec_rate=1000)
    return DataRouter([SecEdgarProvider(data, transport=mirror_transport(mirror))])


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolResult]:
    """One `segments` data call per company, through the router and the SEC provider."""
    mirror = edgar()
    router = _router(tmp_path_factory.mktemp("segments-cache"), mirror)

    async def run() -> dict[str, ToolResult]:
        try:
            call = Segments(router)
            found = {
                t: await call.run(SegmentsArgs(company=t, period="annual"), ToolContext())
                for t in FILINGS
            }
            found["AAPL"] = await call.run(
                SegmentsArgs(company="AAPL", year=2024, limit=1), ToolContext()
            )
            return found
        finally:
            await router.aclose()

    return asyncio.run(run())


def _records(results: Mapping[str, ToolResult], ticker: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = results[ticker].data["records"]
    return records


def _breakdown(
    record: Mapping[str, Any], concept: str, kind: str, *, members: set[str] | None = None
) -> dict[str, Any]:
    found = [
        b
        for b in record["breakdowns"]
        if b["concept"] == concept
        and b["axis_kind"] == kind
        and (members is None or members <= {m["member"] for m in b["members"]})
    ]
    assert len(found) == 1, [b["axis_kind"] for b in record["breakdowns"]]
    return found[0]


def _values(breakdown: Mapping[str, Any]) -> dict[str, float]:
    return {m["label"]: m["value"] for m in breakdown["members"]}


AMZN_REVENUE = "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"


def test_amazon_segment_revenue_and_operating_income_in_its_own_labels(
    results: dict[str, ToolResult],
) -> None:
    fy2022, fy2021, fy2020 = _records(results, "AMZN")
    assert [r["fiscal_period"] for r in (fy2022, fy2021, fy2020)] == ["FY2022", "FY2021", "FY2020"]
    revenue = _breakdown(fy2022, AMZN_REVENUE, "business segment")
    assert _values(revenue) == {
        "North America": 315_880 * M,
        "International": 118_007 * M,
        "AWS": 80_096 * M,
    }
    assert revenue["total"] == 513_983 * M and revenue["check"] == "sums to the total"
    assert revenue["difference"] == 0 and revenue["note"] is None
    income = _breakdown(fy2022, "us-gaap:OperatingIncomeLoss", "business segment")
    assert _values(income) == {
        "North America": -2_847 * M,
        "International": -7_746 * M,
        "AWS": 22_841 * M,
    }
    assert income["total"] == 12_248 * M and income["check"] == "sums to the total"
    # The comparatives come from the same filing.
    assert _values(_breakdown(fy2021, AMZN_REVENUE, "business segment")) == {
        "North America": 279_833 * M,
        "International": 127_787 * M,
        "AWS": 62_202 * M,
    }
    assert _values(_breakdown(fy2020, AMZN_REVENUE, "business segment")) == {
        "North America": 236_282 * M,
        "International": 104_412 * M,
        "AWS": 45_370 * M,
    }


def test_amazon_product_lines_apart_from_the_goods_and_services_split(
    results: dict[str, ToolResult],
) -> None:
    fy2022 = _records(results, "AMZN")[0]
    lines = _breakdown(
        fy2022, AMZN_REVENUE, "product or service", members={"amzn:OnlineStoresMember"}
    )
    assert _values(lines) == {
        "Online stores": 220_004 * M,
        "Physical stores": 18_963 * M,
        "Third-party seller services": 117_716 * M,
        "Subscription services": 35_218 * M,
        "Advertising services": 37_739 * M,
        "AWS": 80_096 * M,
        "Other": 4_247 * M,
    }
    assert lines["check"] == "sums to the total"
    # Products vs services is a second split of the same revenue, not more product lines.
    goods = _breakdown(
        fy2022, AMZN_REVENUE, "product or service", members={"us-gaap:ProductMember"}
    )
    assert sum(_values(goods).values()) == 513_983 * M and len(goods["members"]) == 2


def test_amazon_rest_of_world_is_not_all_non_us_revenue(results: dict[str, ToolResult]) -> None:
    geography = _breakdown(_records(results, "AMZN")[0], AMZN_REVENUE, "geography")
    by_member = {m["member"]: (m["label"], m["value"]) for m in geography["members"]}
    assert by_member["us-gaap:NonUsMember"] == ("Rest of world", 69_802 * M)
    assert by_member["country:US"][1] == 356_113 * M
    assert by_member["country:DE"] == ("Germany", 33_598 * M)
    assert {by_member["country:GB"][1], by_member["country:JP"][1]} == {30_074 * M, 24_396 * M}
    assert geography["check"] == "sums to the total"
    # The trap is named: non-US revenue is everything but the US (157,870M), not 69,802M.
    assert "us-gaap:NonUsMember" in geography["note"]
    assert "not for all non-US revenue" in geography["note"]
    assert "157,870M USD" in geography["note"]


def test_netflix_streaming_by_region_and_the_dvd_gap(results: dict[str, ToolResult]) -> None:
    fy2023, fy2022, fy2021 = _records(results, "NFLX")
    regions = _breakdown(fy2023, "us-gaap:Revenues", "geography", members={"srt:AsiaPacificMember"})
    assert [w["label"] for w in regions["within"]] == ["Streaming"]
    assert _values(regions) == {
        "United States and Canada": 14_873_783_000,
        "Europe, Middle East, and Africa": 10_556_487_000,
        "Latin America": 4_446_461_000,
        "Asia-Pacific": 3_763_727_000,
    }
    assert regions["members_sum"] == 33_640_458_000
    assert regions["total"] == 33_723_297_000
    assert regions["check"] == "does not sum to the total"
    assert regions["difference"] == 82_839_000
    assert "82,839,000 USD gap is revenue outside Streaming" in regions["note"]
    # Revenue in the US alone is tagged too; the rest of the world is not broken down.
    us = _breakdown(fy2023, "us-gaap:Revenues", "geography", members={"country:US"})
    assert _values(us) == {"United States": 13_800 * M}
    assert "Only United States is tagged" in us["note"]
    comparative = _breakdown(
        fy2022, "us-gaap:Revenues", "geography", members={"srt:AsiaPacificMember"}
    )
    assert comparative["total"] == 31_615_550_000
    assert _values(comparative)["United States and Canada"] == 14_084_643_000
    assert fy2021["fiscal_period"] == "FY2021"


def test_netflix_paid_memberships_by_region(results: dict[str, ToolResult]) -> None:
    fy2023 = _records(results, "NFLX")[0]
    members = _breakdown(fy2023, "nflx:NumberOfPaidMemberships", "geography")
    assert members["unit"] == "membership"
    assert _values(members) == {
        "United States and Canada": 80_128_000,
        "Europe, Middle East, and Africa": 88_813_000,
        "Latin America": 45_997_000,
        "Asia-Pacific": 45_338_000,
    }
    assert members["check"] == "no reported total"


def test_each_period_cites_the_filing(results: dict[str, ToolResult]) -> None:
    for ticker, info in FILINGS.items():
        record = _records(results, ticker)[0]
        assert record["period"] == "annual"
        folder = f"https://www.sec.gov/Archives/edgar/data/{info['cik']}/"
        folder += info["accession"].replace("-", "")
        assert record["accession_number"] == info["accession"]
        assert record["filing_date"] == info["filed"] and record["form"] == "10-K"
        assert record["filing_url"] == f"{folder}/{info['accession']}-index.htm"
        assert record["instance_url"] == f"{folder}/{info['stem']}_htm.xml"
        assert record["source"]["accession_number"] == info["accession"]


def test_the_model_reads_labels_totals_notes_and_a_source(results: dict[str, ToolResult]) -> None:
    amazon = results["AMZN"].content
    assert "Revenue by business segment, USD millions: North America 315,880; " in amazon
    assert "International 118,007; AWS 80,096. Reported total 513,983: sums to the total." in amazon
    assert "Operating income (loss) by business segment" in amazon
    assert "acc. 0001018724-23-000004" in amazon and "[S1]" in amazon
    netflix = results["NFLX"].content
    assert "Revenue by geography (Streaming only), USD millions:" in netflix
    assert "Reported total 33,723.297: does not sum to the total (gap 82.839)" in netflix
    assert "revenue outside Streaming" in netflix
    assert "Paid memberships at end of period" in netflix and "Asia-Pacific 45,338,000" in netflix


def test_inline_xbrl_when_the_folder_has_no_extracted_instance(
    results: dict[str, ToolResult],
) -> None:
    (fy2024,) = _records(results, "AAPL")
    assert fy2024["accession_number"] == "0000320193-24-000123"
    assert fy2024["instance_url"].endswith("/aapl-20240928.htm")
    assert (fy2024["start_date"], fy2024["report_period"]) == ("2023-10-01", "2024-09-28")
    assert fy2024["fiscal_period"] == "FY2024"  # the filer's fiscal year, ending in September
    segments = _breakdown(fy2024, AMZN_REVENUE, "business segment")
    by_member = {m["member"]: m["value"] for m in segments["members"]}
    assert by_member["aapl:AmericasSegmentMember"] == 167_045 * M
    assert by_member["aapl:GreaterChinaSegmentMember"] == 66_952 * M
    assert segments["total"] == 391_035 * M and segments["check"] == "sums to the total"
    # Services is tagged only in the products-and-services split: the product lines' gap is it.
    lines = _breakdown(fy2024, AMZN_REVENUE, "product or service", members={"aapl:IPhoneMember"})
    assert lines["difference"] == 96_169 * M
    assert "us-gaap:ServiceMember" in lines["note"] and "sum to the total" in lines["note"]
    # Segment operating income exceeds the consolidated figure by the costs kept outside.
    income = _breakdown(fy2024, "us-gaap:OperatingIncomeLoss", "business segment")
    assert income["total"] == 123_216 * M and income["difference"] == -38_828 * M
    assert "more than the reported total" in income["note"]


def test_a_filing_without_xbrl_says_so(tmp_path: Path) -> None:
    router = _router(tmp_path / "cache", edgar())

    async def run() -> None:
        try:
            with pytest.raises(NotFound) as caught:
                await router.segments("AMZN", year=2008)
            assert "has no XBRL instance" in caught.value.message
            assert OLD_AMAZON_ACCESSION in caught.value.message
        finally:
            await router.aclose()

    asyncio.run(run())


def test_an_instance_declaring_entities_is_refused() -> None:
    hostile = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><xbrl>&a;</xbrl>'
    with pytest.raises(UpstreamError, match="DOCTYPE or ENTITY"):
        parse_instance(hostile)


def test_cli_prints_segments_with_the_filing_cited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dexter.cli.main import main
    from tests.support.sec_mirror import MirrorServer

    monkeypatch.chdir(tmp_path)
    with MirrorServer(edgar()) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        assert main(["data", "segments", "NFLX", "--limit", "1"]) == 0
        shown = capsys.readouterr().out
        assert "NFLX — segments from the filing's XBRL" in shown
        assert "**FY2023 (2023-01-01 to 2023-12-31)** [S1]" in shown
        assert "United States and Canada 14,873.783" in shown
        assert "82,839,000 USD gap is revenue outside Streaming" in shown
        assert "FY2022" not in shown  # --limit 1
        assert "acc. 0001065280-24-000030" in shown
        # A 10-K from before XBRL: a clear error, exit 1, no traceback.
        assert main(["data", "segments", "AMZN", "--year", "2008"]) == 1
        said = capsys.readouterr()
        assert "has no XBRL instance" in said.err and "Traceback" not in said.err
