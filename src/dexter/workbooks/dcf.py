"""A discounted-cash-flow model as a workbook with live formulas.

Four sheets: Inputs (each filed figure as a value beside its XBRL concept, period, accession and
URL), Assumptions (blue input cells a user changes), DCF (forecast, WACC, valuation and a
sensitivity grid, every cell a formula), Checks (each input equals the filed value; the cash
flow statement's cash rolls forward). `dcf_values` is the same calculation in Python: its figures
are the formulas' cached results, and the tests hold the recalculated workbook to them."""

from __future__ import annotations

from dataclasses import dataclass, field

from dexter.workbooks.book import Book, address
from dexter.workbooks.history import History
from dexter.workbooks.inputs import InputsSheet, cash_ties, checks_sheet

SENSITIVITY_STEPS = (-2, -1, 0, 1, 2)


@dataclass(frozen=True)
class Assumptions:
    price: float
    price_source: str
    growth: list[float]  # revenue growth per forecast year
    ebit_margin: float
    tax_rate: float
    da_percent: float  # of revenue
    capex_percent: float  # of revenue
    nwc_percent: float  # of the change in revenue
    risk_free: float = 0.0425
    beta: float = 1.0
    equity_premium: float = 0.05
    cost_of_debt: float = 0.055  # pre-tax
    terminal_growth: float = 0.025
    wacc_step: float = 0.005
    growth_step: float = 0.005


@dataclass(frozen=True)
class DcfValues:
    """Dexter's own calculation, cell for cell with the DCF sheet."""

    revenue: list[float]
    ebit: list[float]
    taxes: list[float]
    nopat: list[float]
    da: list[float]
    capex: list[float]
    nwc: list[float]
    fcf: list[float]
    periods: list[int]
    discount: list[float]
    present: list[float]
    cost_of_equity: float
    cost_of_debt_after_tax: float
    equity_market_value: float
    debt: float
    equity_weight: float
    debt_weight: float
    wacc: float
    sum_present: float
    terminal_value: float
    terminal_present: float
    enterprise_value: float
    cash: float
    equity_value: float
    shares: float
    per_share: float
    upside: float
    sensitivity: list[list[float]] = field(default_factory=list)
    sensitivity_wacc: list[float] = field(default_factory=list)
    sensitivity_growth: list[float] = field(default_factory=list)


def _round(x: float, places: int = 3) -> float:
    return round(x, places)


def default_assumptions(
    history: History, price: float, price_source: str, years: int = 5
) -> Assumptions:
    """Starting points read off the last filed year, rounded to 0.1% so they read as choices:
    growth starts at last year's (held within -10%..30%) and fades linearly toward the terminal
    rate; margin, D&A and capex as a share of revenue as last filed; the effective tax rate
    (21% when pre-tax income was not positive)."""
    last, before = history.years[-1], history.years[-2]
    revenue = history.value("revenue", last) or 0.0
    previous = history.value("revenue", before) or 0.0
    first = min(0.30, max(-0.10, revenue / previous - 1)) if previous > 0 else 0.05
    terminal = 0.025
    growth = [_round(first + (terminal - first) * t / years) for t in range(years)]
    pretax = history.value("pretax_income", last) or 0.0
    tax = history.value("income_tax_expense", last) or 0.0
    tax_rate = min(0.35, max(0.0, tax / pretax)) if pretax > 0 else 0.21
    return Assumptions(
        price=price,
        price_source=price_source,
        growth=growth,
        ebit_margin=_round((history.value("operating_income", last) or 0.0) / revenue),
        tax_rate=_round(tax_rate),
        da_percent=_round((history.value("depreciation_and_amortization", last) or 0.0) / revenue),
        capex_percent=_round((history.value("capital_expenditure", last) or 0.0) / revenue),
        nwc_percent=0.1,
        terminal_growth=terminal,
    )


def _latest(history: History, line: str) -> float:
    return history.value(line, history.years[-1]) or 0.0


