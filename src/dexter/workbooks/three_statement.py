"""A linked three-statement model: income statement, balance sheet and cash flow forecast from the
last filed year, as a workbook whose every derived cell is a formula.

How it balances: the forecast balance sheet carries cash, receivables, inventory, PP&E and
payables from drivers; the rest of each side ("other assets", "other liabilities", "other
equity": non-controlling and temporary equity) is the filed total less the itemised lines in
the last filed year, then held flat. Cash is last year's cash plus the forecast cash flow
statement (net income + D&A - working capital - capex - payouts), and equity grows by net
income less payouts, so assets equal liabilities plus equity in every year by construction; the
Checks sheet proves it with a formula per year. Interest is charged on the opening debt (no
circular reference)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dexter.workbooks.book import Book, Sheet, address
from dexter.workbooks.history import History
from dexter.workbooks.inputs import Check, InputsSheet, cash_ties, checks_sheet


@dataclass(frozen=True)
class Drivers:
    growth: list[float]
    cost_percent: float  # cost of revenue, % of revenue
    opex_percent: float  # operating expenses, % of revenue
    tax_rate: float
    da_percent: float
    capex_percent: float
    receivables_percent: float  # of revenue
    inventory_percent: float  # of cost of revenue
    payables_percent: float  # of cost of revenue
    payout_percent: float  # dividends and net buybacks, % of net income
    interest_rate: float = 0.055


@dataclass
class Forecast:
    """Dexter's own calculation, year by year, as on the sheet."""

    revenue: list[float] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    gross: list[float] = field(default_factory=list)
    opex: list[float] = field(default_factory=list)
    ebit: list[float] = field(default_factory=list)
    interest: list[float] = field(default_factory=list)
    pretax: list[float] = field(default_factory=list)
    tax: list[float] = field(default_factory=list)
    net_income: list[float] = field(default_factory=list)
    da: list[float] = field(default_factory=list)
    capex: list[float] = field(default_factory=list)
    receivables: list[float] = field(default_factory=list)
    inventory: list[float] = field(default_factory=list)
    payables: list[float] = field(default_factory=list)
    operating_cash: list[float] = field(default_factory=list)
    payout: list[float] = field(default_factory=list)
    net_change: list[float] = field(default_factory=list)
    cash: list[float] = field(default_factory=list)
    ppe: list[float] = field(default_factory=list)
    equity: list[float] = field(default_factory=list)
    total_assets: list[float] = field(default_factory=list)
    total_claims: list[float] = field(default_factory=list)
    other_assets: float = 0.0
    other_liabilities: float = 0.0
    other_equity: float = 0.0
    debt: float = 0.0


def _clamp(x: float, low: float, high: float) -> float:
    return round(min(high, max(low, x)), 3)


def default_drivers(history: History, years: int = 5) -> Drivers:
    """Last filed year's ratios, rounded to 0.1%; growth fades from last year's (within
    -10%..30%) toward 2.5%."""
    before = history.years[-2]
    revenue = _latest(history, "revenue")
    previous = history.value("revenue", before) or 0.0
    first = min(0.30, max(-0.10, revenue / previous - 1)) if previous > 0 else 0.05
    growth = [round(first + (0.025 - first) * t / years, 3) for t in range(years)]
    cost = _latest(history, "cost_of_revenue")
    ebit = _latest(history, "operating_income")
    pretax = _latest(history, "pretax_income")
    tax = _latest(history, "income_tax_expense")
    net = _latest(history, "net_income")
    paid = _latest(history, "dividends_and_other_cash_distributions") + _latest(
        history, "issuance_or_purchase_of_equity_shares"
    )
    return Drivers(
        growth=growth,
        cost_percent=_clamp(cost / revenue, 0, 1),
        opex_percent=_clamp((revenue - cost - ebit) / revenue, 0, 2),
        tax_rate=_clamp(tax / pretax, 0, 0.35) if pretax > 0 else 0.21,
        da_percent=_clamp(_latest(history, "depreciation_and_amortization") / revenue, 0, 1),
        capex_percent=_clamp(_latest(history, "capital_expenditure") / revenue, 0, 1),
        receivables_percent=_clamp(
            _latest(history, "trade_and_non_trade_receivables") / revenue, 0, 1
        ),
        inventory_percent=_clamp(_latest(history, "inventory") / cost, 0, 2) if cost else 0.0,
        payables_percent=_clamp(_latest(history, "trade_and_non_trade_payables") / cost, 0, 2)
        if cost
        else 0.0,
        payout_percent=_clamp(paid / net, 0, 1) if net > 0 else 0.0,
    )


