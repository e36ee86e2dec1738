"""Financial ratios computed from statements, for providers that have statements but no metrics
endpoint (SEC EDGAR). Works on any provider's records, since they share one shape.

Conventions, chosen once so every ratio reads the same way:
* Fractions are decimals (0.46 = 46%). Nothing is annualised: a quarterly ROE is one quarter's.
* ROE and ROA divide by the *average* of the opening and closing balance (the usual definition;
  the opening balance is the previous period's closing one, a year earlier for TTM), so the oldest
  period given has none; `return_on_equity_ending` / `return_on_assets_ending` are the explicit
  ending-balance alternatives. Neither ROE is given when the equity it divides by is not positive
  (a loss on negative equity would otherwise read as a positive return). Turnovers use ending
  balances.
* Growth: annual against the prior year, quarterly against the same quarter a year earlier
  (year-on-year, as analysts quote quarters), TTM against the TTM a quarter earlier; each as
  (now − then) / |then| and labelled with its base in `sources`.
* `earnings_per_share` is basic EPS (reported, else net income / weighted basic shares).
* ROIC is NOPAT / (total debt + shareholders' equity + non-controlling interest), NOPAT being
  operating income × (1 − income tax / pre-tax income), the rate unclamped; with a pre-tax loss no
  tax is applied, and the formula in `sources` says so.
* Valuation ratios need a `price` and are computed for the latest period only; the earnings- and
  sales-based ones (P/E, P/S, EV/revenue, EV/EBITDA, FCF yield, PEG) only when that period is
  annual or TTM, since a single quarter's earnings would inflate them about fourfold.
* A missing or zero input gives None, never an exception. Two deliberate exceptions: a filer that
  reports no debt concept is treated as debt-free in enterprise value and ROIC, and one that
  reports no inventory has none in the quick ratio (absence of those lines normally means zero).
* `sources[metric]` cites the filing of the main input and spells the formula in `concept`
  ("computed: net_income / revenue"), so a ratio can be traced like any reported figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from dexter.data.models import (
    BalanceSheet,
    CashFlowStatement,
    FinancialMetrics,
    IncomeStatement,
    Number,
    Source,
    StatementBase,
)

_PERIOD_DAYS = {"annual": 365.0, "ttm": 365.0, "quarterly": 365.0 / 4}


def ratio(numerator: Number | None, denominator: Number | None) -> float | None:
    """numerator / denominator, or None when either is missing or the denominator is zero."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def growth(now: Number | None, then: Number | None) -> float | None:
    """(now − then) / |then|: a loss shrinking from −10 to −5 is +50%, not −50%."""
    if now is None or then is None or then == 0:
        return None
    return (now - then) / abs(then)


@dataclass
class _Period:
    """The three statements for one period (any may be missing)."""

    income: IncomeStatement | None = None
    balance: BalanceSheet | None = None
    cashflow: CashFlowStatement | None = None

    def first(self) -> StatementBase:
        for statement in (self.income, self.balance, self.cashflow):
            if statement is not None:
                return statement
        raise ValueError("empty period")  # never: a period exists because a statement does

    def get(self, name: str) -> Number | None:
        """A field from whichever statement has it: income, then cash flow, then balance."""
        for statement in (self.income, self.cashflow, self.balance):
            value: Number | None = getattr(statement, name, None)
            if value is not None:
                return value
        return None

    def holder(self, name: str) -> StatementBase | None:
        for statement in (self.income, self.cashflow, self.balance):
            if statement is not None and getattr(statement, name, None) is not None:
                return statement
        return None

    def shares(self) -> Number | None:
        """Shares for per-share figures: outstanding at period end, else the period's average."""
        return self.get("outstanding_shares") or self.get("weighted_average_shares")


@dataclass
class _Metrics:
    now: _Period
    values: dict[str, Number] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)

    def put(self, name: str, value: Number | None, formula: str, basis: str) -> None:
        """Record a metric; `basis` is the input field whose filing the metric cites."""
        if value is None:
            return
        self.values[name] = value
        self.sources[name] = _cite(self.now, formula, basis)


def _cite(period: _Period, formula: str, basis: str) -> Source:
    statement = period.holder(basis) or period.first()
    origin = statement.sources.get(basis)
    if origin is None:
        return Source(
            provider="computed",
            url=statement.filing_url or "",
            accession_number=statement.accession_number,
            concept=f"computed: {formula}",
        )
    return Source(
        provider=origin.provider,
        url=origin.url,
        form=origin.form,
        accession_number=origin.accession_number,
        filing_date=origin.filing_date,
        concept=f"computed: {formula}",
    )