def dcf_values(history: History, a: Assumptions) -> DcfValues:
    revenue, ebit, taxes, nopat, da, capex, nwc, fcf = ([] for _ in range(8))
    prior = _latest(history, "revenue")
    for growth in a.growth:
        current = prior * (1 + growth)
        revenue.append(current)
        ebit.append(current * a.ebit_margin)
        taxes.append(ebit[-1] * a.tax_rate)
        nopat.append(ebit[-1] - taxes[-1])
        da.append(current * a.da_percent)
        capex.append(current * a.capex_percent)
        nwc.append((current - prior) * a.nwc_percent)
        fcf.append(nopat[-1] + da[-1] - capex[-1] - nwc[-1])
        prior = current
    periods = list(range(1, len(a.growth) + 1))
    cost_of_equity = a.risk_free + a.beta * a.equity_premium
    after_tax = a.cost_of_debt * (1 - a.tax_rate)
    shares = _latest(history, "outstanding_shares")
    equity_market = a.price * shares
    debt = _latest(history, "total_debt")
    equity_weight = equity_market / (debt + equity_market)
    debt_weight = debt / (debt + equity_market)
    wacc = equity_weight * cost_of_equity + debt_weight * after_tax
    discount = [1 / (1 + wacc) ** p for p in periods]
    present = [f * d for f, d in zip(fcf, discount, strict=True)]
    sum_present = sum(present)
    terminal = fcf[-1] * (1 + a.terminal_growth) / (wacc - a.terminal_growth)
    terminal_present = terminal * discount[-1]
    enterprise = sum_present + terminal_present
    cash = _latest(history, "cash_and_equivalents") + _latest(history, "current_investments")
    equity = enterprise + cash - debt
    per_share = equity / shares
    waccs = [wacc + k * a.wacc_step for k in SENSITIVITY_STEPS]
    growths = [a.terminal_growth + k * a.growth_step for k in SENSITIVITY_STEPS]
    grid = [[_per_share_at(w, g, fcf, periods, debt, cash, shares) for g in growths] for w in waccs]
    return DcfValues(
        revenue=revenue,
        ebit=ebit,
        taxes=taxes,
        nopat=nopat,
        da=da,
        capex=capex,
        nwc=nwc,
        fcf=fcf,
        periods=periods,
        discount=discount,
        present=present,
        cost_of_equity=cost_of_equity,
        cost_of_debt_after_tax=after_tax,
        equity_market_value=equity_market,
        debt=debt,
        equity_weight=equity_weight,
        debt_weight=debt_weight,
        wacc=wacc,
        sum_present=sum_present,
        terminal_value=terminal,
        terminal_present=terminal_present,
        enterprise_value=enterprise,
        cash=cash,
        equity_value=equity,
        shares=shares,
        per_share=per_share,
        upside=per_share / a.price - 1,
        sensitivity=grid,
        sensitivity_wacc=waccs,
        sensitivity_growth=growths,
    )


def _per_share_at(
    w: float, g: float, fcf: list[float], periods: list[int], debt: float, cash: float, s: float
) -> float:
    # The same terms, in the same order, as the sensitivity cell's formula.
    total = 0.0
    for f, p in zip(fcf, periods, strict=True):
        total += f / (1 + w) ** p
    total += fcf[-1] * (1 + g) / (w - g) / (1 + w) ** periods[-1]
    return (total - debt + cash) / s


def dcf_workbook(history: History, a: Assumptions) -> tuple[Book, DcfValues]:
    values = dcf_values(history, a)
    book = Book()
    inputs = InputsSheet(book.sheet("Inputs"), history)
    assume = _assumptions_sheet(book, history, a)
    _dcf_sheet(book, history, a, values, inputs, assume)
    checks_sheet(book.sheet("Checks"), inputs, cash_ties(history, inputs))
    return book, values


@dataclass
class _Assumed:
    price: str = ""
    growth: list[str] = field(default_factory=list)
    margin: str = ""
    tax: str = ""
    da: str = ""
    capex: str = ""
    nwc: str = ""
    risk_free: str = ""
    beta: str = ""
    premium: str = ""
    cost_of_debt: str = ""
    terminal: str = ""
    wacc_step: str = ""
    growth_step: str = ""


