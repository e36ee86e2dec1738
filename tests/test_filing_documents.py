"""Any filing's documents: types from the SEC's header pages, an exhibit found by type, long
documents paged by offset, EDGAR full-text search, filers missing from the ticker table, and an
as-of date that hides what came later."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from dexter.data.router import DataRouter
from dexter.data.sec.filing_docs import parse_index_headers
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from dexter.tools.base import ToolContext
from dexter.tools.finance.datacalls import (
    DocumentArgs,
    DocumentsArgs,
    FilingDocumentCall,
    FilingDocumentsCall,
    Filings,
    FilingsArgs,
    SearchArgs,
    SecSearch,
)
from tests.support.filing_folder import (
    BUCKLE_ACCESSION,
    BUCKLE_EXHIBIT,
    BUCKLE_FOLDER,
    buckle_folder,
)
from tests.support.fixtures import fixtures_dir
from tests.support.sec_mirror import Mirror, mirror_transport

AGENT = "Dexter Tests tests@example.com"
EFTS = "efts.sec.gov/LATEST/search-index"
SEARCH_REPLY = (Path(__file__).parent / "data" / "efts-search-buckle.json").read_bytes()
APPLE_ACCESSION = "0000320193-24-000123"
APPLE_FOLDER = "www.sec.gov/Archives/edgar/data/320193/000032019324000123"


def apple_folder() -> dict[str, bytes]:
    """The Apple FY2024 10-K folder: the real recorded document, with a listing composed in
    index.json's documented shape (no header pages, so types come from the submissions)."""
    listing = {
        "directory": {
            "item": [
                {"name": "aapl-20240928.htm", "size": "1500000"},
                {"name": "aapl-20240928_htm.xml", "size": "900000"},
                {"name": f"{APPLE_ACCESSION}.txt", "size": ""},
            ]
        }
    }
    return {f"{APPLE_FOLDER}/index.json": json.dumps(listing).encode()}


def router_for(tmp_path: Path, mirror: Mirror, **settings: Any) -> DataRouter:
    options: dict[str, Any] = {"cache_dir": tmp_path / "cache", "sec_user_agent": AGENT}
    options.update(settings)
    data = DataSettings(**options)
    sec = SecEdgarProvider(data, transport=mirror_transport(mirror))
    return DataRouter([sec], as_of=data.as_of)


@pytest.fixture
def mirror() -> Mirror:
    fixtures_dir()
    return Mirror({**buckle_folder(), **apple_folder(), EFTS: SEARCH_REPLY})


def test_index_headers_give_each_documents_type() -> None:
    docs = fixtures_dir() / "sec-documents"
    page = (docs / "0000905729-24-000095-index-headers.html").read_text()
    header = parse_index_headers(page, folder_url="https://www.sec.gov/x")
    assert (header.form, header.filing_date, header.report_date) == (
        "8-K",
        "2024-06-03",
        "2024-05-29",
    )
    assert header.company_name == "CHOICEONE FINANCIAL SERVICES INC"
    assert header.items == ["Submission of Matters to a Vote of Security Holders"]
    first = header.documents[0]
    assert (first.sequence, first.type, first.name) == (1, "8-K", "choice8k_060324.htm")
    assert any(d.type == "EX-101.SCH" for d in header.documents)
    other = parse_index_headers(
        (docs / "0001971857-23-000246-index-headers.html").read_text(), folder_url="x"
    )
    assert other.form == "144" and other.company_name == "CONSUMERS ENERGY CO"
    assert [(d.type, d.name) for d in other.documents] == [("144", "primary_doc.xml")]


async def test_exhibit_99_1_by_type_with_citation(tmp_path: Path, mirror: Mirror) -> None:
    router = router_for(tmp_path, mirror)
    ctx = ToolContext()
    listing = await FilingDocumentsCall(router).run(
        DocumentsArgs(company="BKE", accession_number=BUCKLE_ACCESSION), ctx
    )
    assert "| 2 | EX-99.1 | bke20241122-8kexhibit.htm |" in listing.content
    assert "Results of Operations and Financial Condition" in listing.content
    result = await FilingDocumentCall(router).run(
        DocumentArgs.model_validate(
            {"company": "BKE", "accession_number": BUCKLE_ACCESSION, "document": "ex-99.1"}
        ),
        ctx,
    )
    text = " ".join(result.content.split())
    assert "net income for the fiscal quarter ended November 2, 2024 was $44.2 million" in text
    assert "<untrusted_content" in result.content
    exhibit = next(e for e in ctx.sources.entries() if e.url and e.url.endswith(BUCKLE_EXHIBIT))
    assert exhibit.url == f"https://{BUCKLE_FOLDER}/{BUCKLE_EXHIBIT}"
    assert BUCKLE_ACCESSION in exhibit.label and "EX-99.1" in exhibit.label
    assert f"[{exhibit.id}]" in result.content
    assert result.data["type"] == "EX-99.1"