def compute_metrics(
    income: Sequence[IncomeStatement],
    balance: Sequence[BalanceSheet],
    cashflow: Sequence[CashFlowStatement],
    *,
    price: float | None = None,
) -> list[FinancialMetrics]:
    """One FinancialMetrics per period present in any input, newest first (see module notes)."""
    periods = _align(income, balance, cashflow)
    keys = sorted(periods, key=lambda key: key[1], reverse=True)
    latest = keys[0] if keys else None
    result = []
    for key in keys:
        now = periods[key]
        previous = _previous(periods, key)
        year_ago = _year_ago(periods, key)
        opening = year_ago if key[0] == "ttm" else previous
        metrics = _Metrics(now)
        _profitability(metrics, opening)
        _liquidity_and_leverage(metrics)
        _efficiency(metrics, _PERIOD_DAYS.get(key[0], 365.0))
        _per_share(metrics)
        base, basis = (
            (year_ago, "same quarter a year earlier")
            if key[0] == "quarterly"
            else (previous, "previous year" if key[0] == "annual" else "TTM a quarter earlier")
        )
        if base is not None:
            _growth(metrics, base, basis)
        if price is not None and key == latest:
            _valuation(metrics, price, per_year=key[0] in ("annual", "ttm"))
        result.append(_record(now, metrics))
    return result


def _align(
    income: Sequence[IncomeStatement],
    balance: Sequence[BalanceSheet],
    cashflow: Sequence[CashFlowStatement],
) -> dict[tuple[str, str], _Period]:
    periods: dict[tuple[str, str], _Period] = {}
    for statement in income:
        periods.setdefault(
            (statement.period, statement.report_period), _Period()
        ).income = statement
    for sheet in balance:
        periods.setdefault((sheet.period, sheet.report_period), _Period()).balance = sheet
    for flows in cashflow:
        periods.setdefault((flows.period, flows.report_period), _Period()).cashflow = flows
    return periods


def _previous(periods: dict[tuple[str, str], _Period], key: tuple[str, str]) -> _Period | None:
    earlier = [k for k in periods if k[0] == key[0] and k[1] < key[1]]
    return periods[max(earlier, key=lambda k: k[1])] if earlier else None


def _year_ago(periods: dict[tuple[str, str], _Period], key: tuple[str, str]) -> _Period | None:
    """The period of the same kind ending about a year before this one (350–380 days)."""
    end = date.fromisoformat(key[1])
    for other in periods:
        if other[0] == key[0] and 350 <= (end - date.fromisoformat(other[1])).days <= 380:
            return periods[other]
    return None


def _average(now: Number | None, opening: Number | None) -> float | None:
    if now is None or opening is None:
        return None
    return (now + opening) / 2


def _positive(value: Number | None) -> Number | None:
    return value if value is not None and value > 0 else None


def _profitability(m: _Metrics, opening: _Period | None) -> None:
    p = m.now
    revenue = p.get("revenue")
    m.put(
        "gross_margin",
        ratio(p.get("gross_profit"), revenue),
        "gross_profit / revenue",
        "gross_profit",
    )
    m.put(
        "operating_margin",
        ratio(p.get("operating_income"), revenue),
        "operating_income / revenue",
        "operating_income",
    )
    m.put("net_margin", ratio(p.get("net_income"), revenue), "net_income / revenue", "net_income")
    net_income, equity, assets = (
        p.get("net_income"),
        p.get("shareholders_equity"),
        p.get("total_assets"),
    )
    before = opening.get if opening is not None else (lambda name: None)
    m.put(
        "return_on_equity",
        ratio(net_income, _positive(_average(equity, before("shareholders_equity")))),
        "net_income / average(opening, closing shareholders_equity)",
        "net_income",
    )
    m.put(
        "return_on_assets",
        ratio(net_income, _positive(_average(assets, before("total_assets")))),
        "net_income / average(opening, closing total_assets)",
        "net_income",
    )
    m.put(
        "return_on_equity_ending",
        ratio(net_income, _positive(equity)),
        "net_income / shareholders_equity (ending)",
        "net_income",
    )
    m.put(
        "return_on_assets_ending",
        ratio(net_income, _positive(assets)),
        "net_income / total_assets (ending)",
        "net_income",
    )
    roic = _roic(p)
    if roic is not None:
        m.put("return_on_invested_capital", roic[0], roic[1], "operating_income")


