"""Filing lists from real SEC submissions files, filing-folder indexes, frames and URL builders."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dexter.data.errors import NotFound, UpstreamError
from dexter.data.sec import urls
from dexter.data.sec.filing_index import (
    FilingDocument,
    content_documents,
    find_document,
    find_information_table,
    parse_filing_index,
    xml_documents,
)
from dexter.data.sec.frames import screen_rows_from_frame
from dexter.data.sec.ownership import ownership_xml_name
from dexter.data.sec.submissions import (
    company_info,
    filings_from_submissions,
    older_pages,
)
from tests.support.fixtures import fixtures_dir, sec_mirror_file

WWW = "https://www.sec.gov"


def submissions(cik: str) -> dict[str, Any]:
    path = sec_mirror_file(urls.submissions(cik))
    data: dict[str, Any] = json.loads(path.read_text())
    return data


# -- URLs ----------------------------------------------------------------------------------------


def test_url_builders_spell_ciks_and_accessions_as_the_sec_does() -> None:
    assert urls.company_tickers() == "https://www.sec.gov/files/company_tickers.json"
    assert urls.submissions(320193) == "https://data.sec.gov/submissions/CIK0000320193.json"
    assert (
        urls.submissions_page("CIK0001318605-submissions-001.json")
        == "https://data.sec.gov/submissions/CIK0001318605-submissions-001.json"
    )
    assert (
        urls.companyfacts("0000320193")
        == "https://data.sec.gov/api/xbrl/companyfacts/CIK0000320193.json"
    )
    assert (
        urls.companyconcept("320193", "us-gaap", "AccountsPayableCurrent")
        == "https://data.sec.gov/api/xbrl/companyconcept/CIK0000320193/us-gaap/AccountsPayableCurrent.json"
    )
    assert (
        urls.frames("us-gaap", "Revenues", "USD", "CY2024")
        == "https://data.sec.gov/api/xbrl/frames/us-gaap/Revenues/USD/CY2024.json"
    )
    assert (
        urls.frames("us-gaap", "EarningsPerShareBasic", "USD/shares", "CY2019Q1")
        == "https://data.sec.gov/api/xbrl/frames/us-gaap/EarningsPerShareBasic/USD-per-shares/CY2019Q1.json"
    )
    assert (
        urls.filing_index("0000320193", "0000320193-24-000123")
        == "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/index.json"
    )
    assert (
        urls.filing_document(320193, "0000320193-24-000123", "aapl-20240928.htm")
        == "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"
    )
    assert (
        urls.filing_index_page(320193, "0000320193-24-000123")
        == "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/0000320193-24-000123-index.htm"
    )


def test_url_builders_honour_overridden_bases() -> None:
    assert (
        urls.submissions(320193, "http://127.0.0.1:8123/")
        == "http://127.0.0.1:8123/submissions/CIK0000320193.json"
    )
    assert urls.company_tickers("http://mirror.local") == (
        "http://mirror.local/files/company_tickers.json"
    )


def test_cik_and_accession_helpers() -> None:
    assert urls.pad_cik(320193) == "0000320193"
    assert urls.pad_cik("CIK0000320193") == "0000320193"
    assert urls.accession_nodash("0000320193-24-000123") == "000032019324000123"
    with pytest.raises(ValueError, match="not a CIK"):
        urls.pad_cik("AAPL")


# -- submissions ---------------------------------------------------------------------------------


def test_apple_10k_list_is_newest_first_with_accessions_dates_and_documents() -> None:
    filings = filings_from_submissions(
        submissions("320193"), ticker="aapl", forms=["10-K"], www_base=WWW
    )
    assert len(filings) == 11  # FY2015 .. FY2025 in the recent table
    latest, fy2024 = filings[0], filings[1]
    assert latest.accession_number == "0000320193-25-000079"
    assert latest.filing_date == "2025-10-31"
    assert latest.report_date == "2025-09-27"
    assert latest.url == (
        "https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/aapl-20250927.htm"
    )
    assert latest.ticker == "AAPL"
    assert latest.cik == "0000320193"
    assert fy2024.accession_number == "0000320193-24-000123"
    assert fy2024.report_date == "2024-09-28"
    assert fy2024.primary_document == "aapl-20240928.htm"
    # The URL we build is the very document the mirror recorded.
    assert sec_mirror_file(fy2024.url).is_file()
    assert filings[-1].accession_number == "0001193125-15-356351"
    dates = [f.filing_date for f in filings]
    assert dates == sorted(dates, reverse=True)
    assert {f.filing_type for f in filings} == {"10-K"}


def test_form_filter_and_limit() -> None:
    data = submissions("320193")
    everything = filings_from_submissions(data, ticker="AAPL", www_base=WWW)
    assert len(everything) == 1005
    periodic = filings_from_submissions(data, ticker="AAPL", forms=["10-k", "10-Q "], limit=5)
    assert len(periodic) == 5
    assert [(f.filing_type, f.accession_number) for f in periodic[:2]] == [
        ("10-Q", "0000320193-26-000006"),
        ("10-K", "0000320193-25-000079"),
    ]
    assert {f.filing_type for f in periodic} == {"10-K", "10-Q"}
    assert len(filings_from_submissions(data, ticker="AAPL", forms=["10-Q"])) == 33
    eight_k = filings_from_submissions(data, ticker="AAPL", forms=["8-K"], limit=2)
    assert eight_k[0].description is not None and "items 5.07,9.01" in eight_k[0].description


def test_amendments_only_when_asked() -> None:
    data = submissions("1318605")
    plain = filings_from_submissions(data, ticker="TSLA", forms=["10-K"])
    with_amendments = filings_from_submissions(
        data, ticker="TSLA", forms=["10-K"], include_amendments=True
    )
    only_amendments = filings_from_submissions(data, ticker="TSLA", forms=["10-K/A"])
    assert {f.filing_type for f in plain} == {"10-K"}
    assert only_amendments and {f.filing_type for f in only_amendments} == {"10-K/A"}
    assert len(with_amendments) == len(plain) + len(only_amendments)


def test_base_url_override_reaches_filing_urls() -> None:
    filings = filings_from_submissions(
        submissions("1045810"), ticker="NVDA", forms=["10-K"], limit=1, www_base="http://x.test/"
    )
    assert filings[0].url.startswith("http://x.test/Archives/edgar/data/1045810/")


def test_company_info_names_filer_fiscal_year_end_and_exchange() -> None:
    apple = company_info(submissions("320193"))
    assert apple.name == "Apple Inc."
    assert apple.cik == "0000320193"
    assert "AAPL" in apple.tickers
    assert apple.fiscal_year_end == "0926"
    assert apple.sic == "3571"
    assert apple.sic_description == "Electronic Computers"
    company = apple.company("aapl")
    assert (company.ticker, company.exchange, company.cik) == ("AAPL", "Nasdaq", "0000320193")
    assert company_info(submissions("1045810")).fiscal_year_end == "0131"


def test_older_pages_are_listed_with_their_date_ranges() -> None:
    tesla = older_pages(submissions("1318605"))
    assert [p.name for p in tesla] == ["CIK0001318605-submissions-001.json"]
    assert tesla[0].filing_count == 347
    assert (tesla[0].filing_from, tesla[0].filing_to) == ("2005-02-17", "2013-12-10")
    assert tesla[0].reaches_back_to("2010-01-01")
    assert not tesla[0].reaches_back_to("2014-01-01")

    microsoft = older_pages(submissions("789019"))
    assert [p.filing_to for p in microsoft] == ["2019-11-06", "2008-01-30"]  # newest first


def test_an_older_page_with_top_level_columns_parses_the_same_way() -> None:
    recent = submissions("320193")["filings"]["recent"]
    page = {column: values[900:960] for column, values in recent.items()}  # a page's shape
    filings = filings_from_submissions(page, ticker="AAPL", cik=320193, forms=["10-K"])
    assert [f.accession_number for f in filings] == ["0001193125-15-356351"]
    with pytest.raises(UpstreamError, match="no CIK"):
        filings_from_submissions(page, ticker="AAPL")


def test_malformed_submissions_are_reported_not_crashed_on() -> None:
    with pytest.raises(UpstreamError, match=r"filings\.recent"):
        filings_from_submissions({"cik": "320193", "filings": {}}, ticker="AAPL")
    broken = {
        "cik": "320193",
        "filings": {
            "recent": {
                "accessionNumber": ["a", "b"],
                "filingDate": ["2024-01-01"],
                "form": ["10-K", "10-Q"],
            }
        },
    }
    with pytest.raises(UpstreamError, match="filingDate"):
        filings_from_submissions(broken, ticker="AAPL")
    with pytest.raises(UpstreamError):
        company_info({"filings": {}})


# -- filing folder index -------------------------------------------------------------------------


def _index() -> list[FilingDocument]:
    path = fixtures_dir() / "sec-documents" / "0001213900-24-004875-index.json"
    folder = urls.filing_folder(1648960, "0001213900-24-004875")
    return parse_filing_index(json.loads(path.read_text()), folder_url=folder)


def test_filing_index_lists_documents_with_sizes_and_urls() -> None:
    documents = _index()
    assert len(documents) == 25
    main = find_document(documents, "ea191807-8k_datchat.htm")
    assert main.size == 47202
    assert main.url == (
        "https://www.sec.gov/Archives/edgar/data/1648960/000121390024004875/ea191807-8k_datchat.htm"
    )
    assert main.last_modified == "2024-01-19 16:21:45"
    assert find_document(documents, "0001213900-24-004875-index.html").size is None

    names = [d.name for d in content_documents(documents)]
    assert "ea191807ex99-1_datchat.htm" in names
    assert not any(n.endswith(("-index.html", ".txt", ".zip")) or n == "R1.htm" for n in names)
    # Only XBRL linkbases are XML in this 8-K: there is no filer XML document.
    assert xml_documents(documents) == []


def test_missing_document_names_what_the_folder_holds() -> None:
    with pytest.raises(NotFound) as err:
        find_document(_index(), "form4.xml")
    assert "ea191807-8k_datchat.htm" in str(err.value)


def test_13f_information_table_is_found_beside_the_cover_page() -> None:
    listing = {
        "directory": {
            "item": [
                {"name": "0001104659-24-000001-index.html", "size": ""},
                {"name": "primary_doc.xml", "size": "4800"},
                {"name": "46994.xml", "size": "118000"},
                {"name": "0001104659-24-000001.txt", "size": "130000"},
            ]
        }
    }
    documents = parse_filing_index(listing, folder_url="https://www.sec.gov/Archives/x/y")
    assert find_information_table(documents).name == "46994.xml"
    with pytest.raises(NotFound, match="information-table"):
        find_information_table(documents[:2])
    with pytest.raises(UpstreamError):
        parse_filing_index({"oops": 1}, folder_url="https://www.sec.gov/Archives/x/y")


def test_ownership_xml_name_strips_the_xsl_rendering_folder() -> None:
    assert ownership_xml_name("xslF345X05/wk-form4_1772148856.xml") == "wk-form4_1772148856.xml"
    assert ownership_xml_name("form4.xml") == "form4.xml"


# -- frames --------------------------------------------------------------------------------------


FRAME = {
    "taxonomy": "us-gaap",
    "tag": "Revenues",
    "ccp": "CY2024",
    "uom": "USD",
    "label": "Revenues",
    "pts": 3,
    "data": [
        {
            "accn": "0000950170-24-000001",
            "cik": 1750,
            "entityName": "AAR CORP.",
            "loc": "US-IL",
            "end": "2024-05-31",
            "val": 2318900000,
        },
        {
            "accn": "0001045810-25-000023",
            "cik": 1045810,
            "entityName": "NVIDIA CORP",
            "loc": "US-CA",
            "end": "2025-01-26",
            "val": 130497000000,
        },
        {"accn": "x", "cik": 2, "entityName": "Broken", "end": "2024-12-31", "val": "n/a"},
    ],
}


def test_frame_rows_rank_filers_with_provenance() -> None:
    rows = screen_rows_from_frame(FRAME, tickers={"0001045810": "NVDA"})
    assert [r.name for r in rows] == ["NVIDIA CORP", "AAR CORP."]  # largest first, bad row skipped
    top = rows[0]
    assert (top.cik, top.ticker, top.value) == ("0001045810", "NVDA", 130497000000)
    assert (top.concept, top.unit, top.period) == ("us-gaap:Revenues", "USD", "CY2024")
    assert top.accession_number == "0001045810-25-000023"
    assert rows[1].ticker is None
    with pytest.raises(UpstreamError, match="no data"):
        screen_rows_from_frame({"taxonomy": "us-gaap"})