def _assumptions_sheet(book: Book, history: History, a: Assumptions) -> _Assumed:
    sheet = book.sheet("Assumptions")
    sheet.widths.update({0: 44, 1: 12, 2: 90})
    sheet.put(0, 0, f"{history.ticker} DCF assumptions (blue: change them)", style="title")
    for column, text in enumerate(["Assumption", "Value", "Basis"]):
        sheet.put(2, column, text, style="header")
    out = _Assumed()
    row = 3

    def put(name: str, label: str, value: float, style: str, basis: str) -> str:
        nonlocal row
        cell = sheet.put(row, 1, value, style=style)
        sheet.put(row, 0, label)
        sheet.put(row, 2, basis, style="note")
        book.names[name] = cell
        row += 1
        return cell

    last = history.years[-1]
    out.price = put("SharePrice", "Share price", a.price, "input_per_share", a.price_source)
    for year, growth in enumerate(a.growth, start=1):
        out.growth.append(
            put(
                f"RevenueGrowthYear{year}",
                f"Revenue growth, forecast year {year}",
                growth,
                "input_percent",
                f"{last} growth held within -10%..30%, fading to the terminal rate"
                if year == 1
                else "",
            )
        )
    out.margin = put(
        "EbitMargin", "EBIT margin", a.ebit_margin, "input_percent", f"{last} operating margin"
    )
    out.tax = put(
        "TaxRate", "Tax rate", a.tax_rate, "input_percent", f"{last} effective rate, 0%..35%"
    )
    out.da = put("DaPercent", "D&A, % of revenue", a.da_percent, "input_percent", f"as in {last}")
    out.capex = put(
        "CapexPercent", "Capex, % of revenue", a.capex_percent, "input_percent", f"as in {last}"
    )
    out.nwc = put(
        "NwcPercent",
        "Working capital, % of the change in revenue",
        a.nwc_percent,
        "input_percent",
        "a convention; the filings do not fix it",
    )
    out.risk_free = put("RiskFree", "Risk-free rate", a.risk_free, "input_percent", "")
    out.beta = put("Beta", "Equity beta", a.beta, "input_number", "market average")
    out.premium = put("EquityPremium", "Equity risk premium", a.equity_premium, "input_percent", "")
    out.cost_of_debt = put(
        "CostOfDebt", "Pre-tax cost of debt", a.cost_of_debt, "input_percent", ""
    )
    out.terminal = put("TerminalGrowth", "Terminal growth", a.terminal_growth, "input_percent", "")
    out.wacc_step = put("WaccStep", "Sensitivity: WACC step", a.wacc_step, "input_percent", "")
    out.growth_step = put(
        "GrowthStep", "Sensitivity: terminal growth step", a.growth_step, "input_percent", ""
    )
    return out