def _roic(p: _Period) -> tuple[float, str] | None:
    operating_income, equity = p.get("operating_income"), p.get("shareholders_equity")
    tax = p.get("income_tax_expense")
    if operating_income is None or equity is None or tax is None:
        return None
    pretax = p.get("pretax_income")
    pretax_name = "pretax_income"
    if pretax is None:
        net_income = p.get("net_income")
        if net_income is None:
            return None
        pretax, pretax_name = net_income + tax, "(net_income + income_tax_expense)"
    capital = (p.get("total_debt") or 0) + equity + (p.get("non_controlling_interest") or 0)
    capital_text = "(total_debt + shareholders_equity + non_controlling_interest)"
    if pretax > 0:
        value = ratio(operating_income * (1 - tax / pretax), capital)
        formula = f"operating_income × (1 − income_tax_expense / {pretax_name}) / {capital_text}"
    else:
        value = ratio(operating_income, capital)
        formula = f"operating_income / {capital_text} (pre-tax loss: no tax applied)"
    return None if value is None else (value, formula)


def _liquidity_and_leverage(m: _Metrics) -> None:
    p = m.now
    current_liabilities = p.get("current_liabilities")
    current_assets = p.get("current_assets")
    m.put(
        "current_ratio",
        ratio(current_assets, current_liabilities),
        "current_assets / current_liabilities",
        "current_assets",
    )
    quick = None if current_assets is None else current_assets - (p.get("inventory") or 0)
    m.put(
        "quick_ratio",
        ratio(quick, current_liabilities),
        "(current_assets − inventory) / current_liabilities",
        "current_assets",
    )
    cash = p.get("cash_and_equivalents")
    liquid = None if cash is None else cash + (p.get("current_investments") or 0)
    m.put(
        "cash_ratio",
        ratio(liquid, current_liabilities),
        "(cash_and_equivalents + current_investments) / current_liabilities",
        "cash_and_equivalents",
    )
    m.put(
        "operating_cash_flow_ratio",
        ratio(p.get("net_cash_flow_from_operations"), current_liabilities),
        "net_cash_flow_from_operations / current_liabilities",
        "net_cash_flow_from_operations",
    )
    debt = p.get("total_debt")
    m.put(
        "debt_to_equity",
        ratio(debt, p.get("shareholders_equity")),
        "total_debt / shareholders_equity",
        "total_debt",
    )
    m.put(
        "debt_to_assets",
        ratio(debt, p.get("total_assets")),
        "total_debt / total_assets",
        "total_debt",
    )
    interest = p.get("interest_expense")
    m.put(
        "interest_coverage",
        ratio(p.get("operating_income"), interest) if interest and interest > 0 else None,
        "operating_income / interest_expense",
        "operating_income",
    )


def _efficiency(m: _Metrics, days: float) -> None:
    p = m.now
    revenue, cost = p.get("revenue"), p.get("cost_of_revenue")
    inventory, receivables = p.get("inventory"), p.get("trade_and_non_trade_receivables")
    m.put(
        "asset_turnover", ratio(revenue, p.get("total_assets")), "revenue / total_assets", "revenue"
    )
    m.put(
        "inventory_turnover",
        ratio(cost, inventory),
        "cost_of_revenue / inventory",
        "cost_of_revenue",
    )
    m.put(
        "receivables_turnover",
        ratio(revenue, receivables),
        "revenue / trade_and_non_trade_receivables",
        "revenue",
    )
    dso = _days(receivables, revenue, days)
    m.put("days_sales_outstanding", dso, "receivables / revenue × days in period", "revenue")
    dio = _days(inventory, cost, days)
    m.put(
        "operating_cycle",
        dso + dio if dso is not None and dio is not None else None,
        "days inventory outstanding + days sales outstanding",
        "revenue",
    )
    current_assets, current_liabilities = p.get("current_assets"), p.get("current_liabilities")
    working_capital = (
        current_assets - current_liabilities
        if current_assets is not None and current_liabilities is not None
        else None
    )
    m.put(
        "working_capital_turnover",
        ratio(revenue, working_capital),
        "revenue / (current_assets − current_liabilities)",
        "revenue",
    )


def _days(balance: Number | None, flow: Number | None, days: float) -> float | None:
    share = ratio(balance, flow)
    return None if share is None else share * days