def _latest(history: History, line: str) -> float:
    return history.value(line, history.years[-1]) or 0.0


def forecast(history: History, d: Drivers) -> Forecast:
    f = Forecast()
    revenue = _latest(history, "revenue")
    cash = _latest(history, "cash_and_equivalents")
    receivables = _latest(history, "trade_and_non_trade_receivables")
    inventory = _latest(history, "inventory")
    ppe = _latest(history, "property_plant_and_equipment")
    payables = _latest(history, "trade_and_non_trade_payables")
    equity = _latest(history, "shareholders_equity")
    f.debt = _latest(history, "total_debt")
    assets, liabilities = _latest(history, "total_assets"), _latest(history, "total_liabilities")
    f.other_assets = assets - cash - receivables - inventory - ppe
    f.other_liabilities = liabilities - payables - f.debt
    f.other_equity = assets - liabilities - equity
    for growth in d.growth:
        revenue = revenue * (1 + growth)
        f.revenue.append(revenue)
        f.cost.append(revenue * d.cost_percent)
        f.gross.append(revenue - f.cost[-1])
        f.opex.append(revenue * d.opex_percent)
        f.ebit.append(f.gross[-1] - f.opex[-1])
        f.interest.append(f.debt * d.interest_rate)
        f.pretax.append(f.ebit[-1] - f.interest[-1])
        f.tax.append(f.pretax[-1] * d.tax_rate)
        f.net_income.append(f.pretax[-1] - f.tax[-1])
        f.da.append(revenue * d.da_percent)
        f.capex.append(revenue * d.capex_percent)
        new_receivables = revenue * d.receivables_percent
        new_inventory = f.cost[-1] * d.inventory_percent
        new_payables = f.cost[-1] * d.payables_percent
        operating = (
            f.net_income[-1]
            + f.da[-1]
            - (new_receivables - receivables)
            - (new_inventory - inventory)
            + (new_payables - payables)
        )
        f.operating_cash.append(operating)
        f.payout.append(f.net_income[-1] * d.payout_percent)
        f.net_change.append(operating - f.capex[-1] - f.payout[-1])
        cash = cash + f.net_change[-1]
        ppe = ppe + f.capex[-1] - f.da[-1]
        equity = equity + f.net_income[-1] - f.payout[-1]
        receivables, inventory, payables = new_receivables, new_inventory, new_payables
        f.receivables.append(receivables)
        f.inventory.append(inventory)
        f.payables.append(payables)
        f.cash.append(cash)
        f.ppe.append(ppe)
        f.equity.append(equity)
        f.total_assets.append(cash + receivables + inventory + ppe + f.other_assets)
        f.total_claims.append(payables + f.debt + f.other_liabilities + equity + f.other_equity)
    return f


# Rows of the model sheet.
(YEAR, KIND, IS_HEAD, REV, GROWTH, COST, GROSS, OPEX, EBIT, INTEREST, PRETAX, TAX, NET) = range(
    2, 15
)
(BS_HEAD, CASH, AR, INV, PPE, OTHER_A, ASSETS, AP, DEBT, OTHER_L, EQUITY, OTHER_E, CLAIMS) = range(
    16, 29
)
(CF_HEAD, CF_NET, CF_DA, CF_AR, CF_INV, CF_AP, CFO, CF_CAPEX, CF_PAYOUT, CF_CHANGE) = range(30, 40)
LABELS = {
    YEAR: "Fiscal year",
    IS_HEAD: "Income statement",
    REV: "Revenue",
    GROWTH: "Revenue growth",
    COST: "Cost of revenue",
    GROSS: "Gross profit",
    OPEX: "Operating expenses",
    EBIT: "Operating income",
    INTEREST: "Interest on opening debt",
    PRETAX: "Pre-tax income",
    TAX: "Income tax",
    NET: "Net income",
    BS_HEAD: "Balance sheet",
    CASH: "Cash and equivalents",
    AR: "Receivables",
    INV: "Inventory",
    PPE: "Property, plant and equipment",
    OTHER_A: "Other assets (total assets less the lines above)",
    ASSETS: "Total assets",
    AP: "Payables",
    DEBT: "Debt",
    OTHER_L: "Other liabilities (total liabilities less payables and debt)",
    EQUITY: "Shareholders' equity",
    OTHER_E: "Other equity (non-controlling, temporary)",
    CLAIMS: "Total liabilities and equity",
    CF_HEAD: "Cash flow statement",
    CF_NET: "Net income",
    CF_DA: "Depreciation and amortization",
    CF_AR: "Less increase in receivables",
    CF_INV: "Less increase in inventory",
    CF_AP: "Plus increase in payables",
    CFO: "Cash from operations",
    CF_CAPEX: "Capital expenditure",
    CF_PAYOUT: "Dividends and net buybacks",
    CF_CHANGE: "Net change in cash",
}
HEADS = (YEAR, IS_HEAD, BS_HEAD, CF_HEAD)


