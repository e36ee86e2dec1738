"""Insider ownership documents: Forms 3, 4 and 5 (and their amendments) as typed records.

Form 4 reports transactions (trades); Form 3 reports what an insider holds on becoming one; Form 5
catches up on transactions and holdings not reported during the year. All share one XML schema
(`ownershipDocument`), so one parser serves them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from pydantic import Field

from dexter.data.errors import UpstreamError
from dexter.data.models import InsiderTrade, Number, Record, Source
from dexter.data.sec.xmlsafe import child, children, descendants, local_name, parse_xml, text

PROVIDER = "SEC EDGAR"

# Transaction codes from the Form 4 instructions, in words a reader understands.
TRANSACTION_TYPES: dict[str, str] = {
    "P": "Open market purchase",
    "S": "Open market sale",
    "A": "Grant/award",
    "D": "Disposition to issuer",
    "F": "Tax withholding",
    "I": "Discretionary transaction",
    "M": "Option exercise",
    "C": "Conversion of derivative",
    "E": "Expiration of short derivative",
    "H": "Expiration of long derivative",
    "O": "Out-of-the-money exercise",
    "X": "In-the-money exercise",
    "G": "Gift",
    "L": "Small acquisition",
    "W": "Inheritance",
    "Z": "Voting trust deposit/withdrawal",
    "J": "Other acquisition or disposition",
    "K": "Equity swap",
    "U": "Tender in change of control",
    "V": "Voluntarily reported",
}


class ReportingOwner(Record):
    name: str
    cik: str | None = None
    is_director: bool = False
    is_officer: bool = False
    is_ten_percent_owner: bool = False
    is_other: bool = False
    officer_title: str | None = None
    other_text: str | None = None

    @property
    def role(self) -> str | None:
        """Relationship to the issuer: "Chief Financial Officer", "Director, 10% Owner" …"""
        roles: list[str] = []
        if self.officer_title:
            roles.append(self.officer_title)
        elif self.is_officer:
            roles.append("Officer")
        if self.is_director:
            roles.append("Director")
        if self.is_ten_percent_owner:
            roles.append("10% Owner")
        if self.is_other:
            roles.append(self.other_text or "Other")
        return ", ".join(roles) or None


class OwnershipHolding(Record):
    """A position held (not traded) on the report date: Form 3 rows, holding rows of Forms 4/5."""

    ticker: str
    issuer: str | None = None
    name: str
    title: str | None = None
    form: str
    report_date: str | None = None
    filing_date: str | None = None
    security_title: str | None = None
    is_derivative: bool = False
    shares_owned: Number | None = None
    underlying_security_title: str | None = None
    underlying_security_shares: Number | None = None
    conversion_or_exercise_price: Number | None = None
    expiration_date: str | None = None
    direct_or_indirect: str | None = None  # "D" or "I"
    nature_of_ownership: str | None = None  # e.g. "Trust", "By spouse"
    source: Source


class OwnershipFiling(Record):
    form: str  # "3", "4", "5", "4/A" …
    report_date: str | None = None  # periodOfReport
    issuer_cik: str | None = None
    issuer_name: str | None = None
    ticker: str
    owners: list[ReportingOwner]
    trades: list[InsiderTrade] = Field(default_factory=list)
    holdings: list[OwnershipHolding] = Field(default_factory=list)
    footnotes: dict[str, str] = Field(default_factory=dict)
    remarks: str | None = None
    source: Source


def ownership_xml_name(primary_document: str) -> str:
    """The raw XML behind a rendered primary document.

    Submissions list Form 3/4/5 primary documents as `xslF345X05/form4.xml`, the SEC's HTML view;
    dropping the `xsl…/` folder gives the XML the filer submitted.
    """
    head, sep, tail = primary_document.partition("/")
    return tail if sep and head.lower().startswith("xsl") else primary_document


def parse_ownership_document(
    xml: bytes | str,
    *,
    url: str,
    accession_number: str | None = None,
    filing_date: str | None = None,
    form: str | None = None,
) -> OwnershipFiling:
    """Issuer, reporting owners, transactions and holdings of one Form 3, 4 or 5 XML document.

    `form` is the form type as EDGAR's filing list gives it ("4/A", "5"); the document's own
    `documentType` is used when it is not given. Transaction rows of both tables become trades
    and holding rows holdings, whatever the form: a Form 5 has both kinds in both tables."""
    root = parse_xml(xml, what="ownership document (Form 3/4/5)", url=url)
    if local_name(root.tag) != "ownershipDocument":
        raise UpstreamError(
            f"Expected a Form 3/4/5 ownershipDocument but got <{local_name(root.tag)}>.",
            url=url,
            hint="Use the filing's raw XML, not the XSL-rendered page (see ownership_xml_name).",
        )
    form = (form or "").strip().upper() or text(root, "documentType") or "4"
    ticker = (text(root, "issuer", "issuerTradingSymbol") or "").upper()
    issuer = text(root, "issuer", "issuerName")
    source = Source(
        provider=PROVIDER,
        url=url,
        form=form,
        accession_number=accession_number,
        filing_date=filing_date,
    )
    owners = [_owner(el) for el in children(root, "reportingOwner")]
    if not owners:
        raise UpstreamError("The ownership document names no reporting owner.", url=url)

    # A joint filing covers every owner at once; naming them all keeps a name search working.
    ctx = _Context(
        ticker=ticker,
        issuer=issuer,
        name="; ".join(o.name for o in owners),
        title=owners[0].role,
        is_director=any(o.is_director for o in owners),
        form=form,
        report_date=text(root, "periodOfReport"),
        filing_date=filing_date,
        source=source,
    )
    trades: list[InsiderTrade] = []
    holdings: list[OwnershipHolding] = []
    for table, derivative in (("nonDerivativeTable", False), ("derivativeTable", True)):
        table_el = child(root, table)
        if table_el is None:
            continue
        for row in table_el:
            kind = local_name(row.tag) if isinstance(row.tag, str) else ""
            if kind.endswith("Transaction"):
                trades.append(_trade(row, ctx))
            elif kind.endswith("Holding"):
                holdings.append(_holding(row, ctx, derivative=derivative))

    footnotes = {
        el.get("id", ""): " ".join("".join(el.itertext()).split())
        for el in descendants(root, "footnote")
        if el.get("id")
    }
    return OwnershipFiling(
        form=form,
        report_date=text(root, "periodOfReport"),
        issuer_cik=text(root, "issuer", "issuerCik"),
        issuer_name=issuer,
        ticker=ticker,
        owners=owners,
        trades=trades,
        holdings=holdings,
        footnotes=footnotes,
        remarks=text(root, "remarks"),
        source=source,
    )


def _owner(el: ET.Element) -> ReportingOwner:
    rel = child(el, "reportingOwnerRelationship")
    return ReportingOwner(
        name=text(el, "reportingOwnerId", "rptOwnerName") or "(unnamed)",
        cik=text(el, "reportingOwnerId", "rptOwnerCik"),
        is_director=_flag(text(rel, "isDirector")),
        is_officer=_flag(text(rel, "isOfficer")),
        is_ten_percent_owner=_flag(text(rel, "isTenPercentOwner")),
        is_other=_flag(text(rel, "isOther")),
        officer_title=text(rel, "officerTitle"),
        other_text=text(rel, "otherText"),
    )


@dataclass(frozen=True)
class _Context:
    """What every row of one document shares."""

    ticker: str
    issuer: str | None
    name: str
    title: str | None
    is_director: bool
    form: str
    report_date: str | None
    filing_date: str | None
    source: Source


def _trade(row: ET.Element, ctx: _Context) -> InsiderTrade:
    code = text(row, "transactionCoding", "transactionCode")
    shares = _number(_value(row, "transactionAmounts", "transactionShares"))
    # Prices given only as a footnote ("weighted average, see F3") have no value element: None.
    price = _number(_value(row, "transactionAmounts", "transactionPricePerShare"))
    acquired = _value(row, "transactionAmounts", "transactionAcquiredDisposedCode")
    after = _number(_value(row, "postTransactionAmounts", "sharesOwnedFollowingTransaction"))

    signed = shares
    if shares is not None and acquired == "D":
        signed = -shares
    value = _round(signed * price) if signed is not None and price is not None else None
    before = _tidy(after - signed) if after is not None and signed is not None else None
    return InsiderTrade(
        ticker=ctx.ticker,
        issuer=ctx.issuer,
        name=ctx.name,
        title=ctx.title,
        is_board_director=ctx.is_director,
        transaction_date=_value(row, "transactionDate"),
        transaction_code=code,
        transaction_type=TRANSACTION_TYPES.get(code or "", code),
        transaction_shares=signed,
        transaction_price_per_share=price,
        transaction_value=value,
        shares_owned_before_transaction=before,
        shares_owned_after_transaction=after,
        security_title=_value(row, "securityTitle"),
        direct_or_indirect=_value(row, "ownershipNature", "directOrIndirectOwnership"),
        filing_date=ctx.filing_date,
        form_type=ctx.form,
        source=ctx.source,
    )


def _holding(row: ET.Element, ctx: _Context, *, derivative: bool) -> OwnershipHolding:
    return OwnershipHolding(
        ticker=ctx.ticker,
        issuer=ctx.issuer,
        name=ctx.name,
        title=ctx.title,
        form=ctx.form,
        report_date=ctx.report_date,
        filing_date=ctx.filing_date,
        security_title=_value(row, "securityTitle"),
        is_derivative=derivative,
        shares_owned=_number(
            _value(row, "postTransactionAmounts", "sharesOwnedFollowingTransaction")
        ),
        underlying_security_title=_value(row, "underlyingSecurity", "underlyingSecurityTitle"),
        underlying_security_shares=_number(
            _value(row, "underlyingSecurity", "underlyingSecurityShares")
        ),
        conversion_or_exercise_price=_number(_value(row, "conversionOrExercisePrice")),
        expiration_date=_value(row, "expirationDate"),
        direct_or_indirect=_value(row, "ownershipNature", "directOrIndirectOwnership"),
        nature_of_ownership=_value(row, "ownershipNature", "natureOfOwnership"),
        source=ctx.source,
    )


def _value(row: ET.Element, *path: str) -> str | None:
    """Most fields wrap their datum in <value> next to optional <footnoteId>s; a few do not."""
    el = child(row, *path)
    if el is None:
        return None
    wrapped = child(el, "value")
    return text(wrapped) if wrapped is not None else text(el)


def _number(raw: str | None) -> Number | None:
    if raw is None:
        return None
    try:
        value = Decimal(raw.replace(",", "").replace("$", "").strip())
    except InvalidOperation:
        return None
    return _tidy(value)


def _tidy(value: Number | Decimal) -> Number:
    """Whole numbers as int (200000.0 shares reads as 200000), others as float."""
    if value == int(value):
        return int(value)
    return float(value)


def _round(value: Number) -> Number:
    return _tidy(round(Decimal(str(value)), 2))


def _flag(raw: str | None) -> bool:
    return (raw or "").strip().lower() in {"1", "true", "y", "yes"}