def _per_share(m: _Metrics) -> None:
    p = m.now
    eps = p.get("earnings_per_share")
    formula = "earnings_per_share, basic (reported)"
    if eps is None:
        eps = ratio(p.get("net_income"), p.get("weighted_average_shares"))
        formula = "basic: net_income / weighted_average_shares"
    m.put(
        "earnings_per_share",
        eps,
        formula,
        "earnings_per_share" if p.get("earnings_per_share") else "net_income",
    )
    shares = p.shares()
    m.put(
        "book_value_per_share",
        ratio(p.get("shareholders_equity"), shares),
        "shareholders_equity / outstanding_shares",
        "shareholders_equity",
    )
    m.put(
        "free_cash_flow_per_share",
        ratio(p.get("free_cash_flow"), shares),
        "free_cash_flow / outstanding_shares",
        "free_cash_flow",
    )
    dividends = p.get("dividends_and_other_cash_distributions")
    net_income = p.get("net_income")
    m.put(
        "payout_ratio",
        ratio(abs(dividends), net_income)
        if dividends is not None and net_income and net_income > 0
        else None,
        "|dividends_and_other_cash_distributions| / net_income",
        "dividends_and_other_cash_distributions",
    )


_GROWTH = (
    ("revenue_growth", "revenue"),
    ("earnings_growth", "net_income"),
    ("operating_income_growth", "operating_income"),
    ("free_cash_flow_growth", "free_cash_flow"),
    ("book_value_growth", "shareholders_equity"),
)


def _growth(m: _Metrics, previous: _Period, basis: str) -> None:
    for metric, name in _GROWTH:
        m.put(
            metric,
            growth(m.now.get(name), previous.get(name)),
            f"Δ {name} vs {basis}",
            name,
        )
    m.put(
        "earnings_per_share_growth",
        growth(m.values.get("earnings_per_share"), _eps(previous)),
        f"Δ earnings_per_share (basic) vs {basis}",
        "earnings_per_share",
    )
    m.put(
        "ebitda_growth",
        growth(_ebitda(m.now), _ebitda(previous)),
        f"Δ (operating_income + depreciation_and_amortization) vs {basis}",
        "operating_income",
    )


def _eps(p: _Period) -> Number | None:
    return p.get("earnings_per_share") or ratio(
        p.get("net_income"), p.get("weighted_average_shares")
    )


def _ebitda(p: _Period) -> Number | None:
    operating_income, amortisation = (
        p.get("operating_income"),
        p.get("depreciation_and_amortization"),
    )
    if operating_income is None or amortisation is None:
        return None
    return operating_income + amortisation


def _valuation(m: _Metrics, price: float, *, per_year: bool) -> None:
    p = m.now
    shares = p.shares()
    market_cap = price * shares if shares else None
    if market_cap is None:
        return
    m.put("market_cap", market_cap, "price × outstanding_shares", "outstanding_shares")
    enterprise_value = (
        market_cap + (p.get("total_debt") or 0) - (p.get("cash_and_equivalents") or 0)
    )
    m.put(
        "enterprise_value",
        enterprise_value,
        "market_cap + total_debt − cash_and_equivalents",
        "total_debt",
    )
    m.put(
        "price_to_book_ratio",
        ratio(market_cap, p.get("shareholders_equity")),
        "market_cap / shareholders_equity",
        "shareholders_equity",
    )
    if not per_year:
        return
    pe = ratio(market_cap, p.get("net_income"))
    m.put("price_to_earnings_ratio", pe, "market_cap / net_income", "net_income")
    m.put(
        "price_to_sales_ratio",
        ratio(market_cap, p.get("revenue")),
        "market_cap / revenue",
        "revenue",
    )
    m.put(
        "free_cash_flow_yield",
        ratio(p.get("free_cash_flow"), market_cap),
        "free_cash_flow / market_cap",
        "free_cash_flow",
    )
    m.put(
        "enterprise_value_to_revenue_ratio",
        ratio(enterprise_value, p.get("revenue")),
        "enterprise_value / revenue",
        "revenue",
    )
    m.put(
        "enterprise_value_to_ebitda_ratio",
        ratio(enterprise_value, _ebitda(p)),
        "enterprise_value / (operating_income + depreciation_and_amortization)",
        "operating_income",
    )
    earnings_growth = m.values.get("earnings_growth")
    m.put(
        "peg_ratio",
        ratio(pe, earnings_growth * 100)
        if pe and earnings_growth and earnings_growth > 0
        else None,
        "price_to_earnings_ratio / (earnings_growth × 100)",
        "net_income",
    )


def _record(p: _Period, m: _Metrics) -> FinancialMetrics:
    base = p.first()
    return FinancialMetrics(
        ticker=base.ticker,
        report_period=base.report_period,
        fiscal_period=base.fiscal_period,
        period=base.period,
        currency=base.currency,
        accession_number=base.accession_number,
        filing_url=base.filing_url,
        sources=m.sources,
        # Per-share metrics rest on the statements' share basis; their notes carry over.
        notes=list(
            dict.fromkeys(
                note
                for s in (p.income, p.balance, p.cashflow)
                if s is not None
                for note in s.notes or ()
            )
        )
        or None,
        **m.values,
    )
