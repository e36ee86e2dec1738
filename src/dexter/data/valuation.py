"""Valuation on any day without a key: the price that day joined with the statements FILED BY
that day (point-in-time, no look-ahead).

Decisions, made once:
* **Price**: the close of the last trading day on or before the day (at most a week before),
  from the routed price source (Financial Datasets when keyed, else Yahoo Finance).
* **Statements**: the company's SEC companyfacts cut at the day (only values filed on or before
  it); income and cash flow are the trailing twelve months ending at the latest quarter filed
  (the latest fiscal year when no TTM can be built), the balance sheet is the latest filed.
* **Shares**: the latest cover-page count filed by the day (dei:EntityCommonStockSharesOutstanding,
  summed over share classes; else us-gaap:CommonStockSharesOutstanding). Price sources quote every
  close on today's share basis (split-adjusted), so a count filed before a later split is
  multiplied by that split's ratio (the splits the SEC data itself shows, see share_basis.py):
  market cap = close × shares × split factor. Only the share basis looks past the day; no
  figure does.
* **Ratios** are on TTM flows: P/E = market cap / net income, P/S = market cap / revenue,
  P/B = market cap / shareholders' equity, EV = market cap + total debt − cash and equivalents,
  EV/EBITDA with EBITDA = operating income + depreciation and amortisation, EV/sales, dividend
  yield = dividends paid / market cap, FCF yield = free cash flow / market cap. P/E and
  EV/EBITDA on a loss are not meaningful and are left out, with a note.
* Each ratio's `sources` entry cites the filing of its main input and spells its formula; the
  inputs themselves (with their own sources) are kept in `inputs` / `input_sources`.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from pydantic import Field

from dexter.data.errors import NotFound, Unavailable
from dexter.data.models import (
    BalanceSheet,
    CashFlowStatement,
    Company,
    IncomeStatement,
    Number,
    Price,
    Record,
    Source,
)
from dexter.data.provider import Capability
from dexter.data.router import DataRouter
from dexter.data.sec import urls
from dexter.data.sec.facts import FactsIndex, index_facts
from dexter.data.sec.provider import SecEdgarProvider, facts_filed_by
from dexter.data.sec.share_basis import Split
from dexter.data.sec.share_basis import factor as basis_factor

# A close older than this before the day is no price for the day (a delisting, a long halt).
MAX_PRICE_AGE = timedelta(days=7)
SHARE_CONCEPTS = (
    ("dei", "EntityCommonStockSharesOutstanding"),
    ("us-gaap", "CommonStockSharesOutstanding"),
)
RATIOS = (
    "market_cap",
    "enterprise_value",
    "price_to_earnings_ratio",
    "price_to_sales_ratio",
    "price_to_book_ratio",
    "enterprise_value_to_ebitda_ratio",
    "enterprise_value_to_revenue_ratio",
    "dividend_yield",
    "free_cash_flow_yield",
)


class Valuation(Record):
    """Valuation of one company on one day; ratios are plain numbers (0.012 = 1.2%)."""

    ticker: str
    date: str  # the day asked for
    price_date: str | None = None  # the trading day whose close is used
    currency: str | None = None
    market_cap: Number | None = None
    enterprise_value: Number | None = None
    price_to_earnings_ratio: Number | None = None
    price_to_sales_ratio: Number | None = None
    price_to_book_ratio: Number | None = None
    enterprise_value_to_ebitda_ratio: Number | None = None
    enterprise_value_to_revenue_ratio: Number | None = None
    dividend_yield: Number | None = None
    free_cash_flow_yield: Number | None = None
    # What the ratios were computed from: price, shares_outstanding, split_factor, net_income …
    inputs: dict[str, Number] = Field(default_factory=dict)
    input_sources: dict[str, Source] = Field(default_factory=dict)
    # Per ratio: the filing of its main input, with the formula in `concept`.
    sources: dict[str, Source] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class _Filed:
    """The company as known on one day: statements and the latest share count."""

    income: IncomeStatement | None
    balance: BalanceSheet | None
    cashflow: CashFlowStatement | None
    shares: tuple[float, Source] | None


async def valuations(router: DataRouter, ticker: str, days: Sequence[date]) -> list[Valuation]:
    """The valuation on each day (oldest first), from one price request and one companyfacts."""
    if not days:
        return []
    sec = router.provider_of_type(SecEdgarProvider)
    if sec is None:
        raise Unavailable("Valuation needs SEC EDGAR for the statements filed by each day.")
    days = sorted(set(days))
    if router.as_of is not None and days[-1] > router.as_of:
        raise NotFound(
            f"{days[-1]} is after the as-of date {router.as_of}: nothing filed or traded then "
            "can be seen."
        )
    company, document = await sec.companyfacts_document(ticker)
    start = days[0] - MAX_PRICE_AGE - timedelta(days=7)  # room for a long weekend before
    bars = await router.prices(
        company.ticker, start_date=start.isoformat(), end_date=days[-1].isoformat()
    )
    priced_by = next(
        (p.name for p in router.providers if Capability.PRICES in p.capabilities), "prices"
    )
    return await asyncio.to_thread(value_days, company, document, bars, days, priced_by)


def value_days(
    company: Company,
    document: dict[str, Any],
    bars: list[Price],
    days: list[date],
    priced_by: str,
) -> list[Valuation]:
    """The valuations from a companyfacts document and price bars already in hand (pure, CPU
    bound: run it off the event loop)."""
    splits = index_facts(document).splits
    filed_days = sorted(_filing_days(document))
    closes = sorted((bar for bar in bars if bar.close is not None), key=lambda bar: bar.time)
    close_days = [bar.time[:10] for bar in closes]
    known: dict[str, _Filed] = {}
    result = []
    for day in days:
        iso = day.isoformat()
        at = bisect_right(close_days, iso)
        bar = closes[at - 1] if at else None
        if bar is not None and date.fromisoformat(bar.time[:10]) < day - MAX_PRICE_AGE:
            bar = None
        # Everything filed by the day is what was filed by the last filing day before it.
        cut_at = bisect_right(filed_days, iso)
        cut = filed_days[cut_at - 1] if cut_at else None
        if cut is None:
            result.append(_empty(company, iso, f"{company.name} had filed no XBRL data by {iso}."))
            continue
        if cut not in known:
            known[cut] = _filed_by(company, document, cut)
        result.append(_value(company, iso, bar, known[cut], splits, priced_by))
    return result


def _filing_days(document: dict[str, Any]) -> set[str]:
    days: set[str] = set()
    for concepts in (document.get("facts") or {}).values():
        for concept in concepts.values() if isinstance(concepts, dict) else ():
            for points in (concept.get("units") or {}).values():
                days.update(str(p["filed"]) for p in points if p.get("filed"))
    return days


def _filed_by(company: Company, document: dict[str, Any], day: str) -> _Filed:
    cut, _ = facts_filed_by(document, day)
    index = index_facts(cut)
    income = _latest(index, company, "income", ("ttm", "annual"))
    cashflow = _latest(index, company, "cashflow", ("ttm", "annual"))
    balance = _latest(index, company, "balance", ("quarterly", "annual"))
    return _Filed(
        income=income if isinstance(income, IncomeStatement) else None,
        balance=balance if isinstance(balance, BalanceSheet) else None,
        cashflow=cashflow if isinstance(cashflow, CashFlowStatement) else None,
        shares=_shares(company, cut),
    )


def _latest(
    index: FactsIndex, company: Company, statement: Any, periods: tuple[Any, ...]
) -> object | None:
    """The newest record of the first period kind that has one (TTM before annual); when a
    later annual report exists than the TTM (no 10-Q since), the annual one."""
    if not index.has_financials:
        return None
    found = [
        records[0]
        for period in periods
        if (
            records := index.statements(
                ticker=company.ticker, statement=statement, period=period, limit=1
            )
        )
    ]
    if not found:
        return None
    return max(found, key=lambda r: getattr(r, "report_period", ""))


def _shares(company: Company, document: dict[str, Any]) -> tuple[float, Source] | None:
    """The latest share count filed (summed over classes that filing reports), and its source."""
    facts = document.get("facts") or {}
    for taxonomy, name in SHARE_CONCEPTS:
        points = (((facts.get(taxonomy) or {}).get(name) or {}).get("units") or {}).get("shares")
        points = [p for p in points or () if isinstance(p.get("val"), int | float)]
        if not points:
            continue
        # The most recent count (a 10-K/A filed later still carries its older cover date).
        latest = max(points, key=lambda p: (str(p.get("end")), str(p.get("filed"))))
        same = {
            p["val"]
            for p in points
            if p.get("accn") == latest.get("accn") and p.get("end") == latest.get("end")
        }
        accn = str(latest.get("accn") or "")
        source = Source(
            provider="SEC EDGAR",
            url=urls.filing_index(company.cik, accn) if accn else "",
            form=latest.get("form"),
            accession_number=accn or None,
            filing_date=latest.get("filed"),
            concept=f"{taxonomy}:{name}"
            + (f" (sum of {len(same)} classes)" if len(same) > 1 else "")
            + f", as of {latest.get('end')}",
            unit="shares",
        )
        return float(sum(same)), source
    return None


def _empty(company: Company, day: str, note: str) -> Valuation:
    return Valuation(ticker=company.ticker, date=day, notes=[note])


def _value(
    company: Company,
    day: str,
    bar: Price | None,
    filed: _Filed,
    splits: Sequence[Split],
    priced_by: str,
) -> Valuation:
    notes: list[str] = []
    if bar is None or bar.close is None:
        return _empty(company, day, f"No close for {company.ticker} in the week to {day}.")
    if filed.shares is None:
        return _empty(company, day, f"No share count filed by {day}.")
    currency = next(
        (s.currency for s in (filed.income, filed.balance, filed.cashflow) if s is not None),
        "USD",
    )
    if bar.currency and bar.currency != currency:
        return _empty(
            company,
            day,
            f"The price is in {bar.currency} and the statements in {currency}; "
            "no ratio mixes the two.",
        )
    shares, shares_source = filed.shares
    split_factor, applied = basis_factor(splits, shares_source.filing_date or day)
    if applied:
        ratios = ", ".join(f"{s.ratio:g}:1 ({s.year})" for s in applied)
        notes.append(
            f"Share counts filed before the {ratios} split are × {split_factor:g}: prices are "
            "quoted on today's share basis."
        )
    inputs: dict[str, Number] = {
        "price": bar.close,
        "shares_outstanding": shares,
        "split_factor": split_factor,
    }
    input_sources: dict[str, Source] = {"shares_outstanding": shares_source}
    input_sources["price"] = Source(
        provider=priced_by, url="", concept=f"close on {bar.time[:10]}", unit=bar.currency
    )
    holders: dict[str, IncomeStatement | BalanceSheet | CashFlowStatement] = {}

    def take(name: str, *statements: Any, field: str | None = None) -> Number | None:
        for statement in statements:
            value = getattr(statement, field or name, None) if statement is not None else None
            if value is not None:
                inputs[name] = value
                holders[name] = statement
                origin = statement.sources.get(field or name)
                if origin is not None:
                    input_sources[name] = origin
                return value  # type: ignore[no-any-return]
        return None

    income, balance, cashflow = filed.income, filed.balance, filed.cashflow
    revenue = take("revenue", income)
    net_income = take("net_income", income)
    operating_income = take("operating_income", income)
    amortisation = take("depreciation_and_amortization", cashflow, income)
    debt = take("total_debt", balance)
    cash = take("cash_and_equivalents", balance)
    equity = take("shareholders_equity", balance)
    fcf = take("free_cash_flow", cashflow)
    dividends = take("dividends_paid", cashflow, field="dividends_and_other_cash_distributions")
    for statement, what in ((income, "income statement"), (balance, "balance sheet")):
        if statement is not None:
            kind = "TTM" if statement.period == "ttm" else statement.period
            notes.append(f"{what}: {kind} to {statement.report_period}")

    values: dict[str, Number] = {}
    sources: dict[str, Source] = {}

    def put(name: str, value: float | None, formula: str, basis: str) -> None:
        if value is None:
            return
        values[name] = value
        origin = input_sources.get(basis)
        sources[name] = Source(
            provider="computed",
            url=origin.url if origin else "",
            form=origin.form if origin else None,
            accession_number=origin.accession_number if origin else None,
            filing_date=origin.filing_date if origin else None,
            concept=f"computed: {formula}",
        )

    market_cap = bar.close * shares * split_factor
    put("market_cap", market_cap, "close × shares_outstanding × split_factor", "shares_outstanding")
    if debt is None:
        notes.append("No debt reported: enterprise value counts none.")
    ev = market_cap + (debt or 0) - (cash or 0)
    put("enterprise_value", ev, "market_cap + total_debt − cash_and_equivalents", "total_debt")
    if net_income is not None and net_income <= 0:
        notes.append("P/E is not meaningful on a loss (TTM net income ≤ 0).")
    else:
        put("price_to_earnings_ratio", _div(market_cap, net_income), "market_cap / net_income",
            "net_income")  # fmt: skip
    put("price_to_sales_ratio", _div(market_cap, revenue), "market_cap / revenue", "revenue")
    put("price_to_book_ratio", _div(market_cap, equity), "market_cap / shareholders_equity",
        "shareholders_equity")  # fmt: skip
    ebitda = (
        operating_income + amortisation
        if operating_income is not None and amortisation is not None
        else None
    )
    if ebitda is not None:
        inputs["ebitda"] = ebitda
    if ebitda is not None and ebitda <= 0:
        notes.append("EV/EBITDA is not meaningful on negative EBITDA.")
    else:
        put("enterprise_value_to_ebitda_ratio", _div(ev, ebitda),
            "enterprise_value / (operating_income + depreciation_and_amortization)",
            "operating_income")  # fmt: skip
    put("enterprise_value_to_revenue_ratio", _div(ev, revenue), "enterprise_value / revenue",
        "revenue")  # fmt: skip
    if dividends is None and cashflow is not None:
        # No dividends line in a cash flow statement means none were paid (Tesla, Amazon).
        dividends = 0
        inputs["dividends_paid"] = 0
        if "free_cash_flow" in input_sources:
            input_sources["dividends_paid"] = input_sources["free_cash_flow"]
    put("dividend_yield", _div(abs(dividends), market_cap) if dividends is not None else None,
        "dividends_paid (TTM) / market_cap", "dividends_paid")  # fmt: skip
    put("free_cash_flow_yield", _div(fcf, market_cap), "free_cash_flow / market_cap",
        "free_cash_flow")  # fmt: skip
    return Valuation(
        ticker=company.ticker,
        date=day,
        price_date=bar.time[:10],
        currency=bar.currency or currency,
        inputs=inputs,
        input_sources=input_sources,
        sources=sources,
        notes=notes,
        **values,
    )


def _div(numerator: Number | None, denominator: Number | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def month_ends(first: date, last: date) -> list[date]:
    """The last calendar day of each month from `first`'s month to `last`'s (inclusive)."""
    days = []
    year, month = first.year, first.month
    while (year, month) <= (last.year, last.month):
        following = date(year + month // 12, month % 12 + 1, 1)
        days.append(following - timedelta(days=1))
        year, month = following.year, following.month
    return days
