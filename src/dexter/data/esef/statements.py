"""IFRS facts of one ESEF annual report mapped onto Dexter's three statements.

Each field takes the first `ifrs-full` concept in its list that the report carries for the
fiscal year ending on the filing's period end (a duration of about a year for the income and
cash-flow statements, an instant at that day for the balance sheet), in the report's own
currency. Payments the taxonomy reports as positive amounts (capital expenditure, dividends
paid) are signed negative, as every other provider signs cash outflows.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal, TypeVar

from dexter.data.esef.index import PROVIDER, EsefFiling
from dexter.data.esef.report import ReportFact
from dexter.data.models import (
    BalanceSheet,
    CashFlowStatement,
    IncomeStatement,
    Source,
    StatementBase,
)

StatementKind = Literal["income", "balance", "cashflow"]
S = TypeVar("S", bound=StatementBase)

FORM = "ESEF annual report"
# A fiscal year of 52 or 53 weeks, or a year shortened or lengthened by a change of year end,
# still reads as the year; a half-year or a quarter does not.
_YEAR_DAYS = range(300, 400)

INCOME: dict[str, tuple[str, ...]] = {
    "revenue": ("Revenue", "RevenueFromContractsWithCustomers"),
    "cost_of_revenue": ("CostOfSales",),
    "gross_profit": ("GrossProfit",),
    "selling_general_and_administrative_expenses": ("SellingGeneralAndAdministrativeExpense",),
    "research_and_development": ("ResearchAndDevelopmentExpense",),
    "operating_income": ("ProfitLossFromOperatingActivities",),
    "interest_expense": ("InterestExpense",),
    "pretax_income": ("ProfitLossBeforeTax",),
    "income_tax_expense": ("IncomeTaxExpenseContinuingOperations",),
    "net_income_discontinued_operations": ("ProfitLossFromDiscontinuedOperations",),
    "net_income_non_controlling_interests": ("ProfitLossAttributableToNonControllingInterests",),
    # Dexter's net income is the parent's shareholders' share, as in a 10-K.
    "net_income": ("ProfitLossAttributableToOwnersOfParent",),
    "consolidated_income": ("ProfitLoss",),
    "earnings_per_share": ("BasicEarningsLossPerShare",),
    "earnings_per_share_diluted": ("DilutedEarningsLossPerShare",),
    "weighted_average_shares": ("WeightedAverageShares",),
    "weighted_average_shares_diluted": ("AdjustedWeightedAverageShares",),
}

BALANCE: dict[str, tuple[str, ...]] = {
    "total_assets": ("Assets",),
    "current_assets": ("CurrentAssets",),
    "cash_and_equivalents": ("CashAndCashEquivalents",),
    "inventory": ("Inventories", "CurrentInventoriesHeldForSale"),
    "trade_and_non_trade_receivables": ("TradeAndOtherCurrentReceivables",),
    "non_current_assets": ("NoncurrentAssets",),
    "property_plant_and_equipment": ("PropertyPlantAndEquipment",),
    "goodwill_and_intangible_assets": ("IntangibleAssetsAndGoodwill",),
    "total_liabilities": ("Liabilities",),
    "current_liabilities": ("CurrentLiabilities",),
    "current_debt": ("ShorttermBorrowings",),
    "trade_and_non_trade_payables": ("TradeAndOtherCurrentPayables",),
    "non_current_liabilities": ("NoncurrentLiabilities",),
    "non_current_debt": ("LongtermBorrowings",),
    "non_controlling_interest": ("NoncontrollingInterests",),
    "shareholders_equity": ("EquityAttributableToOwnersOfParent", "Equity"),
    "retained_earnings": ("RetainedEarnings",),
}

CASH_FLOW: dict[str, tuple[str, ...]] = {
    "net_income": ("ProfitLoss",),
    "depreciation_and_amortization": ("AdjustmentsForDepreciationAndAmortisationExpense",),
    "share_based_compensation": ("AdjustmentsForSharebasedPayments",),
    "net_cash_flow_from_operations": ("CashFlowsFromUsedInOperatingActivities",),
    "capital_expenditure": ("PurchaseOfPropertyPlantAndEquipment",),
    "net_cash_flow_from_investing": ("CashFlowsFromUsedInInvestingActivities",),
    "dividends_and_other_cash_distributions": ("DividendsPaidClassifiedAsFinancingActivities",),
    "net_cash_flow_from_financing": ("CashFlowsFromUsedInFinancingActivities",),
    "change_in_cash_and_equivalents": ("IncreaseDecreaseInCashAndCashEquivalents",),
    "effect_of_exchange_rate_changes": ("EffectOfExchangeRateChangesOnCashAndCashEquivalents",),
    "ending_cash_balance": ("CashAndCashEquivalents",),
}

# Reported as positive payments; Dexter signs cash going out negative.
_OUTFLOWS = frozenset({"capital_expenditure", "dividends_and_other_cash_distributions"})
_INSTANT_FIELDS = frozenset({"ending_cash_balance"})
_SHARE_FIELDS = frozenset({"weighted_average_shares", "weighted_average_shares_diluted"})
_PER_SHARE_FIELDS = frozenset({"earnings_per_share", "earnings_per_share_diluted"})

_MAPS: dict[StatementKind, dict[str, tuple[str, ...]]] = {
    "income": INCOME,
    "balance": BALANCE,
    "cashflow": CASH_FLOW,
}
_MODELS: dict[StatementKind, type[StatementBase]] = {
    "income": IncomeStatement,
    "balance": BalanceSheet,
    "cashflow": CashFlowStatement,
}


def report_currency(facts: list[ReportFact], period_end: str) -> str | None:
    """The currency most of the year's monetary facts are in (EUR, SEK, GBP …)."""
    counts = Counter(
        f.unit
        for f in facts
        if f.unit and f.unit.isalpha() and len(f.unit) == 3 and f.end.isoformat() == period_end
    )
    return counts.most_common(1)[0][0] if counts else None


