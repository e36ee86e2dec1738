"""Typed financial records, shaped like the Financial Datasets JSON so every provider, tool and
prompt agrees on field names. Every record says where its numbers came from (`Source`), which is
what lets an answer cite each figure.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Number = int | float
Period = Literal["annual", "quarterly", "ttm"]


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Source(Record):
    """Provenance of a value or record: enough for a reader to find and check it."""

    provider: str  # "SEC EDGAR", "Financial Datasets"
    url: str
    form: str | None = None  # 10-K, 10-Q, 4, 13F-HR …
    accession_number: str | None = None
    filing_date: str | None = None  # YYYY-MM-DD
    concept: str | None = None  # XBRL concept, e.g. "us-gaap:Revenues"
    unit: str | None = None  # XBRL unit, e.g. "USD", "USD/shares"

    def cite(self, *, concept: bool = True) -> str:
        """One line, e.g. "SEC EDGAR 10-K filed 2025-10-31, acc. 0000320193-25-000079"."""
        parts = [self.provider]
        if self.form:
            parts.append(self.form)
        if self.filing_date:
            parts.append(f"filed {self.filing_date}")
        text = " ".join(parts)
        if self.accession_number:
            text += f", acc. {self.accession_number}"
        if concept and self.concept:
            text += f", {self.concept}"
        if not self.accession_number:
            text += f" ({self.url})"
        return text


class Company(Record):
    ticker: str
    cik: str  # ten digits, zero-padded
    name: str
    exchange: str | None = None


class StatementBase(Record):
    ticker: str
    report_period: str  # period end date, YYYY-MM-DD
    fiscal_period: str  # as the company labels it: "2025-FY", "2026-Q1"
    period: Period
    currency: str = "USD"
    accession_number: str | None = None
    filing_url: str | None = None
    # Per-field provenance: field name -> where that number came from.
    sources: dict[str, Source] = Field(default_factory=dict)
    # What a reader must know to compare this period with others, e.g. "per-share values and
    # share counts restated to the latest basis for the 3-for-1 stock split of 2022 (filed
    # before it)". None when there is nothing to say; shown under tables (`data.notes`).
    notes: list[str] | None = None


class IncomeStatement(StatementBase):
    revenue: Number | None = None
    cost_of_revenue: Number | None = None
    gross_profit: Number | None = None
    operating_expense: Number | None = None
    selling_general_and_administrative_expenses: Number | None = None
    research_and_development: Number | None = None
    operating_income: Number | None = None
    interest_expense: Number | None = None
    ebit: Number | None = None
    pretax_income: Number | None = None  # income from continuing operations before income taxes
    income_tax_expense: Number | None = None
    net_income_discontinued_operations: Number | None = None
    net_income_non_controlling_interests: Number | None = None
    net_income: Number | None = None
    net_income_common_stock: Number | None = None
    preferred_dividends_impact: Number | None = None
    consolidated_income: Number | None = None
    earnings_per_share: Number | None = None
    earnings_per_share_diluted: Number | None = None
    dividends_per_common_share: Number | None = None
    weighted_average_shares: Number | None = None
    weighted_average_shares_diluted: Number | None = None


class BalanceSheet(StatementBase):
    total_assets: Number | None = None
    current_assets: Number | None = None
    cash_and_equivalents: Number | None = None
    inventory: Number | None = None
    current_investments: Number | None = None
    trade_and_non_trade_receivables: Number | None = None
    non_current_assets: Number | None = None
    property_plant_and_equipment: Number | None = None
    goodwill_and_intangible_assets: Number | None = None
    investments: Number | None = None
    non_current_investments: Number | None = None
    outstanding_shares: Number | None = None
    tax_assets: Number | None = None
    total_liabilities: Number | None = None
    current_liabilities: Number | None = None
    current_debt: Number | None = None
    trade_and_non_trade_payables: Number | None = None
    deferred_revenue: Number | None = None
    deposit_liabilities: Number | None = None
    non_current_liabilities: Number | None = None
    non_current_debt: Number | None = None
    tax_liabilities: Number | None = None
    non_controlling_interest: Number | None = None
    shareholders_equity: Number | None = None
    retained_earnings: Number | None = None
    accumulated_other_comprehensive_income: Number | None = None
    total_debt: Number | None = None


class CashFlowStatement(StatementBase):
    net_income: Number | None = None
    depreciation_and_amortization: Number | None = None
    share_based_compensation: Number | None = None
    net_cash_flow_from_operations: Number | None = None
    capital_expenditure: Number | None = None
    business_acquisitions_and_disposals: Number | None = None
    investment_acquisitions_and_disposals: Number | None = None
    net_cash_flow_from_investing: Number | None = None
    issuance_or_repayment_of_debt_securities: Number | None = None
    issuance_or_purchase_of_equity_shares: Number | None = None
    dividends_and_other_cash_distributions: Number | None = None
    net_cash_flow_from_financing: Number | None = None
    change_in_cash_and_equivalents: Number | None = None
    effect_of_exchange_rate_changes: Number | None = None
    ending_cash_balance: Number | None = None
    free_cash_flow: Number | None = None


class FinancialMetrics(StatementBase):
    """Ratios for one period. Margins, returns and growth are decimal fractions (0.25 = 25%)."""

    market_cap: Number | None = None
    enterprise_value: Number | None = None
    price_to_earnings_ratio: Number | None = None
    price_to_book_ratio: Number | None = None
    price_to_sales_ratio: Number | None = None
    enterprise_value_to_ebitda_ratio: Number | None = None
    enterprise_value_to_revenue_ratio: Number | None = None
    free_cash_flow_yield: Number | None = None
    peg_ratio: Number | None = None
    gross_margin: Number | None = None
    operating_margin: Number | None = None
    net_margin: Number | None = None
    return_on_equity: Number | None = None
    return_on_assets: Number | None = None
    return_on_invested_capital: Number | None = None
    # The same returns on ending balances only: an explicit alternative to the averaged ones.
    return_on_equity_ending: Number | None = None
    return_on_assets_ending: Number | None = None
    asset_turnover: Number | None = None
    inventory_turnover: Number | None = None
    receivables_turnover: Number | None = None
    days_sales_outstanding: Number | None = None
    operating_cycle: Number | None = None
    working_capital_turnover: Number | None = None
    current_ratio: Number | None = None
    quick_ratio: Number | None = None
    cash_ratio: Number | None = None
    operating_cash_flow_ratio: Number | None = None
    debt_to_equity: Number | None = None
    debt_to_assets: Number | None = None
    interest_coverage: Number | None = None
    revenue_growth: Number | None = None
    earnings_growth: Number | None = None
    book_value_growth: Number | None = None
    earnings_per_share_growth: Number | None = None
    free_cash_flow_growth: Number | None = None
    operating_income_growth: Number | None = None
    ebitda_growth: Number | None = None
    payout_ratio: Number | None = None
    earnings_per_share: Number | None = None
    book_value_per_share: Number | None = None
    free_cash_flow_per_share: Number | None = None


class Filing(Record):
    cik: str
    accession_number: str
    filing_type: str  # form type as filed: 10-K, 10-Q, 8-K, 4, 13F-HR …
    filing_date: str
    report_date: str | None = None
    ticker: str | None = None
    url: str  # the primary document
    primary_document: str | None = None
    description: str | None = None
    items: list[str] = Field(default_factory=list)  # 8-K item numbers, e.g. ["2.02", "9.01"]


class HistoryGap(Record):
    """Part of a filer's EDGAR filing history that was not read: an older history page (the
    submissions file lists them in `filings.files`) that failed to load, or that lies past the
    number of pages one request reads."""

    page: str  # e.g. CIK0001318605-submissions-001.json
    url: str
    filed_from: str | None = None  # the page's oldest filing date, as the listing says
    filed_to: str | None = None  # its newest
    reason: str  # what went wrong, in the source's words
    failed: bool = True  # False: left unread on purpose (the page cap), not a failure


class FilingList(list[Filing]):
    """Filings newest first, with the parts of the history that could not be read: a list
    missing older filings says so instead of passing for the whole history."""

    def __init__(self, filings: list[Filing], gaps: list[HistoryGap] | None = None) -> None:
        super().__init__(filings)
        self.gaps = list(gaps or [])

    @property
    def failed_gaps(self) -> list[HistoryGap]:
        return [gap for gap in self.gaps if gap.failed]


class FilingSection(Record):
    """One item of a filing (e.g. 10-K Item 1A) as clean text."""

    ticker: str
    filing_type: str
    accession_number: str
    filing_date: str
    report_date: str | None = None
    item: str  # normalised: "1A", "7", "Part-I,Item-2"
    title: str
    text: str
    source: Source


class InsiderTrade(Record):
    ticker: str
    issuer: str | None = None
    name: str
    title: str | None = None
    is_board_director: bool | None = None
    transaction_date: str | None = None
    transaction_code: str | None = None  # SEC code: P purchase, S sale, A award, M exercise …
    transaction_type: str | None = None  # readable form of the code
    transaction_shares: Number | None = None
    transaction_price_per_share: Number | None = None
    transaction_value: Number | None = None
    shares_owned_before_transaction: Number | None = None
    shares_owned_after_transaction: Number | None = None
    security_title: str | None = None
    direct_or_indirect: str | None = None  # "D" or "I"
    filing_date: str | None = None
    form_type: str | None = None  # the form that reported it: 4, 4/A, 5, 5/A
    source: Source | None = None


class InsiderTrades(list[InsiderTrade]):
    """Trades from the ownership filings (Forms 4 and 5) that could be read, with the ones that
    could not and any part of the filing history that failed to load: a partial answer says so
    instead of passing for the whole one."""

    def __init__(
        self,
        trades: list[InsiderTrade],
        failures: list[str] | None = None,
        gaps: list[HistoryGap] | None = None,
    ) -> None:
        super().__init__(trades)
        self.failures = list(failures or [])
        self.gaps = list(gaps or [])

    @property
    def failed_gaps(self) -> list[HistoryGap]:
        return [gap for gap in self.gaps if gap.failed]


class InstitutionalHolding(Record):
    ticker: str | None = None
    name_of_issuer: str
    cusip: str
    title_of_class: str | None = None
    report_period: str | None = None
    filing_date: str | None = None
    form_type: str | None = None
    accession_number: str | None = None
    put_call: str | None = None
    shares: Number | None = None
    share_type: str | None = None  # SH (shares) or PRN (principal amount)
    value_usd: Number | None = None
    investment_discretion: str | None = None
    filer_cik: str | None = None
    filer_name: str | None = None
    source: Source | None = None


class Holdings(list[InstitutionalHolding]):
    """The positions of one 13F report that are listed (largest value first), with the whole
    report's count and value: a list cut to a limit says what it left out."""

    def __init__(
        self, shown: list[InstitutionalHolding], *, total_count: int, total_value_usd: Number
    ) -> None:
        super().__init__(shown)
        self.total_count = total_count
        self.total_value_usd = total_value_usd

    @property
    def omitted_count(self) -> int:
        return self.total_count - len(self)

    @property
    def omitted_value_usd(self) -> Number:
        return self.total_value_usd - sum(h.value_usd or 0 for h in self)


