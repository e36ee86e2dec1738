"""Which XBRL concepts fill which statement field.

Companies pick different concepts for the same line (and switch when standards change: Apple moved
from `SalesRevenueNet` to `RevenueFromContractWithCustomerExcludingAssessedTax` with ASC 606), so
each field lists its candidates in priority order and the first one reported *for that period* wins.
IFRS filers (20-F) report under `ifrs-full`, so those concepts sit in the same lists; a US filer
never reports them and an IFRS filer never reports us-gaap, so mixing them costs nothing.

Fields whose name starts with "_" are inputs to computed fields only; they never reach a record.
Debt (current, non-current, total) is not here: its concepts overlap too much to pick field by
field, so `debt.py` reads it as a whole from one filing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["duration", "instant", "cover"]
UnitKind = Literal["currency", "per_share", "shares"]
Statement = Literal["income", "balance", "cashflow"]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """How to read one field from companyfacts."""

    name: str
    concepts: tuple[str, ...]  # "taxonomy:Concept", highest priority first
    kind: Kind = "duration"  # "cover": dei cover-page value of the period's own filing
    unit: UnitKind = "currency"
    # Financial Datasets signs cash outflows negative; XBRL reports payments as positive amounts.
    sign: int = 1
    # Share counts are averages over the period: a derived quarter is n*YTD - (n-1)*prior YTD and
    # a TTM is the mean of four quarters, where flows are plain differences and sums.
    average: bool = False
    # When another candidate was chosen but this concept reports a larger amount for the same
    # period, this one wins: `Revenues` is the total by definition, while some filers (utilities,
    # banks) also report `RevenueFromContractWithCustomer…` for only part of their revenue.
    total_concept: str | None = None


@dataclass(frozen=True, slots=True)
class Computed:
    """A field derived from others when no concept reports it: `op` over `inputs` in order.

    "difference": a - b (both required); "sum": a + b (both required);
    "sum_present": the sum of whichever inputs are present (at least one);
    "first": the first input present, passed through with its own provenance (a fallback, not a
    calculation).
    """

    name: str
    op: Literal["difference", "sum", "sum_present", "first"]
    inputs: tuple[str, ...]


def _f(
    name: str,
    *concepts: str,
    kind: Kind = "duration",
    unit: UnitKind = "currency",
    sign: int = 1,
    average: bool = False,
    total_concept: str | None = None,
) -> FieldSpec:
    return FieldSpec(name, concepts, kind, unit, sign, average, total_concept)


INCOME_FIELDS: tuple[FieldSpec, ...] = (
    _f(
        "revenue",
        "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax",
        "us-gaap:Revenues",
        "us-gaap:SalesRevenueNet",
        "us-gaap:RevenueFromContractWithCustomerIncludingAssessedTax",
        "us-gaap:SalesRevenueGoodsNet",
        "us-gaap:RevenuesNetOfInterestExpense",
        "ifrs-full:Revenue",
        "ifrs-full:RevenueFromContractsWithCustomers",
        total_concept="us-gaap:Revenues",
    ),
    _f(
        "cost_of_revenue",
        "us-gaap:CostOfRevenue",
        "us-gaap:CostOfGoodsAndServicesSold",
        "us-gaap:CostOfGoodsSold",
        "us-gaap:CostOfGoodsAndServiceExcludingDepreciationDepletionAndAmortization",
        "us-gaap:CostOfServices",
        "ifrs-full:CostOfSales",
    ),
    _f("gross_profit", "us-gaap:GrossProfit", "ifrs-full:GrossProfit"),
    _f("operating_expense", "us-gaap:OperatingExpenses"),
    _f(
        "selling_general_and_administrative_expenses",
        "us-gaap:SellingGeneralAndAdministrativeExpense",
        "ifrs-full:SellingGeneralAndAdministrativeExpense",
    ),
    # Snowflake and many others report selling/marketing and G&A on separate lines.
    _f(
        "_selling_and_marketing",
        "us-gaap:SellingAndMarketingExpense",
        "ifrs-full:DistributionCosts",
    ),
    _f(
        "_general_and_administrative",
        "us-gaap:GeneralAndAdministrativeExpense",
        "ifrs-full:AdministrativeExpense",
    ),
    _f(
        "research_and_development",
        "us-gaap:ResearchAndDevelopmentExpense",
        "us-gaap:ResearchAndDevelopmentExpenseExcludingAcquiredInProcessCost",
        "ifrs-full:ResearchAndDevelopmentExpense",
    ),
    _f(
        "operating_income",
        "us-gaap:OperatingIncomeLoss",
        "ifrs-full:ProfitLossFromOperatingActivities",
    ),
    _f(
        "interest_expense",
        "us-gaap:InterestExpense",
        "us-gaap:InterestExpenseNonoperating",
        "us-gaap:InterestExpenseDebt",
        "us-gaap:InterestAndDebtExpense",
        "ifrs-full:FinanceCosts",
        "ifrs-full:InterestExpense",
    ),
    _f(
        "pretax_income",
        "us-gaap:IncomeLossFromContinuingOperationsBeforeIncomeTaxesExtraordinaryItemsNoncontrollingInterest",
        "us-gaap:IncomeLossFromContinuingOperationsBeforeIncomeTaxesMinorityInterestAndIncomeLossFromEquityMethodInvestments",
        "us-gaap:IncomeLossFromContinuingOperationsBeforeIncomeTaxesDomestic",
        "ifrs-full:ProfitLossBeforeTax",
    ),
    _f(
        "income_tax_expense",
        "us-gaap:IncomeTaxExpenseBenefit",
        "ifrs-full:IncomeTaxExpenseContinuingOperations",
    ),
    _f(
        "net_income_discontinued_operations",
        "us-gaap:IncomeLossFromDiscontinuedOperationsNetOfTax",
        "us-gaap:IncomeLossFromDiscontinuedOperationsNetOfTaxAttributableToReportingEntity",
        "ifrs-full:ProfitLossFromDiscontinuedOperations",
    ),
    _f(
        "net_income_non_controlling_interests",
        "us-gaap:NetIncomeLossAttributableToNoncontrollingInterest",
        "ifrs-full:ProfitLossAttributableToNoncontrollingInterests",
    ),
    _f(
        "net_income",
        "us-gaap:NetIncomeLoss",
        "us-gaap:ProfitLoss",
        "us-gaap:NetIncomeLossAvailableToCommonStockholdersBasic",
        "ifrs-full:ProfitLossAttributableToOwnersOfParent",
        "ifrs-full:ProfitLoss",
    ),
    _f(
        "net_income_common_stock",
        "us-gaap:NetIncomeLossAvailableToCommonStockholdersBasic",
        "us-gaap:NetIncomeLoss",
        "ifrs-full:ProfitLossAttributableToOrdinaryEquityHoldersOfParentEntity",
        "ifrs-full:ProfitLossAttributableToOwnersOfParent",
    ),
    _f(
        "preferred_dividends_impact",
        "us-gaap:PreferredStockDividendsAndOtherAdjustments",
        "us-gaap:PreferredStockDividendsIncomeStatementImpact",
    ),
    _f(
        "consolidated_income", "us-gaap:ProfitLoss", "us-gaap:NetIncomeLoss", "ifrs-full:ProfitLoss"
    ),
    _f(
        "earnings_per_share",
        "us-gaap:EarningsPerShareBasic",
        "us-gaap:EarningsPerShareBasicAndDiluted",
        "ifrs-full:BasicEarningsLossPerShare",
        unit="per_share",
    ),
    _f(
        "earnings_per_share_diluted",
        "us-gaap:EarningsPerShareDiluted",
        "us-gaap:EarningsPerShareBasicAndDiluted",
        "ifrs-full:DilutedEarningsLossPerShare",
        unit="per_share",
    ),
    _f(
        "dividends_per_common_share",
        "us-gaap:CommonStockDividendsPerShareDeclared",
        "us-gaap:CommonStockDividendsPerShareCashPaid",
        unit="per_share",
    ),
    _f(
        "weighted_average_shares",
        "us-gaap:WeightedAverageNumberOfSharesOutstandingBasic",
        "ifrs-full:WeightedAverageShares",
        unit="shares",
        average=True,
    ),
    _f(
        "weighted_average_shares_diluted",
        "us-gaap:WeightedAverageNumberOfDilutedSharesOutstanding",
        "ifrs-full:AdjustedWeightedAverageShares",
        unit="shares",
        average=True,
    ),
)

INCOME_COMPUTED: tuple[Computed, ...] = (
    Computed("gross_profit", "difference", ("revenue", "cost_of_revenue")),
    Computed("operating_expense", "difference", ("gross_profit", "operating_income")),
    Computed(
        "selling_general_and_administrative_expenses",
        "sum",
        ("_selling_and_marketing", "_general_and_administrative"),
    ),
    Computed("ebit", "sum", ("pretax_income", "interest_expense")),
)

BALANCE_FIELDS: tuple[FieldSpec, ...] = (
    _f("total_assets", "us-gaap:Assets", "ifrs-full:Assets", kind="instant"),
    _f("current_assets", "us-gaap:AssetsCurrent", "ifrs-full:CurrentAssets", kind="instant"),
    _f(
        "cash_and_equivalents",
        "us-gaap:CashAndCashEquivalentsAtCarryingValue",
        "us-gaap:CashCashEquivalentsRestrictedCashAndRestrictedCashEquivalents",
        "us-gaap:Cash",
        "ifrs-full:CashAndCashEquivalents",
        kind="instant",
    ),
    _f("inventory", "us-gaap:InventoryNet", "ifrs-full:Inventories", kind="instant"),
    _f(
        "current_investments",
        "us-gaap:MarketableSecuritiesCurrent",
        "us-gaap:ShortTermInvestments",
        "us-gaap:AvailableForSaleSecuritiesDebtSecuritiesCurrent",
        "ifrs-full:CurrentInvestments",
        kind="instant",
    ),
    _f(
        "trade_and_non_trade_receivables",
        "us-gaap:AccountsReceivableNetCurrent",
        "us-gaap:ReceivablesNetCurrent",
        "ifrs-full:TradeAndOtherCurrentReceivables",
        kind="instant",
    ),
    _f(
        "non_current_assets",
        "us-gaap:AssetsNoncurrent",
        "ifrs-full:NoncurrentAssets",
        kind="instant",
    ),
    _f(
        "property_plant_and_equipment",
        "us-gaap:PropertyPlantAndEquipmentNet",
        "ifrs-full:PropertyPlantAndEquipment",
        kind="instant",
    ),
    _f(
        "goodwill_and_intangible_assets",
        "us-gaap:IntangibleAssetsNetIncludingGoodwill",
        "ifrs-full:IntangibleAssetsAndGoodwill",
        kind="instant",
    ),
    _f("_goodwill", "us-gaap:Goodwill", "ifrs-full:Goodwill", kind="instant"),
    _f(
        "_intangibles",
        "us-gaap:IntangibleAssetsNetExcludingGoodwill",
        "us-gaap:FiniteLivedIntangibleAssetsNet",
        "ifrs-full:IntangibleAssetsOtherThanGoodwill",
        kind="instant",
    ),
    _f(
        "non_current_investments",
        "us-gaap:MarketableSecuritiesNoncurrent",
        "us-gaap:LongTermInvestments",
        "us-gaap:AvailableForSaleSecuritiesDebtSecuritiesNoncurrent",
        "ifrs-full:NoncurrentInvestments",
        kind="instant",
    ),
    _f(
        "outstanding_shares",
        "us-gaap:CommonStockSharesOutstanding",
        "ifrs-full:NumberOfSharesOutstanding",
        kind="instant",
        unit="shares",
    ),
    # Cover-page count from the period's own filing: dated a few weeks after the period ends.
    _f("_cover_shares", "dei:EntityCommonStockSharesOutstanding", kind="cover", unit="shares"),
    _f(
        "tax_assets",
        "us-gaap:DeferredIncomeTaxAssetsNet",
        "us-gaap:DeferredTaxAssetsNetNoncurrent",
        "ifrs-full:DeferredTaxAssets",
        kind="instant",
    ),
    _f("total_liabilities", "us-gaap:Liabilities", "ifrs-full:Liabilities", kind="instant"),
    _f(
        "_liabilities_and_equity",
        "us-gaap:LiabilitiesAndStockholdersEquity",
        "ifrs-full:EquityAndLiabilities",
        kind="instant",
    ),
    _f(
        "_total_equity",
        "us-gaap:StockholdersEquityIncludingPortionAttributableToNoncontrollingInterest",
        "us-gaap:StockholdersEquity",
        "ifrs-full:Equity",
        kind="instant",
    ),
    _f(
        "current_liabilities",
        "us-gaap:LiabilitiesCurrent",
        "ifrs-full:CurrentLiabilities",
        kind="instant",
    ),
    _f(
        "trade_and_non_trade_payables",
        "us-gaap:AccountsPayableCurrent",
        "us-gaap:AccountsPayableAndAccruedLiabilitiesCurrent",
        "ifrs-full:TradeAndOtherCurrentPayables",
        kind="instant",
    ),
    _f(
        "deferred_revenue",
        "us-gaap:ContractWithCustomerLiabilityCurrent",
        "us-gaap:DeferredRevenueCurrent",
        "ifrs-full:CurrentContractLiabilities",
        kind="instant",
    ),
    _f("deposit_liabilities", "us-gaap:Deposits", "ifrs-full:Deposits", kind="instant"),
    _f(
        "non_current_liabilities",
        "us-gaap:LiabilitiesNoncurrent",
        "ifrs-full:NoncurrentLiabilities",
        kind="instant",
    ),
    _f(
        "tax_liabilities",
        "us-gaap:DeferredIncomeTaxLiabilitiesNet",
        "ifrs-full:DeferredTaxLiabilities",
        kind="instant",
    ),
    _f(
        "non_controlling_interest",
        "us-gaap:MinorityInterest",
        "ifrs-full:NoncontrollingInterests",
        kind="instant",
    ),
    _f(
        "shareholders_equity",
        "us-gaap:StockholdersEquity",
        "us-gaap:StockholdersEquityIncludingPortionAttributableToNoncontrollingInterest",
        "ifrs-full:EquityAttributableToOwnersOfParent",
        "ifrs-full:Equity",
        kind="instant",
    ),
    _f(
        "retained_earnings",
        "us-gaap:RetainedEarningsAccumulatedDeficit",
        "ifrs-full:RetainedEarnings",
        kind="instant",
    ),
    _f(
        "accumulated_other_comprehensive_income",
        "us-gaap:AccumulatedOtherComprehensiveIncomeLossNetOfTax",
        "ifrs-full:AccumulatedOtherComprehensiveIncome",
        kind="instant",
    ),
)

BALANCE_COMPUTED: tuple[Computed, ...] = (
    Computed("total_liabilities", "difference", ("_liabilities_and_equity", "_total_equity")),
    Computed("non_current_assets", "difference", ("total_assets", "current_assets")),
    Computed("non_current_liabilities", "difference", ("total_liabilities", "current_liabilities")),
    Computed("goodwill_and_intangible_assets", "sum_present", ("_goodwill", "_intangibles")),
    Computed("investments", "sum_present", ("current_investments", "non_current_investments")),
    Computed("outstanding_shares", "first", ("_cover_shares",)),
)

CASHFLOW_FIELDS: tuple[FieldSpec, ...] = (
    _f("net_income", "us-gaap:ProfitLoss", "us-gaap:NetIncomeLoss", "ifrs-full:ProfitLoss"),
    _f(
        "depreciation_and_amortization",
        "us-gaap:DepreciationDepletionAndAmortization",
        "us-gaap:DepreciationAmortizationAndAccretionNet",
        "us-gaap:DepreciationAndAmortization",
        "us-gaap:Depreciation",
        "ifrs-full:AdjustmentsForDepreciationAndAmortisationExpense",
        "ifrs-full:DepreciationAndAmortisationExpense",
    ),
    _f(
        "share_based_compensation",
        "us-gaap:ShareBasedCompensation",
        "us-gaap:AllocatedShareBasedCompensationExpense",
        "ifrs-full:AdjustmentsForSharebasedPayments",
    ),
    _f(
        "net_cash_flow_from_operations",
        "us-gaap:NetCashProvidedByUsedInOperatingActivities",
        "us-gaap:NetCashProvidedByUsedInOperatingActivitiesContinuingOperations",
        "ifrs-full:CashFlowsFromUsedInOperatingActivities",
        # Ranked last: only filers that do not tag the net operating line reach it, and those
        # IFRS filers tag their operating cash flow with this element instead.
        "ifrs-full:CashFlowsFromUsedInOperations",
    ),
    _f(
        "capital_expenditure",
        "us-gaap:PaymentsToAcquirePropertyPlantAndEquipment",
        "us-gaap:PaymentsToAcquireProductiveAssets",
        "ifrs-full:PurchaseOfPropertyPlantAndEquipmentClassifiedAsInvestingActivities",
        "ifrs-full:PurchaseOfPropertyPlantAndEquipment",
        sign=-1,
    ),
    _f(
        "business_acquisitions_and_disposals",
        "us-gaap:PaymentsToAcquireBusinessesNetOfCashAcquired",
        "ifrs-full:CashFlowsUsedInObtainingControlOfSubsidiariesOrOtherBusinessesClassifiedAsInvestingActivities",
        sign=-1,
    ),
    _f(
        "net_cash_flow_from_investing",
        "us-gaap:NetCashProvidedByUsedInInvestingActivities",
        "us-gaap:NetCashProvidedByUsedInInvestingActivitiesContinuingOperations",
        "ifrs-full:CashFlowsFromUsedInInvestingActivities",
    ),
    _f(
        "_share_repurchases",
        "us-gaap:PaymentsForRepurchaseOfCommonStock",
        "ifrs-full:PaymentsToAcquireOrRedeemEntitysShares",
        sign=-1,
    ),
    _f(
        "_share_issuance",
        "us-gaap:ProceedsFromIssuanceOfCommonStock",
        "ifrs-full:ProceedsFromIssuingShares",
    ),
    _f(
        "dividends_and_other_cash_distributions",
        "us-gaap:PaymentsOfDividends",
        "us-gaap:PaymentsOfDividendsCommonStock",
        "ifrs-full:DividendsPaidClassifiedAsFinancingActivities",
        sign=-1,
    ),
    _f(
        "net_cash_flow_from_financing",
        "us-gaap:NetCashProvidedByUsedInFinancingActivities",
        "us-gaap:NetCashProvidedByUsedInFinancingActivitiesContinuingOperations",
        "ifrs-full:CashFlowsFromUsedInFinancingActivities",
    ),
    _f(
        "change_in_cash_and_equivalents",
        "us-gaap:CashCashEquivalentsRestrictedCashAndRestrictedCashEquivalentsPeriodIncreaseDecreaseIncludingExchangeRateEffect",
        "us-gaap:CashAndCashEquivalentsPeriodIncreaseDecrease",
        "us-gaap:CashCashEquivalentsRestrictedCashAndRestrictedCashEquivalentsPeriodIncreaseDecreaseExcludingExchangeRateEffect",
        "ifrs-full:IncreaseDecreaseInCashAndCashEquivalents",
    ),
    _f(
        "effect_of_exchange_rate_changes",
        "us-gaap:EffectOfExchangeRateOnCashCashEquivalentsRestrictedCashAndRestrictedCashEquivalents",
        "us-gaap:EffectOfExchangeRateOnCashAndCashEquivalents",
        "ifrs-full:EffectOfExchangeRateChangesOnCashAndCashEquivalents",
    ),
    _f(
        "ending_cash_balance",
        "us-gaap:CashCashEquivalentsRestrictedCashAndRestrictedCashEquivalents",
        "us-gaap:CashAndCashEquivalentsAtCarryingValue",
        "ifrs-full:CashAndCashEquivalents",
        kind="instant",
    ),
)

CASHFLOW_COMPUTED: tuple[Computed, ...] = (
    Computed(
        "issuance_or_purchase_of_equity_shares",
        "sum_present",
        ("_share_issuance", "_share_repurchases"),
    ),
    # capital_expenditure is already negative (cash out), so FCF is a sum.
    Computed("free_cash_flow", "sum", ("net_cash_flow_from_operations", "capital_expenditure")),
)

FIELDS: dict[Statement, tuple[FieldSpec, ...]] = {
    "income": INCOME_FIELDS,
    "balance": BALANCE_FIELDS,
    "cashflow": CASHFLOW_FIELDS,
}
COMPUTED: dict[Statement, tuple[Computed, ...]] = {
    "income": INCOME_COMPUTED,
    "balance": BALANCE_COMPUTED,
    "cashflow": CASHFLOW_COMPUTED,
}

# Forms whose facts can be a statement's figures. Proxy statements (DEF 14A pay-versus-performance
# tables), 8-K exhibits and prospectuses repeat figures later, and would otherwise "win" as the
# most recently filed value while citing a document that is not a financial report.
ANNUAL_FORMS = frozenset({"10-K", "10-K/A", "10-KT", "10-KT/A", "20-F", "20-F/A", "40-F", "40-F/A"})
QUARTERLY_FORMS = frozenset({"10-Q", "10-Q/A", "10-QT", "10-QT/A", "6-K", "6-K/A"})
PERIODIC_FORMS = ANNUAL_FORMS | QUARTERLY_FORMS

# Taxonomies that hold financial statements (dei is only the cover page).
FINANCIAL_TAXONOMIES = ("us-gaap", "ifrs-full")