def _unit_for(field: str, currency: str) -> str:
    if field in _SHARE_FIELDS:
        return "shares"
    if field in _PER_SHARE_FIELDS:
        return f"{currency}/shares"
    return currency


def _pick(
    facts: list[ReportFact], concepts: tuple[str, ...], *, instant: bool, end: str, unit: str
) -> ReportFact | None:
    for concept in concepts:
        found = [
            f
            for f in facts
            if f.concept == concept
            and f.unit == unit
            and f.end.isoformat() == end
            and ((f.start is None) if instant else (f.start is not None and f.days in _YEAR_DAYS))
        ]
        if found:
            # The same figure tagged twice (face and note) agrees; keep the most precise one.
            return max(found, key=lambda f: f.decimals if f.decimals is not None else 99)
    return None


def build_statement(
    kind: StatementKind, facts: list[ReportFact], filing: EsefFiling
) -> StatementBase:
    """The fiscal year ending on the filing's period end, as one statement record."""
    end = filing.period_end
    currency = report_currency(facts, end) or "EUR"
    balance = kind == "balance"
    values: dict[str, float | int] = {}
    sources: dict[str, Source] = {}
    for field, concepts in _MAPS[kind].items():
        unit = _unit_for(field, currency)
        fact = _pick(
            facts, concepts, instant=balance or field in _INSTANT_FIELDS, end=end, unit=unit
        )
        if fact is None:
            continue
        value = -abs(fact.value) if field in _OUTFLOWS else fact.value
        values[field] = (
            int(value) if value.is_integer() and field not in _PER_SHARE_FIELDS else value
        )
        sources[field] = _source(filing, f"ifrs-full:{fact.concept}", unit)
    if kind == "cashflow":
        ops, capex = values.get("net_cash_flow_from_operations"), values.get("capital_expenditure")
        if ops is not None and capex is not None:
            values["free_cash_flow"] = ops + capex
            sources["free_cash_flow"] = sources["net_cash_flow_from_operations"]
    if kind == "income" and "net_income" not in values and "consolidated_income" in values:
        # No owners' share tagged and no minority stated: the group's profit is the owners'.
        if "net_income_non_controlling_interests" not in values:
            values["net_income"] = values["consolidated_income"]
            sources["net_income"] = sources["consolidated_income"]
    model = _MODELS[kind]
    return model(
        ticker=filing.lei,
        report_period=end,
        fiscal_period=f"{end[:4]}-FY",
        period="annual",
        currency=currency,
        accession_number=filing.fxo_id,
        filing_url=filing.json_url,
        sources=sources,
        **values,
    )


def _source(filing: EsefFiling, concept: str, unit: str) -> Source:
    return Source(
        provider=PROVIDER,
        url=filing.json_url or filing.report_url or "",
        form=FORM,
        accession_number=filing.fxo_id,
        filing_date=filing.date_added or None,
        concept=concept,
        unit=unit,
    )