class FactPoint(Record):
    """One reported value of one XBRL concept, exactly as filed."""

    concept: str  # "us-gaap:Revenues"
    unit: str
    value: Number
    start: str | None = None
    end: str
    fiscal_year: int | None = None
    fiscal_period: str | None = None  # FY, Q1, Q2, Q3
    form: str | None = None
    filed: str | None = None
    accession_number: str | None = None
    frame: str | None = None  # e.g. CY2024Q4I


class Price(Record):
    ticker: str
    time: str
    open: Number | None = None
    high: Number | None = None
    low: Number | None = None
    close: Number | None = None
    volume: Number | None = None
    # Key-less sources (Yahoo Finance) also give these; every price is split-adjusted to today.
    adjusted_close: Number | None = None  # also dividend-adjusted, for total returns
    currency: str | None = None  # "USD", "EUR": a non-US listing keeps its own
    dividend: Number | None = None  # cash dividend per share that went ex on this day
    split: str | None = None  # a split effective on this day, e.g. "4:1"


class PriceSnapshot(Record):
    ticker: str
    price: Number
    day_change: Number | None = None
    day_change_percent: Number | None = None
    time: str | None = None
    source: Source | None = None
    currency: str | None = None


class NewsItem(Record):
    ticker: str | None = None
    title: str
    source: str | None = None
    date: str | None = None
    url: str | None = None


class ScreenRow(Record):
    """One company's reported value in a cross-company screen."""

    ticker: str | None = None
    cik: str | None = None  # the SEC's frames give it; some screeners do not
    name: str
    value: Number
    concept: str | None = None
    unit: str | None = None
    period: str | None = None  # e.g. CY2024 or the period end
    accession_number: str | None = None
