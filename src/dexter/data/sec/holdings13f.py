"""13F-HR information tables: what an institutional manager held at quarter end.

Units: the SEC changed the table's `value` column from thousands of dollars to dollars for filings
made on or after 2023-01-03 (first used for periods ending 2022-12-31). We decide the unit from the
filing date (else the report period), and for older filings we also check the implied price per
share, because some managers already reported dollars before the change (the 255-row fixture is
one); multiplying those by 1,000 would overstate every position a thousandfold.
"""

from __future__ import annotations

import statistics
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from dexter.data.errors import UpstreamError
from dexter.data.models import InstitutionalHolding, Number, Source
from dexter.data.sec import urls
from dexter.data.sec.xmlsafe import child, descendants, local_name, parse_xml, text

PROVIDER = "SEC EDGAR"
DOLLARS_SINCE_FILING_DATE = "2023-01-03"
DOLLARS_SINCE_REPORT_PERIOD = "2022-12-31"

# If treating `value` as thousands makes the median share price above this, the filer wrote dollars.
_IMPLAUSIBLE_MEDIAN_PRICE = 5_000


def parse_information_table(
    xml: bytes | str,
    *,
    filer_cik: str | int | None,
    filer_name: str | None,
    report_period: str | None,
    filing_date: str | None,
    accession_number: str | None,
    url: str,
    form_type: str = "13F-HR",
    values_in_thousands: bool | None = None,
) -> list[InstitutionalHolding]:
    """Every row of a 13F information table, with `value_usd` in dollars.

    `values_in_thousands` overrides the unit decision described in the module docstring.
    """
    root = parse_xml(xml, what="13F information table", url=url)
    if local_name(root.tag) != "informationTable":
        raise UpstreamError(
            f"Expected a 13F informationTable but got <{local_name(root.tag)}>.",
            url=url,
            hint="The table is the filing's second XML file, not primary_doc.xml.",
        )
    rows = [_row(el) for el in descendants(root, "infoTable")]
    if values_in_thousands is None:
        values_in_thousands = _reported_in_thousands(rows, report_period, filing_date)
    scale = 1000 if values_in_thousands else 1

    source = Source(
        provider=PROVIDER,
        url=url,
        form=form_type,
        accession_number=accession_number,
        filing_date=filing_date,
    )
    cik = urls.pad_cik(filer_cik) if filer_cik is not None else None
    holdings = []
    for row in rows:
        if not row.name or not row.cusip:
            continue  # a row without issuer or CUSIP identifies nothing
        holdings.append(
            InstitutionalHolding(
                name_of_issuer=row.name,
                cusip=row.cusip.upper(),
                title_of_class=row.title_of_class,
                report_period=report_period,
                filing_date=filing_date,
                form_type=form_type,
                accession_number=accession_number,
                put_call=row.put_call,
                shares=row.shares,
                share_type=row.share_type,
                value_usd=row.value * scale if row.value is not None else None,
                investment_discretion=row.investment_discretion,
                filer_cik=cik,
                filer_name=filer_name,
                source=source,
            )
        )
    return holdings


@dataclass(frozen=True)
class _Row:
    name: str | None
    title_of_class: str | None
    cusip: str | None
    value: Number | None
    shares: Number | None
    share_type: str | None
    put_call: str | None
    investment_discretion: str | None


def _row(el: ET.Element) -> _Row:
    amount = child(el, "shrsOrPrnAmt")
    return _Row(
        name=text(el, "nameOfIssuer"),
        title_of_class=text(el, "titleOfClass"),
        cusip=text(el, "cusip"),
        value=_number(text(el, "value")),
        shares=_number(text(amount, "sshPrnamt")),
        share_type=text(amount, "sshPrnamtType"),
        put_call=text(el, "putCall"),
        investment_discretion=text(el, "investmentDiscretion"),
    )


def _reported_in_thousands(
    rows: list[_Row], report_period: str | None, filing_date: str | None
) -> bool:
    if filing_date:
        if filing_date >= DOLLARS_SINCE_FILING_DATE:
            return False
    elif report_period and report_period >= DOLLARS_SINCE_REPORT_PERIOD:
        return False
    prices = [
        row.value / row.shares
        for row in rows
        if row.value is not None and row.shares and row.share_type != "PRN" and not row.put_call
    ]
    if not prices:
        return bool(filing_date or report_period)
    median_dollars_per_share = statistics.median(prices)
    if not (filing_date or report_period):
        # No date at all: the prices alone decide. Real share prices read as thousands come out
        # below $1 per share almost always; read as dollars they look like prices.
        return median_dollars_per_share < 1
    return median_dollars_per_share * 1000 <= _IMPLAUSIBLE_MEDIAN_PRICE


def _number(raw: str | None) -> Number | None:
    if raw is None:
        return None
    try:
        value = Decimal(raw.replace(",", ""))
    except InvalidOperation:
        return None
    return int(value) if value == int(value) else float(value)
