"""Comparable companies as a workbook: each company's last filed year on the Inputs sheet, a
price per company in blue, and market value, enterprise value and multiples (EV/revenue,
EV/EBITDA, P/E) as formulas, with the peer median and mean."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from dexter.workbooks.book import Book, address
from dexter.workbooks.history import Fact, History
from dexter.workbooks.inputs import InputsSheet, checks_sheet

# (statement, field, label): what the multiples need from the last filed year.
COMPS_LINES: list[tuple[str, str, str]] = [
    ("income", "revenue", "Revenue"),
    ("income", "operating_income", "Operating income (EBIT)"),
    ("income", "net_income", "Net income"),
    ("cashflow", "depreciation_and_amortization", "Depreciation and amortization"),
    ("balance", "cash_and_equivalents", "Cash and equivalents"),
    ("balance", "current_investments", "Short-term investments"),
    ("balance", "total_debt", "Debt"),
    ("balance", "outstanding_shares", "Shares outstanding"),
]
COMPS_REQUIRED = ("revenue", "operating_income", "net_income", "outstanding_shares")
NOT_MEANINGFUL = "n/m"


@dataclass(frozen=True)
class Peer:
    history: History
    price: float
    price_source: str


@dataclass(frozen=True)
class PeerValues:
    ticker: str
    market_cap: float
    debt: float
    cash: float
    enterprise_value: float
    revenue: float
    ebitda: float
    net_income: float
    ev_revenue: float | str
    ev_ebitda: float | str
    pe: float | str


def _latest(history: History, line: str) -> float:
    return history.value(line, history.years[-1]) or 0.0


def peer_values(peer: Peer) -> PeerValues:
    h = peer.history
    market_cap = peer.price * _latest(h, "outstanding_shares")
    debt = _latest(h, "total_debt")
    cash = _latest(h, "cash_and_equivalents") + _latest(h, "current_investments")
    ev = market_cap + debt - cash
    revenue = _latest(h, "revenue")
    ebitda = _latest(h, "operating_income") + _latest(h, "depreciation_and_amortization")
    net = _latest(h, "net_income")
    return PeerValues(
        ticker=h.ticker,
        market_cap=market_cap,
        debt=debt,
        cash=cash,
        enterprise_value=ev,
        revenue=revenue,
        ebitda=ebitda,
        net_income=net,
        ev_revenue=ev / revenue if revenue > 0 else NOT_MEANINGFUL,
        ev_ebitda=ev / ebitda if ebitda > 0 else NOT_MEANINGFUL,
        pe=market_cap / net if net > 0 else NOT_MEANINGFUL,
    )


def summary(values: list[float | str], how: str) -> float | str:
    numbers = [v for v in values if isinstance(v, float)]
    if not numbers:
        return NOT_MEANINGFUL
    return statistics.median(numbers) if how == "MEDIAN" else statistics.fmean(numbers)


def _merged(peers: list[Peer]) -> History:
    """One Inputs sheet for all: each fact's year carries its company ("AAPL 2025-FY")."""
    facts: list[Fact] = []
    for peer in peers:
        h = peer.history
        latest = h.years[-1]
        facts += [
            replace(f, fiscal_year=f"{h.ticker} {f.fiscal_year}")
            for f in h.facts
            if f.fiscal_year == latest
        ]
    names = ", ".join(p.history.ticker for p in peers)
    return History(names, "Comparable companies", [], [], facts)


COLUMNS = [
    ("Company", "text"),
    ("Fiscal year", "text"),
    ("Share price", "input_per_share"),
    ("Shares outstanding", "shares"),
    ("Market value", "money"),
    ("Debt", "money"),
    ("Cash and short-term investments", "money"),
    ("Enterprise value", "money_total"),
    ("Revenue", "money"),
    ("EBITDA (EBIT + D&A)", "money"),
    ("Net income", "money"),
    ("EV / revenue", "per_share"),
    ("EV / EBITDA", "per_share"),
    ("P / E", "per_share"),
    ("Price source", "note"),
]
EV_REVENUE, EV_EBITDA, PE = 11, 12, 13