def _dcf_sheet(
    book: Book,
    history: History,
    a: Assumptions,
    v: DcfValues,
    inputs: InputsSheet,
    s: _Assumed,
) -> None:
    sheet = book.sheet("DCF")
    sheet.widths[0] = 40
    hist = history.years
    n_hist, n_fore = len(hist), len(a.growth)
    first_fore = 1 + n_hist
    last_col = n_hist + n_fore
    for column in range(1, last_col + 1):
        sheet.widths[column] = 12
    sheet.put(
        0,
        0,
        f"{history.name} ({history.ticker}): discounted cash flow, USD millions",
        style="title",
    )

    def here(row: int, column: int) -> str:
        return address(row, column, absolute=False)

    # Rows of the forecast block.
    YEAR, KIND, REV, GROWTH, EBIT, MARGIN, TAX, NOPAT, DA, DA_PCT, CAPEX, CAPEX_PCT = range(2, 14)
    NWC, FCF, PERIOD, FACTOR, PV = range(14, 19)
    labels = {
        YEAR: "Fiscal year",
        KIND: "",
        REV: "Revenue",
        GROWTH: "Revenue growth",
        EBIT: "Operating income (EBIT)",
        MARGIN: "EBIT margin",
        TAX: "Taxes on EBIT",
        NOPAT: "NOPAT",
        DA: "Depreciation and amortization",
        DA_PCT: "D&A, % of revenue",
        CAPEX: "Capital expenditure",
        CAPEX_PCT: "Capex, % of revenue",
        NWC: "Investment in working capital",
        FCF: "Unlevered free cash flow",
        PERIOD: "Discount period (years)",
        FACTOR: "Discount factor",
        PV: "Present value of free cash flow",
    }
    for row, label in labels.items():
        sheet.put(row, 0, label, style="header" if row == YEAR else "text")

    def ratio(row: int, column: int, top: int, bottom: int, value: float | None) -> None:
        if value is not None:
            formula = f"{here(top, column)}/{here(bottom, column)}"
            sheet.put(row, column, value, formula=formula, style="percent")

    for i, year in enumerate(hist):
        c = 1 + i
        sheet.put(YEAR, c, int(year[:4]), style="year")
        sheet.put(KIND, c, "Actual", style="header")
        rev = history.value("revenue", year)
        for row, line in ((REV, "revenue"), (EBIT, "operating_income")):
            formula = inputs.formula(line, year)
            if formula:
                sheet.put(row, c, history.value(line, year), formula=formula, style="money")
        for row, line in ((DA, "depreciation_and_amortization"), (CAPEX, "capital_expenditure")):
            formula = inputs.formula(line, year)
            if formula:
                sheet.put(row, c, history.value(line, year), formula=formula, style="money")
        previous = history.value("revenue", hist[i - 1]) if i else None
        if i and rev is not None and previous:
            growth = f"{here(REV, c)}/{here(REV, c - 1)}-1"
            sheet.put(GROWTH, c, rev / previous - 1, formula=growth, style="percent")
        if rev:
            ratio(MARGIN, c, EBIT, REV, _div(history.value("operating_income", year), rev))
            if (DA, c) in sheet.cells:
                ratio(
                    DA_PCT,
                    c,
                    DA,
                    REV,
                    _div(history.value("depreciation_and_amortization", year), rev),
                )
            if (CAPEX, c) in sheet.cells:
                ratio(
                    CAPEX_PCT, c, CAPEX, REV, _div(history.value("capital_expenditure", year), rev)
                )

    base_year = address(YEAR, n_hist)
    for t in range(n_fore):
        c = first_fore + t
        prev = c - 1
        sheet.put(YEAR, c, int(hist[-1][:4]) + t + 1, formula=f"{here(YEAR, prev)}+1", style="year")
        sheet.put(KIND, c, "Forecast", style="header")
        sheet.put(GROWTH, c, a.growth[t], formula=s.growth[t], style="percent")
        sheet.put(
            REV, c, v.revenue[t], formula=f"{here(REV, prev)}*(1+{here(GROWTH, c)})", style="money"
        )
        sheet.put(MARGIN, c, a.ebit_margin, formula=s.margin, style="percent")
        sheet.put(EBIT, c, v.ebit[t], formula=f"{here(REV, c)}*{here(MARGIN, c)}", style="money")
        sheet.put(TAX, c, v.taxes[t], formula=f"{here(EBIT, c)}*{s.tax}", style="money")
        sheet.put(NOPAT, c, v.nopat[t], formula=f"{here(EBIT, c)}-{here(TAX, c)}", style="money")
        sheet.put(DA_PCT, c, a.da_percent, formula=s.da, style="percent")
        sheet.put(DA, c, v.da[t], formula=f"{here(REV, c)}*{here(DA_PCT, c)}", style="money")
        sheet.put(CAPEX_PCT, c, a.capex_percent, formula=s.capex, style="percent")
        sheet.put(
            CAPEX, c, v.capex[t], formula=f"{here(REV, c)}*{here(CAPEX_PCT, c)}", style="money"
        )
        sheet.put(
            NWC, c, v.nwc[t], formula=f"({here(REV, c)}-{here(REV, prev)})*{s.nwc}", style="money"
        )
        fcf = f"{here(NOPAT, c)}+{here(DA, c)}-{here(CAPEX, c)}-{here(NWC, c)}"
        sheet.put(FCF, c, v.fcf[t], formula=fcf, style="money_total")
        sheet.put(PERIOD, c, v.periods[t], formula=f"{here(YEAR, c)}-{base_year}", style="year")

    # WACC and valuation: label in column A, value in column B.
    row = PV + 2
    cells: dict[str, str] = {}

    def put_line(key: str, label: str, value: float, formula: str, style: str = "money") -> str:
        nonlocal row
        sheet.put(row, 0, label, style="text")
        cells[key] = sheet.put(row, 1, value, formula=formula, style=style)
        book.names[key] = cells[key]
        row += 1
        return address(row - 1, 1)

    sheet.put(row, 0, "Cost of capital", style="header")
    row += 1
    latest = hist[-1]
    debt_formula = inputs.formula("total_debt", latest) or "0"
    shares_formula = inputs.formula("outstanding_shares", latest) or "0"
    ke = put_line(
        "CostOfEquity",
        "Cost of equity (CAPM)",
        v.cost_of_equity,
        f"{s.risk_free}+{s.beta}*{s.premium}",
        "percent",
    )
    kd = put_line(
        "CostOfDebtAfterTax",
        "After-tax cost of debt",
        v.cost_of_debt_after_tax,
        f"{s.cost_of_debt}*(1-{s.tax})",
        "percent",
    )
    shares = put_line(
        "Shares", f"Shares outstanding ({latest})", v.shares, shares_formula, "shares"
    )
    equity_mv = put_line(
        "EquityMarketValue", "Market value of equity", v.equity_market_value, f"{s.price}*{shares}"
    )
    debt = put_line("Debt", f"Debt ({latest})", v.debt, debt_formula)
    ew = put_line(
        "EquityWeight",
        "Equity weight",
        v.equity_weight,
        f"{equity_mv}/({debt}+{equity_mv})",
        "percent",
    )
    dw = put_line(
        "DebtWeight", "Debt weight", v.debt_weight, f"{debt}/({debt}+{equity_mv})", "percent"
    )
    wacc = put_line("WACC", "WACC", v.wacc, f"{ew}*{ke}+{dw}*{kd}", "percent")

    for t in range(n_fore):
        c = first_fore + t
        sheet.put(
            FACTOR, c, v.discount[t], formula=f"1/(1+{wacc})^{here(PERIOD, c)}", style="ratio"
        )
        sheet.put(PV, c, v.present[t], formula=f"{here(FCF, c)}*{here(FACTOR, c)}", style="money")

    row += 1
    sheet.put(row, 0, "Valuation", style="header")
    row += 1
    fore = f"{address(PV, first_fore)}:{address(PV, last_col)}"
    last_fcf, last_factor = address(FCF, last_col), address(FACTOR, last_col)
    total_pv = put_line(
        "SumOfPresentValues", "Sum of present values", v.sum_present, f"SUM({fore})"
    )
    tv = put_line(
        "TerminalValue",
        "Terminal value (Gordon growth)",
        v.terminal_value,
        f"{last_fcf}*(1+{s.terminal})/({wacc}-{s.terminal})",
    )
    tv_pv = put_line(
        "TerminalPresentValue",
        "Present value of terminal value",
        v.terminal_present,
        f"{tv}*{last_factor}",
    )
    ev = put_line(
        "EnterpriseValue",
        "Enterprise value",
        v.enterprise_value,
        f"{total_pv}+{tv_pv}",
        "money_total",
    )
    cash_parts = [
        f
        for f in (
            inputs.formula("cash_and_equivalents", latest),
            inputs.formula("current_investments", latest),
        )
        if f
    ]
    cash = put_line(
        "Cash", "Plus cash and short-term investments", v.cash, "+".join(cash_parts) or "0"
    )
    put_line("LessDebt", "Less debt", v.debt, debt)
    equity = put_line(
        "EquityValue", "Equity value", v.equity_value, f"{ev}+{cash}-{debt}", "money_total"
    )
    per_share = put_line(
        "ValuePerShare",
        "Value per share (USD)",
        v.per_share,
        f"{equity}/{shares}",
        "per_share_total",
    )
    put_line("Upside", "Versus the share price", v.upside, f"{per_share}/{s.price}-1", "percent")

    # Sensitivity: value per share for WACC (down) x terminal growth (across), each cell the
    # whole valuation again so it moves with every forecast cell.
    row += 1
    sheet.put(row, 0, "Value per share: WACC (rows) x terminal growth (columns)", style="header")
    row += 1
    head = row
    for j, k in enumerate(SENSITIVITY_STEPS):
        sheet.put(
            head,
            2 + j,
            v.sensitivity_growth[j],
            formula=f"{s.terminal}+({k})*{s.growth_step}",
            style="percent",
        )
    fcfs = [(address(FCF, first_fore + t), address(PERIOD, first_fore + t)) for t in range(n_fore)]
    for i, k in enumerate(SENSITIVITY_STEPS):
        r = head + 1 + i
        sheet.put(
            r, 1, v.sensitivity_wacc[i], formula=f"{wacc}+({k})*{s.wacc_step}", style="percent"
        )
        w = address(r, 1)
        for j in range(len(SENSITIVITY_STEPS)):
            g = address(head, 2 + j)
            terms = [f"{f}/(1+{w})^{p}" for f, p in fcfs]
            terms.append(f"{last_fcf}*(1+{g})/({w}-{g})/(1+{w})^{fcfs[-1][1]}")
            formula = f"({'+'.join(terms)}-{debt}+{cash})/{shares}"
            sheet.put(r, 2 + j, v.sensitivity[i][j], formula=formula, style="per_share")


def _div(top: float | None, bottom: float) -> float | None:
    return None if top is None else top / bottom


__all__ = ["Assumptions", "DcfValues", "dcf_values", "dcf_workbook", "default_assumptions"]
