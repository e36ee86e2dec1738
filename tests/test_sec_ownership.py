"""Forms 3/4/5 and 13F information tables from real Snowflake and 13F filings, plus hostile XML."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dexter.data.errors import UpstreamError
from dexter.data.models import InstitutionalHolding
from dexter.data.sec.holdings13f import parse_information_table
from dexter.data.sec.ownership import OwnershipFiling, parse_ownership_document
from tests.support.fixtures import fixtures_dir

FORM4_URL = "https://www.sec.gov/Archives/edgar/data/1640147/000140234922000003/form4.xml"


def document(name: str) -> bytes:
    path: Path = fixtures_dir() / "sec-documents" / name
    return path.read_bytes()


def form4() -> OwnershipFiling:
    return parse_ownership_document(
        document("form4.snow.xml"),
        url=FORM4_URL,
        accession_number="0001402349-22-000003",
        filing_date="2022-12-15",
    )


# -- Form 4 --------------------------------------------------------------------------------------


def test_form4_names_issuer_and_reporting_owner() -> None:
    filing = form4()
    assert filing.form == "4"
    assert filing.report_date == "2022-12-13"
    assert (filing.ticker, filing.issuer_name, filing.issuer_cik) == (
        "SNOW",
        "Snowflake Inc.",
        "0001640147",
    )
    [owner] = filing.owners
    assert (owner.name, owner.cik) == ("Scarpelli Michael", "0001402349")
    assert owner.is_officer and not owner.is_director
    assert owner.role == "Chief Financial Officer"


def test_form4_transactions_read_exactly_from_the_xml() -> None:
    trades = form4().trades
    assert len(trades) == 7  # six common-stock rows and one option row
    rows = [
        (
            t.transaction_code,
            t.transaction_shares,
            t.transaction_price_per_share,
            t.shares_owned_after_transaction,
        )
        for t in trades
    ]
    assert rows == [
        ("M", 200000, 8.88, 301097),
        ("S", -73170, 150.841, 227927),
        ("S", -74907, 151.814, 153020),
        ("S", -41986, 152.655, 111034),
        ("S", -5496, 153.872, 105538),
        ("S", -4441, 154.76, 101097),
        ("M", 200000, 0, 2219299),
    ]
    exercise, first_sale, option = trades[0], trades[1], trades[6]
    assert exercise.transaction_type == "Option exercise"
    assert exercise.transaction_value == 1_776_000
    assert exercise.shares_owned_before_transaction == 101097
    assert first_sale.transaction_type == "Open market sale"
    assert first_sale.transaction_value == -11_037_035.97  # 73,170 × $150.841, a disposal
    assert first_sale.shares_owned_before_transaction == 301097
    assert option.security_title == "Stock Option (Right to Buy)"
    assert all(t.transaction_date == "2022-12-13" for t in trades)
    assert all(t.direct_or_indirect == "D" for t in trades)
    assert all(
        t.name == "Scarpelli Michael" and t.title == "Chief Financial Officer" for t in trades
    )
    assert all(t.is_board_director is False for t in trades)
    # The CFO sold exactly the 200,000 shares the option exercise gave him.
    assert -sum(t.transaction_shares or 0 for t in trades if t.transaction_code == "S") == 200000


def test_form4_trades_cite_their_filing() -> None:
    trade = form4().trades[1]
    assert trade.filing_date == "2022-12-15"
    assert trade.source is not None
    assert trade.source.cite() == "SEC EDGAR 4 filed 2022-12-15, acc. 0001402349-22-000003"
    assert trade.source.url == FORM4_URL


def test_form4_indirect_holdings_and_footnotes() -> None:
    filing = form4()
    assert len(filing.holdings) == 8
    trust = filing.holdings[0]
    assert (trust.shares_owned, trust.direct_or_indirect, trust.nature_of_ownership) == (
        577218,
        "I",
        "Trust",
    )
    assert filing.footnotes["F3"].startswith("The price reported in Column 4 is a weighted-average")


def test_a_price_given_only_in_a_footnote_is_none_not_zero() -> None:
    xml = document("form4.snow.xml").replace(b"<value>150.841</value>", b"", 1)
    trade = parse_ownership_document(xml, url=FORM4_URL).trades[1]
    assert trade.transaction_price_per_share is None
    assert trade.transaction_value is None
    assert trade.transaction_shares == -73170


# -- Forms 3 and 5 -------------------------------------------------------------------------------


def test_form3_reports_holdings_not_trades() -> None:
    filing = parse_ownership_document(document("form3.snow.xml"), url="https://x/form3.xml")
    assert filing.form == "3"
    assert filing.owners[0].name == "GARRETT MARK"
    assert filing.owners[0].role == "Director"
    assert filing.trades == []
    assert len(filing.holdings) == 6
    preferred, option = filing.holdings[0], filing.holdings[1]
    assert preferred.is_derivative
    assert preferred.security_title == "Series E Preferred Stock"
    assert preferred.underlying_security_title == "Class B Common Stock"
    assert preferred.underlying_security_shares == 134018
    assert preferred.conversion_or_exercise_price is None  # footnote only
    assert (preferred.direct_or_indirect, preferred.nature_of_ownership) == (
        "I",
        "Limited Partnership",
    )
    assert (option.conversion_or_exercise_price, option.expiration_date) == (3.74, "2028-04-14")
    assert option.underlying_security_shares == 383594
    assert option.report_date == "2020-09-15"


def test_form5_gift() -> None:
    filing = parse_ownership_document(document("form5.snow.xml"), url="https://x/form5.xml")
    assert filing.form == "5"
    [gift] = filing.trades
    assert (gift.name, gift.title, gift.is_board_director) == (
        "McMahon John Dennis",
        "Director",
        True,
    )
    assert (gift.transaction_code, gift.transaction_type) == ("G", "Gift")
    assert (gift.transaction_shares, gift.transaction_price_per_share) == (-61386, 0)
    assert gift.transaction_value == 0
    assert gift.shares_owned_after_transaction == 54666
    assert gift.transaction_date == "2021-12-23"
    assert [h.shares_owned for h in filing.holdings] == [151188, 125737]


def _between(xml: bytes, start: bytes, end: bytes) -> bytes:
    return xml[xml.index(start) : xml.index(end) + len(end)]


def form5_with_derivatives() -> bytes:
    """The real Form 5 with its empty derivative table filled from real rows of the same
    schema: the Form 4's option exercise and the Form 3's first derivative holding (the
    recorded Form 5 reports no derivatives, and a Form 5 may carry both kinds)."""
    exercise = _between(
        document("form4.snow.xml"), b"<derivativeTransaction>", b"</derivativeTransaction>"
    )
    held = _between(document("form3.snow.xml"), b"<derivativeHolding>", b"</derivativeHolding>")
    table = b"<derivativeTable>" + exercise + held + b"</derivativeTable>"
    return document("form5.snow.xml").replace(b"<derivativeTable/>", table)


def test_form5_reads_both_tables_and_keeps_holdings_out_of_trades() -> None:
    filing = parse_ownership_document(form5_with_derivatives(), url="https://x/form5.xml")
    gift, exercise = filing.trades
    assert (gift.transaction_code, gift.transaction_shares) == ("G", -61386)
    assert gift.security_title == "Class A Common Stock"
    assert exercise.security_title == "Stock Option (Right to Buy)"
    assert (exercise.transaction_code, exercise.transaction_shares) == ("M", 200000)
    assert {t.form_type for t in filing.trades} == {"5"}
    assert {t.source.form for t in filing.trades if t.source} == {"5"}
    # Two trust positions and the preferred stock are positions, not transactions.
    assert [(h.is_derivative, h.shares_owned) for h in filing.holdings[:2]] == [
        (False, 151188),
        (False, 125737),
    ]
    [preferred] = [h for h in filing.holdings if h.is_derivative]
    assert preferred.underlying_security_shares == 134018


def test_the_form_edgar_lists_labels_each_row() -> None:
    amended = parse_ownership_document(
        document("form5.snow.xml"), url="https://x/form5.xml", form="5/A"
    )
    assert amended.form == "5/A"
    assert [t.form_type for t in amended.trades] == ["5/A"]
    assert form4().trades[0].form_type == "4"


# -- 13F -----------------------------------------------------------------------------------------


def thirteen_f(
    xml: bytes | None = None,
    *,
    report_period: str | None = "2021-09-30",
    filing_date: str | None = "2021-11-12",
    values_in_thousands: bool | None = None,
) -> list[InstitutionalHolding]:
    return parse_information_table(
        xml if xml is not None else document("13F-HR.infotable.xml"),
        filer_cik=1234567,
        filer_name="Example Advisers LLC",
        report_period=report_period,
        filing_date=filing_date,
        accession_number="0001234567-21-000001",
        url="https://www.sec.gov/Archives/edgar/data/1234567/000123456721000001/infotable.xml",
        values_in_thousands=values_in_thousands,
    )


def test_13f_rows_and_values() -> None:
    rows = thirteen_f()
    assert len(rows) == 255
    first = rows[0]
    assert (first.name_of_issuer, first.cusip, first.title_of_class) == (
        "3M CO",
        "88579Y101",
        "COM",
    )
    assert (first.shares, first.share_type, first.investment_discretion) == (2334, "SH", "SOLE")
    assert first.value_usd == 409469
    assert first.put_call is None
    assert (first.filer_cik, first.filer_name, first.report_period) == (
        "0001234567",
        "Example Advisers LLC",
        "2021-09-30",
    )
    assert first.source is not None and "acc. 0001234567-21-000001" in first.source.cite()
    assert sum(r.value_usd or 0 for r in rows) == 350_153_407
    assert sum(1 for r in rows if r.share_type == "PRN") == 3
    assert rows[-1].name_of_issuer == "ZOOM VIDEO COMMUNICATIONS IN"


def test_13f_value_units() -> None:
    # This manager already reported dollars in 2021 (3M at $175 a share): no thousandfold inflation.
    assert thirteen_f()[0].value_usd == 409469
    # A 2021 table in thousands, as the rules then required, is scaled to dollars.
    in_thousands = _thousands(document("13F-HR.infotable.xml"))
    assert thirteen_f(xml=in_thousands)[0].value_usd == 409_000
    # Filed after the 2023 change: dollars as written, whatever the prices look like.
    assert thirteen_f(xml=in_thousands, filing_date="2023-02-10")[0].value_usd == 409
    # With no date at all, the implied share prices decide.
    assert thirteen_f(in_thousands, report_period=None, filing_date=None)[0].value_usd == 409_000
    assert thirteen_f(report_period=None, filing_date=None)[0].value_usd == 409469
    assert thirteen_f(values_in_thousands=True)[0].value_usd == 409_469_000


def _thousands(xml: bytes) -> bytes:
    """The fixture with every value divided by 1,000, as a pre-2023 table would state it."""
    return re.sub(
        rb"<value>(\d+)</value>", lambda m: b"<value>%d</value>" % (int(m[1]) // 1000), xml
    )


def test_13f_wrong_document_is_named() -> None:
    with pytest.raises(UpstreamError, match="informationTable"):
        thirteen_f(xml=document("form4.snow.xml"))


# -- hostile and broken XML ----------------------------------------------------------------------


def test_truncated_xml_is_an_upstream_error_with_a_clear_message() -> None:
    truncated = document("form4.snow.xml")[:5000]
    with pytest.raises(UpstreamError) as err:
        parse_ownership_document(truncated, url=FORM4_URL)
    assert "malformed or truncated" in str(err.value)
    assert err.value.url == FORM4_URL
    with pytest.raises(UpstreamError, match="malformed or truncated"):
        thirteen_f(xml=document("13F-HR.infotable.xml")[:-200])


def test_empty_and_html_responses_are_rejected() -> None:
    with pytest.raises(UpstreamError, match="empty"):
        parse_ownership_document(b"  ", url=FORM4_URL)
    with pytest.raises(UpstreamError, match="ownershipDocument"):
        parse_ownership_document(b"<html><body>Too many requests</body></html>", url=FORM4_URL)


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<ownershipDocument><remarks>&lol3;</remarks></ownershipDocument>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE d [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<informationTable><infoTable><nameOfIssuer>&xxe;</nameOfIssuer></infoTable></informationTable>"""


def test_entity_declarations_are_refused_before_parsing() -> None:
    with pytest.raises(UpstreamError, match="DOCTYPE or ENTITY"):
        parse_ownership_document(BILLION_LAUGHS, url=FORM4_URL)
    with pytest.raises(UpstreamError, match="DOCTYPE or ENTITY"):
        thirteen_f(xml=EXTERNAL_ENTITY)
    # Hiding the declaration in UTF-16 does not get it past the check.
    with pytest.raises(UpstreamError, match="DOCTYPE or ENTITY"):
        parse_ownership_document(BILLION_LAUGHS.decode().encode("utf-16"), url=FORM4_URL)