def comps_workbook(peers: list[Peer]) -> tuple[Book, list[PeerValues]]:
    book = Book()
    merged = _merged(peers)
    inputs = InputsSheet(book.sheet("Inputs"), merged)
    sheet = book.sheet("Comps")
    sheet.put(0, 0, "Comparable companies, USD millions (multiples in x)", style="title")
    for column, (label, _) in enumerate(COLUMNS):
        sheet.put(2, column, label, style="header")
        sheet.widths[column] = 14
    sheet.widths[0], sheet.widths[len(COLUMNS) - 1] = 10, 40
    values = [peer_values(p) for p in peers]

    def at(row: int, column: int) -> str:
        return address(row, column, absolute=False)

    for i, (peer, v) in enumerate(zip(peers, values, strict=True)):
        r = 3 + i
        h = peer.history
        key = f"{h.ticker} {h.years[-1]}"

        def filed(line: str, key: str = key) -> str:
            return inputs.formula(line, key) or "0"

        sheet.put(r, 0, h.ticker)
        sheet.put(r, 1, h.years[-1])
        sheet.put(r, 2, peer.price, style="input_per_share")
        sheet.put(
            r,
            3,
            _latest(h, "outstanding_shares"),
            formula=filed("outstanding_shares"),
            style="shares",
        )
        sheet.put(r, 4, v.market_cap, formula=f"{at(r, 2)}*{at(r, 3)}", style="money")
        sheet.put(r, 5, v.debt, formula=filed("total_debt"), style="money")
        cash = (
            "+".join(
                f
                for f in (
                    inputs.formula("cash_and_equivalents", key),
                    inputs.formula("current_investments", key),
                )
                if f
            )
            or "0"
        )
        sheet.put(r, 6, v.cash, formula=cash, style="money")
        sheet.put(
            r,
            7,
            v.enterprise_value,
            formula=f"{at(r, 4)}+{at(r, 5)}-{at(r, 6)}",
            style="money_total",
        )
        sheet.put(r, 8, v.revenue, formula=filed("revenue"), style="money")
        sheet.put(
            r,
            9,
            v.ebitda,
            formula=f"{filed('operating_income')}+{filed('depreciation_and_amortization')}",
            style="money",
        )
        sheet.put(r, 10, v.net_income, formula=filed("net_income"), style="money")
        for column, value, top, bottom in (
            (EV_REVENUE, v.ev_revenue, 7, 8),
            (EV_EBITDA, v.ev_ebitda, 7, 9),
            (PE, v.pe, 4, 10),
        ):
            formula = f'IF({at(r, bottom)}>0,{at(r, top)}/{at(r, bottom)},"{NOT_MEANINGFUL}")'
            sheet.put(r, column, value, formula=formula, style="per_share")
        sheet.put(r, 14, peer.price_source, style="note")
    last = 3 + len(peers) - 1
    for offset, how in enumerate(("MEDIAN", "AVERAGE")):
        r = last + 2 + offset
        sheet.put(r, 0, "Median" if how == "MEDIAN" else "Mean", style="header")
        for column, attr in ((EV_REVENUE, "ev_revenue"), (EV_EBITDA, "ev_ebitda"), (PE, "pe")):
            result = summary([getattr(v, attr) for v in values], how)
            cells = f"{at(3, column)}:{at(last, column)}"
            formula = f'IF(COUNT({cells})>0,{how}({cells}),"{NOT_MEANINGFUL}")'
            sheet.put(r, column, result, formula=formula, style="per_share")
    checks_sheet(book.sheet("Checks"), inputs, [])
    return book, values


__all__ = ["COMPS_LINES", "COMPS_REQUIRED", "Peer", "PeerValues", "comps_workbook", "peer_values"]