async def test_offsets_page_a_document_with_nothing_lost_or_repeated(
    tmp_path: Path, mirror: Mirror
) -> None:
    router = router_for(tmp_path, mirror)
    call = FilingDocumentCall(router)
    whole = await router.filing_document("AAPL", APPLE_ACCESSION)
    assert whole.name == "aapl-20240928.htm" and whole.form == "10-K"
    parts: list[str] = []
    offset: int | None = 0
    calls = 0
    while offset is not None and calls < 6:
        result = await call.run(
            DocumentArgs(
                company="AAPL", accession_number=APPLE_ACCESSION, offset=offset, max_chars=30_000
            ),
            ToolContext(),
        )
        assert result.data["offset"] == offset
        parts.append(whole.text[offset : result.data["next_offset"] or len(whole.text)])
        offset = result.data["next_offset"]
        calls += 1
    # Six 30,000-character parts take the first ~180,000 characters, exactly once each.
    assert "".join(parts) == whole.text[: sum(len(p) for p in parts)]
    assert sum(len(p) for p in parts) > 150_000
    # The last part asked for, near the end, says so; the one after the end is empty.
    tail = await call.run(
        DocumentArgs(
            company="AAPL",
            accession_number=APPLE_ACCESSION,
            offset=len(whole.text) - 1_000,
            max_chars=2_000,
        ),
        ToolContext(),
    )
    assert tail.data["next_offset"] is None and "More follows" not in tail.content


async def test_latest_earnings_release_without_accession(tmp_path: Path) -> None:
    """form + items + dates pick the filing, so "Apple's last earnings release" is one call."""
    mirror = Mirror()
    router = router_for(tmp_path, mirror)
    found = await router.filings("AAPL", forms=["8-K"], items=["2.02"], limit=3)
    assert found and all("2.02" in f.items for f in found)
    ranged = await router.filings(
        "AAPL", forms=["8-K"], filed_gte="2024-01-01", filed_lte="2024-12-31", limit=200
    )
    assert ranged and all("2024-01-01" <= f.filing_date <= "2024-12-31" for f in ranged)
    listed = await Filings(router).run(
        FilingsArgs.model_validate(
            {"company": "AAPL", "forms": "8-K", "items": "Item 2.02", "limit": 500}
        ),
        ToolContext(),
    )
    assert listed.data["count"] >= 3 and "2.02" in listed.content


async def test_sec_search_hits_open_as_documents(tmp_path: Path, mirror: Mirror) -> None:
    router = router_for(tmp_path, mirror)
    ctx = ToolContext()
    result = await SecSearch(router).run(
        SearchArgs.model_validate(
            {
                "query": '"fiscal quarter ended November 2, 2024"',
                "forms": "8-K",
                "start_date": "2024-11",
                "company": "BKE",
            }
        ),
        ctx,
    )
    request = mirror.requests[-1]
    assert "forms=8-K" in request and "dateRange=custom" in request
    assert "startdt=2024-11-01" in request and "ciks=0000885245" in request
    hit = result.data["hits"][0]
    assert hit["url"] == f"https://{BUCKLE_FOLDER}/{BUCKLE_EXHIBIT}"
    assert hit["file_type"] == "EX-99.1" and hit["items"] == ["2.02", "9.01"]
    assert "<untrusted_content" in result.content
    opened = await router.filing_document(
        hit["cik"], hit["accession_number"], document=hit["file_name"]
    )
    assert "$44.2 million" in opened.text


async def test_a_cik_missing_from_the_ticker_table_resolves(tmp_path: Path) -> None:
    """Today's ticker table without Tesla (as for a delisted filer): the CIK still resolves,
    with the name and former names from the real submissions file."""
    table = json.loads(
        (fixtures_dir() / "sec-mirror/www.sec.gov/files/company_tickers.json").read_bytes()
    )
    without = {k: v for k, v in table.items() if v["cik_str"] != 1318605}
    mirror = Mirror({"www.sec.gov/files/company_tickers.json": json.dumps(without).encode()})
    router = router_for(tmp_path, mirror)
    company = await router.company("1318605")
    assert (company.cik, company.name) == ("0001318605", "Tesla, Inc.")
    again = await router.company(company.ticker)
    assert again.cik == "0001318605"
    filings = await router.filings(company.ticker, forms=["10-K"], limit=2)
    assert filings and filings[0].cik == "0001318605"


async def test_as_of_hides_later_filings_facts_and_hits(tmp_path: Path, mirror: Mirror) -> None:
    day = date(2025, 4, 7)
    router = router_for(tmp_path, mirror, as_of=day)
    filings = await router.filings("AAPL", limit=20)
    assert filings and max(f.filing_date for f in filings) <= "2025-04-07"
    revenue = await router.facts("AAPL", "RevenueFromContractWithCustomerExcludingAssessedTax")
    assert revenue and all((p.filed or "") <= "2025-04-07" for p in revenue)
    income = await router.income_statements("AAPL", period="annual", limit=1)
    assert income[0].report_period.startswith("2024-09")  # FY2025 was filed in October 2025
    page = await router.full_text_search("guidance", forms=["8-K"])
    assert "enddt=2025-04-07" in mirror.requests[-1]
    assert [h.filing_date for h in page.hits] == ["2024-11-22"]
    later = await SecSearch(router).run(SearchArgs(query="guidance"), ToolContext())
    assert "on or before 2025-04-07" in later.content