def three_statement_workbook(history: History, d: Drivers) -> tuple[Book, Forecast]:
    f = forecast(history, d)
    book = Book()
    inputs = InputsSheet(book.sheet("Inputs"), history)
    drivers = _drivers_sheet(book, history, d)
    sheet = book.sheet("Model")
    balances = _model_sheet(sheet, history, d, f, inputs, drivers)
    checks_sheet(book.sheet("Checks"), inputs, [*balances, *cash_ties(history, inputs)])
    return book, f


@dataclass
class _DriverCells:
    growth: list[str] = field(default_factory=list)
    by_name: dict[str, str] = field(default_factory=dict)


def _drivers_sheet(book: Book, history: History, d: Drivers) -> _DriverCells:
    sheet = book.sheet("Assumptions")
    sheet.widths.update({0: 46, 1: 12, 2: 60})
    sheet.put(0, 0, f"{history.ticker} forecast drivers (blue: change them)", style="title")
    for column, text in enumerate(["Driver", "Value", "Basis"]):
        sheet.put(2, column, text, style="header")
    cells = _DriverCells()
    last = history.years[-1]
    rows: list[tuple[str, str, float, str]] = [
        (f"RevenueGrowthYear{t}", f"Revenue growth, forecast year {t}", g, "")
        for t, g in enumerate(d.growth, start=1)
    ]
    rows += [
        ("CostPercent", "Cost of revenue, % of revenue", d.cost_percent, f"as in {last}"),
        ("OpexPercent", "Operating expenses, % of revenue", d.opex_percent, f"as in {last}"),
        ("TaxRate", "Tax rate", d.tax_rate, f"{last} effective rate, 0%..35%"),
        ("DaPercent", "D&A, % of revenue", d.da_percent, f"as in {last}"),
        ("CapexPercent", "Capex, % of revenue", d.capex_percent, f"as in {last}"),
        ("ReceivablesPercent", "Receivables, % of revenue", d.receivables_percent, f"{last}"),
        ("InventoryPercent", "Inventory, % of cost of revenue", d.inventory_percent, f"{last}"),
        ("PayablesPercent", "Payables, % of cost of revenue", d.payables_percent, f"{last}"),
        (
            "PayoutPercent",
            "Dividends and net buybacks, % of net income",
            d.payout_percent,
            f"as in {last}, 0%..100%",
        ),
        ("InterestRate", "Interest rate on debt", d.interest_rate, "a convention"),
    ]
    for row, (name, label, value, basis) in enumerate(rows, start=3):
        sheet.put(row, 0, label)
        cell = sheet.put(row, 1, value, style="input_percent")
        sheet.put(row, 2, basis, style="note")
        book.names[name] = cell
        cells.by_name[name] = cell
        if name.startswith("RevenueGrowth"):
            cells.growth.append(cell)
    return cells


def _model_sheet(
    sheet: Sheet,
    history: History,
    d: Drivers,
    f: Forecast,
    inputs: InputsSheet,
    dc: _DriverCells,
) -> list[Check]:
    sheet.widths[0] = 58
    hist = history.years
    n_hist = len(hist)
    base = n_hist  # column of the last filed year
    sheet.put(
        0, 0, f"{history.name} ({history.ticker}): three statements, USD millions", style="title"
    )
    for row, label in LABELS.items():
        sheet.put(row, 0, label, style="header" if row in HEADS else "text")
    for column in range(1, n_hist + len(d.growth) + 1):
        sheet.widths[column] = 12

    def at(row: int, column: int) -> str:
        return address(row, column, absolute=False)

    def put(row: int, column: int, value: float, formula: str, style: str = "money") -> None:
        sheet.put(row, column, value, formula=formula, style=style)

    # Filed years: the income statement as filed; the balance sheet of the last year as the base.
    for i, year in enumerate(hist):
        c = 1 + i
        sheet.put(YEAR, c, int(year[:4]), style="year")
        sheet.put(KIND, c, "Actual", style="header")
        for row, line in (
            (REV, "revenue"),
            (COST, "cost_of_revenue"),
            (EBIT, "operating_income"),
            (PRETAX, "pretax_income"),
            (TAX, "income_tax_expense"),
            (NET, "net_income"),
        ):
            formula = inputs.formula(line, year)
            if formula:
                put(row, c, history.value(line, year) or 0.0, formula)
        rev, previous = history.value("revenue", year), history.value("revenue", hist[i - 1])
        if i and rev is not None and previous:
            put(GROWTH, c, rev / previous - 1, f"{at(REV, c)}/{at(REV, c - 1)}-1", "percent")
        cost = history.value("cost_of_revenue", year)
        ebit = history.value("operating_income", year)
        if rev is not None and cost is not None:
            put(GROSS, c, rev - cost, f"{at(REV, c)}-{at(COST, c)}")
            if ebit is not None:
                put(OPEX, c, rev - cost - ebit, f"{at(GROSS, c)}-{at(EBIT, c)}")

    latest = hist[-1]

    def filed(line: str) -> str:
        return inputs.formula(line, latest) or "0"

    put(CASH, base, _latest(history, "cash_and_equivalents"), filed("cash_and_equivalents"))
    put(
        AR,
        base,
        _latest(history, "trade_and_non_trade_receivables"),
        filed("trade_and_non_trade_receivables"),
    )
    put(INV, base, _latest(history, "inventory"), filed("inventory"))
    put(
        PPE,
        base,
        _latest(history, "property_plant_and_equipment"),
        filed("property_plant_and_equipment"),
    )
    total_assets, total_liabilities = filed("total_assets"), filed("total_liabilities")
    put(
        OTHER_A,
        base,
        f.other_assets,
        f"{total_assets}-{at(CASH, base)}-{at(AR, base)}-{at(INV, base)}-{at(PPE, base)}",
    )
    put(
        AP,
        base,
        _latest(history, "trade_and_non_trade_payables"),
        filed("trade_and_non_trade_payables"),
    )
    put(DEBT, base, f.debt, filed("total_debt"))
    put(OTHER_L, base, f.other_liabilities, f"{total_liabilities}-{at(AP, base)}-{at(DEBT, base)}")
    put(EQUITY, base, _latest(history, "shareholders_equity"), filed("shareholders_equity"))
    put(OTHER_E, base, f.other_equity, f"{total_assets}-{total_liabilities}-{at(EQUITY, base)}")
    base_assets = _latest(history, "total_assets")
    put(ASSETS, base, base_assets, f"SUM({at(CASH, base)}:{at(OTHER_A, base)})", "money_total")
    put(CLAIMS, base, base_assets, f"SUM({at(AP, base)}:{at(OTHER_E, base)})", "money_total")

    dn = dc.by_name
    for t in range(len(d.growth)):
        c, p = base + 1 + t, base + t
        sheet.put(YEAR, c, int(latest[:4]) + t + 1, formula=f"{at(YEAR, p)}+1", style="year")
        sheet.put(KIND, c, "Forecast", style="header")
        put(GROWTH, c, d.growth[t], dc.growth[t], "percent")
        put(REV, c, f.revenue[t], f"{at(REV, p)}*(1+{at(GROWTH, c)})")
        put(COST, c, f.cost[t], f"{at(REV, c)}*{dn['CostPercent']}")
        put(GROSS, c, f.gross[t], f"{at(REV, c)}-{at(COST, c)}")
        put(OPEX, c, f.opex[t], f"{at(REV, c)}*{dn['OpexPercent']}")
        put(EBIT, c, f.ebit[t], f"{at(GROSS, c)}-{at(OPEX, c)}")
        put(INTEREST, c, f.interest[t], f"{at(DEBT, p)}*{dn['InterestRate']}")
        put(PRETAX, c, f.pretax[t], f"{at(EBIT, c)}-{at(INTEREST, c)}")
        put(TAX, c, f.tax[t], f"{at(PRETAX, c)}*{dn['TaxRate']}")
        put(NET, c, f.net_income[t], f"{at(PRETAX, c)}-{at(TAX, c)}", "money_total")
        # Cash flow statement.
        put(CF_NET, c, f.net_income[t], at(NET, c))
        put(CF_DA, c, f.da[t], f"{at(REV, c)}*{dn['DaPercent']}")
        put(AR, c, f.receivables[t], f"{at(REV, c)}*{dn['ReceivablesPercent']}")
        put(INV, c, f.inventory[t], f"{at(COST, c)}*{dn['InventoryPercent']}")
        put(AP, c, f.payables[t], f"{at(COST, c)}*{dn['PayablesPercent']}")
        put(
            CF_AR,
            c,
            -(
                f.receivables[t]
                - (
                    f.receivables[t - 1]
                    if t
                    else _latest(history, "trade_and_non_trade_receivables")
                )
            ),
            f"{at(AR, p)}-{at(AR, c)}",
        )
        put(
            CF_INV,
            c,
            -(f.inventory[t] - (f.inventory[t - 1] if t else _latest(history, "inventory"))),
            f"{at(INV, p)}-{at(INV, c)}",
        )
        put(
            CF_AP,
            c,
            f.payables[t]
            - (f.payables[t - 1] if t else _latest(history, "trade_and_non_trade_payables")),
            f"{at(AP, c)}-{at(AP, p)}",
        )
        put(CFO, c, f.operating_cash[t], f"SUM({at(CF_NET, c)}:{at(CF_AP, c)})", "money_total")
        put(CF_CAPEX, c, -f.capex[t], f"-{at(REV, c)}*{dn['CapexPercent']}")
        put(CF_PAYOUT, c, -f.payout[t], f"-{at(NET, c)}*{dn['PayoutPercent']}")
        put(
            CF_CHANGE,
            c,
            f.net_change[t],
            f"{at(CFO, c)}+{at(CF_CAPEX, c)}+{at(CF_PAYOUT, c)}",
            "money_total",
        )
        # Balance sheet.
        put(CASH, c, f.cash[t], f"{at(CASH, p)}+{at(CF_CHANGE, c)}")
        put(PPE, c, f.ppe[t], f"{at(PPE, p)}-{at(CF_CAPEX, c)}-{at(CF_DA, c)}")
        put(OTHER_A, c, f.other_assets, at(OTHER_A, p))
        put(ASSETS, c, f.total_assets[t], f"SUM({at(CASH, c)}:{at(OTHER_A, c)})", "money_total")
        put(DEBT, c, f.debt, at(DEBT, p))
        put(OTHER_L, c, f.other_liabilities, at(OTHER_L, p))
        put(EQUITY, c, f.equity[t], f"{at(EQUITY, p)}+{at(NET, c)}+{at(CF_PAYOUT, c)}")
        put(OTHER_E, c, f.other_equity, at(OTHER_E, p))
        put(CLAIMS, c, f.total_claims[t], f"SUM({at(AP, c)}:{at(OTHER_E, c)})", "money_total")

    checks = [
        Check(
            f"Balance sheet {latest} (filed): itemised assets sum to the filed total assets",
            f"ROUND('Model'!{address(ASSETS, base)}-{total_assets},0)=0",
        )
    ]
    for t in range(len(d.growth)):
        c = base + 1 + t
        forecast_year = int(latest[:4]) + t + 1
        checks.append(
            Check(
                f"Balance sheet {forecast_year} (forecast) balances: assets = liabilities + equity",
                f"ROUND('Model'!{address(ASSETS, c)}-'Model'!{address(CLAIMS, c)},0)=0",
                round(f.total_assets[t] - f.total_claims[t]) == 0,
            )
        )
        checks.append(
            Check(
                f"Cash {forecast_year}: balance sheet cash = last year's + change in cash",
                f"ROUND('Model'!{address(CASH, c)}-'Model'!{address(CASH, c - 1)}"
                f"-'Model'!{address(CF_CHANGE, c)},0)=0",
            )
        )
    return checks


__all__ = ["Drivers", "Forecast", "default_drivers", "forecast", "three_statement_workbook"]
