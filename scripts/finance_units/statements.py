"""The statement areas: every companyfacts filer across income, balance sheet, cash flow,
quarters, trailing twelve months, total debt, share basis, restatements and citations."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

from finance_units import cases
from finance_units.debt import debt_at
from finance_units.raw import ANNUAL_FORMS, SPANS, Filer, FiscalYear, fmt
from finance_units.rules import FIELDS, Field, Figure, annual, at_date, quarter, ttm

Case = dict[str, Any]

INCOME = (
    "revenue",
    "cost_of_revenue",
    "gross_profit",
    "operating_expense",
    "research_and_development",
    "selling_general_and_administrative_expenses",
    "operating_income",
    "income_tax_expense",
    "net_income",
)
BALANCE = (
    "total_assets",
    "current_assets",
    "cash_and_equivalents",
    "inventory",
    "total_liabilities",
    "current_liabilities",
    "shareholders_equity",
    "retained_earnings",
)
BALANCE_QUARTERLY = (
    "total_assets",
    "current_assets",
    "cash_and_equivalents",
    "total_liabilities",
    "shareholders_equity",
    "retained_earnings",
)
CASH_FLOW = (
    "net_cash_flow_from_operations",
    "net_cash_flow_from_investing",
    "net_cash_flow_from_financing",
    "capital_expenditure",
    "share_based_compensation",
    "depreciation_and_amortization",
    "dividends_and_other_cash_distributions",
)
CASH_FLOW_QUARTERLY = (
    "net_cash_flow_from_operations",
    "capital_expenditure",
    "share_based_compensation",
)
QUARTERS = ("revenue", "gross_profit", "operating_income", "net_income")
TTM = (
    "revenue",
    "operating_income",
    "net_income",
    "net_cash_flow_from_operations",
    "capital_expenditure",
    "share_based_compensation",
)
PER_SHARE = (
    "earnings_per_share",
    "earnings_per_share_diluted",
    "weighted_average_shares",
    "weighted_average_shares_diluted",
)
PER_SHARE_QUARTERLY = ("earnings_per_share_diluted", "weighted_average_shares_diluted")
RESTATABLE = (
    "revenue",
    "gross_profit",
    "operating_income",
    "net_income",
    "total_assets",
    "current_assets",
    "total_liabilities",
    "current_liabilities",
    "shareholders_equity",
    "retained_earnings",
    "net_cash_flow_from_operations",
    "net_cash_flow_from_investing",
    "net_cash_flow_from_financing",
    "weighted_average_shares_diluted",
)


def _id(filer: Filer, *parts: object) -> str:
    return "-".join([filer.ticker.lower(), *(str(p) for p in parts)])


def _quarters(filer: Filer, years: list[FiscalYear]) -> Iterator[tuple[FiscalYear, int, str]]:
    for year in years:
        for n in year.quarters():
            yield year, n, year.quarter_ends[n - 1]


def _recent_quarters(filer: Filer, count: int) -> list[tuple[FiscalYear, int, str]]:
    return list(_quarters(filer, filer.years))[-count:]


# -- fiscal periods -----------------------------------------------------------------------


def _nominal_year(end: str) -> int:
    """The calendar year a fiscal year-end belongs to (a year ending 2 January is last year's)."""
    return (date.fromisoformat(end) - timedelta(days=7)).year


def labelled_years(filer: Filer, count: int) -> list[FiscalYear]:
    """Recent years whose 10-K label follows the numbering of the latest three (NVIDIA's 10-Ks
    for the years ended January 2011-2014 carry labels one year low; those get no label case)."""
    complete = [y for y in filer.years if y.complete]
    offsets = [y.label - _nominal_year(y.year_end) for y in complete[-3:]]
    assert len(set(offsets)) == 1, f"{filer.ticker}: latest labels disagree {offsets}"
    return [y for y in complete if y.label - _nominal_year(y.year_end) == offsets[0]][-count:]


def fiscal_periods(filer: Filer) -> list[Case]:
    found: list[Case] = []
    years = labelled_years(filer, 6)
    for year in years:
        note = (
            f"fiscal {year.label}: the 10-K {year.accn} filed {year.filed} reports "
            f"{year.start} to {year.end} as its own year (fy {year.label})"
        )
        found.append(
            _label(filer, f"fy-{year.end}", "annual", year.year_end, f"{year.label}-FY", note)
        )
    partial = [y for y in filer.years if not y.complete]
    for year in [*years[-3:], *partial]:
        for n in year.quarters():
            end = year.quarter_ends[n - 1]
            note = (
                f"quarter {n} of fiscal {year.label} (which began {year.start}): "
                f"{year.quarter_start(n)} to {end}"
            )
            found.append(
                _label(filer, f"q{n}-label-{end}", "quarterly", end, f"{year.label}-Q{n}", note)
            )
    year, n, end = _recent_quarters(filer, 1)[0]
    note = f"the twelve months to quarter {n} of fiscal {year.label}, ended {end}"
    found.append(_label(filer, f"ttm-label-{end}", "ttm", end, f"{year.label}-Q{n}-TTM", note))
    return found


def _label(filer: Filer, suffix: str, period: str, end: str, label: str, note: str) -> Case:
    return {
        "id": _id(filer, suffix),
        "kind": "statement",
        "source": filer.source,
        "args": {
            "ticker": filer.ticker,
            "statement": "income",
            "period": period,
            "report_period": end,
            "field": "fiscal_period",
        },
        "expect": label,
        "note": note,
    }


# -- annual values --------------------------------------------------------------------------


def income_values(filer: Filer) -> list[Case]:
    found: list[Case] = []
    for year in filer.complete_years(5):
        for name in INCOME:
            figure = annual(filer, FIELDS[name], year)
            if figure is not None:
                found.append(
                    cases.statement(
                        _id(filer, name, year.end),
                        filer,
                        FIELDS[name],
                        "annual",
                        year.year_end,
                        figure,
                    )
                )
    return found


def balance_sheets(filer: Filer) -> list[Case]:
    """Year-end balance sheets (annual records) and quarter-end ones (quarterly records): one
    value per date, so a year-end appears in both with the same figure."""
    found: list[Case] = []
    for year in filer.complete_years(3):
        for name in BALANCE:
            figure = at_date(filer, FIELDS[name], year.year_end)
            if figure is not None:
                found.append(
                    cases.statement(
                        _id(filer, name, year.end),
                        filer,
                        FIELDS[name],
                        "annual",
                        year.year_end,
                        figure,
                    )
                )
    for _, _, end in _recent_quarters(filer, 5):
        for name in BALANCE_QUARTERLY:
            figure = at_date(filer, FIELDS[name], end)
            if figure is not None:
                found.append(
                    cases.statement(
                        _id(filer, name, "q", end), filer, FIELDS[name], "quarterly", end, figure
                    )
                )
    return found


def _free_cash_flow(operations: Figure | None, capex: Figure | None) -> Figure | None:
    if operations is None or capex is None:
        return None
    value = operations.value + capex.value
    note = (
        f"free cash flow = operating cash flow {fmt(operations.value)} + capital expenditure "
        f"{fmt(capex.value)} (negative) = {fmt(value)}. Operating: {operations.note}. "
        f"Capital expenditure: {capex.note}"
    )
    return Figure(value, operations.facts + capex.facts, note)


def cash_flows(filer: Filer) -> list[Case]:
    found: list[Case] = []
    for year in filer.complete_years(5):
        for name in CASH_FLOW:
            figure = annual(filer, FIELDS[name], year)
            if figure is not None:
                found.append(
                    cases.statement(
                        _id(filer, name, year.end),
                        filer,
                        FIELDS[name],
                        "annual",
                        year.year_end,
                        figure,
                    )
                )
        fcf = _free_cash_flow(
            annual(filer, FIELDS["net_cash_flow_from_operations"], year),
            annual(filer, FIELDS["capital_expenditure"], year),
        )
        if fcf is not None:
            found.append(
                cases.statement(
                    _id(filer, "free_cash_flow", year.end),
                    filer,
                    "free_cash_flow",
                    "annual",
                    year.year_end,
                    fcf,
                    statement_name="cashflow",
                )
            )
    for year, n, end in _recent_quarters(filer, 6):
        for name in CASH_FLOW_QUARTERLY:
            figure = quarter(filer, FIELDS[name], year, n)
            if figure is not None:
                found.append(
                    cases.statement(
                        _id(filer, name, "q", end), filer, FIELDS[name], "quarterly", end, figure
                    )
                )
    return found


# -- quarters and trailing twelve months ------------------------------------------------------


def derived_quarters(filer: Filer) -> list[Case]:
    found: list[Case] = []
    for year, n, end in _recent_quarters(filer, 9):
        for name in QUARTERS:
            figure = quarter(filer, FIELDS[name], year, n)
            if figure is not None:
                found.append(
                    cases.statement(
                        _id(filer, name, f"q{n}", end),
                        filer,
                        FIELDS[name],
                        "quarterly",
                        end,
                        figure,
                    )
                )
    return found


def trailing_twelve_months(filer: Filer) -> list[Case]:
    found: list[Case] = []
    for year, n, end in _recent_quarters(filer, 5):
        for name in TTM:
            figure = ttm(filer, FIELDS[name], year, n)
            if figure is not None:
                found.append(
                    cases.statement(
                        _id(filer, name, "ttm", end), filer, FIELDS[name], "ttm", end, figure
                    )
                )
        fcf = _free_cash_flow(
            ttm(filer, FIELDS["net_cash_flow_from_operations"], year, n),
            ttm(filer, FIELDS["capital_expenditure"], year, n),
        )
        if fcf is not None:
            found.append(
                cases.statement(
                    _id(filer, "free_cash_flow", "ttm", end),
                    filer,
                    "free_cash_flow",
                    "ttm",
                    end,
                    fcf,
                    statement_name="cashflow",
                )
            )
    return found


# -- debt -------------------------------------------------------------------------------------


def total_debt(filer: Filer) -> list[Case]:
    found: list[Case] = []
    year_ends = [y.year_end for y in filer.complete_years(10)]
    dates = [(end, "annual") for end in year_ends]
    dates += [(end, "quarterly") for _, _, end in _recent_quarters(filer, 9)]
    for end, period in dates:
        debt = debt_at(filer, end)
        if debt is None:
            continue
        figure = Figure(debt.total, debt.facts, debt.note)
        suffix = "q" if period == "quarterly" else "fy"
        found.append(
            cases.statement(
                _id(filer, "total_debt", suffix, end),
                filer,
                "total_debt",
                period,
                end,
                figure,
                statement_name="balance",
            )
        )
        if period == "annual":
            # The parts are checked where the filer reports an amount; a part tagged as zero, or
            # not at all, is "no such debt" either way.
            for name, part in (
                ("current_debt", debt.current),
                ("non_current_debt", debt.noncurrent),
            ):
                if part:
                    found.append(
                        cases.statement(
                            _id(filer, name, end),
                            filer,
                            name,
                            period,
                            end,
                            Figure(part, debt.facts, debt.note),
                            statement_name="balance",
                        )
                    )
    return found


# -- share basis -----------------------------------------------------------------------------


def share_basis(filer: Filer) -> list[Case]:
    """Per-share amounts and share counts of every period on the latest basis."""
    found: list[Case] = []
    for year in filer.complete_years(8):
        for name in (*PER_SHARE, "dividends_per_common_share"):
            figure = annual(filer, FIELDS[name], year)
            if figure is not None:
                found.append(
                    cases.statement(
                        _id(filer, name, year.end),
                        filer,
                        FIELDS[name],
                        "annual",
                        year.year_end,
                        figure,
                    )
                )
        shares = at_date(filer, FIELDS["outstanding_shares"], year.year_end)
        if shares is not None:
            found.append(
                cases.statement(
                    _id(filer, "outstanding_shares", year.end),
                    filer,
                    FIELDS["outstanding_shares"],
                    "annual",
                    year.year_end,
                    shares,
                )
            )
    for year, n, end in _split_quarters(filer):
        for name in PER_SHARE_QUARTERLY:
            figure = quarter(filer, FIELDS[name], year, n)
            if figure is not None:
                found.append(
                    cases.statement(
                        _id(filer, name, f"q{n}", end),
                        filer,
                        FIELDS[name],
                        "quarterly",
                        end,
                        figure,
                    )
                )
    return found


def _split_quarters(filer: Filer) -> list[tuple[FiscalYear, int, str]]:
    """The quarters around each split (four before, four after), else the latest eight."""
    everything = list(_quarters(filer, filer.years))
    if not filer.splits:
        return everything[-8:]
    chosen: dict[str, tuple[FiscalYear, int, str]] = {}
    for split in filer.splits:
        before = [q for q in everything if q[2] < split.effective][-4:]
        after = [q for q in everything if q[2] >= split.effective][:4]
        for item in before + after:
            chosen[item[2]] = item
    return [chosen[end] for end in sorted(chosen)]


# -- restatements and citations ----------------------------------------------------------------


def restatements(filer: Filer) -> list[Case]:
    """Periods filed with different values over time (restated, reclassified or re-rounded):
    the latest filing wins. Fiscal years, and quarters filed as three-month figures; share counts
    only where they differ on one share basis."""
    found: list[Case] = []
    for year in [y for y in filer.years if y.complete]:
        for name in RESTATABLE:
            field = FIELDS[name]
            start = None if field.kind == "instant" else year.start
            figure = annual(filer, field, year)
            if figure is not None:
                found += _restated(filer, field, "annual", start, year.year_end, 4, figure)
        for n in year.quarters() if len(year.quarter_ends) == 4 else []:
            for name in (*QUARTERS, "weighted_average_shares_diluted"):
                field = FIELDS[name]
                figure = quarter(filer, field, year, n)
                if figure is not None and len(figure.facts) == 1:  # filed, not derived
                    end = year.quarter_ends[n - 1]
                    found += _restated(
                        filer, field, "quarterly", year.quarter_start(n), end, 1, figure
                    )
    return found


def _restated(
    filer: Filer,
    field: Field,
    period: str,
    start: str | None,
    end: str,
    quarters: int,
    figure: Figure,
) -> list[Case]:
    low, high = SPANS[quarters]
    history = [
        f
        for f in filer.history(figure.fact.concept, start, end, field.unit)
        if f.days is None or low <= f.days <= high
    ]
    if start is None and end in filer.year_ends:
        # A year-end balance is the annual reports' (raw.Filer.instant): their history counts.
        history = [f for f in history if f.form in ANNUAL_FORMS] or history
    # A share count re-filed after a split is the same count on another basis, not a restatement.
    if len({f.val * (filer.split_factor(f) if field.shares else 1) for f in history}) < 2:
        return []
    first = history[0]
    note = (
        f"{figure.fact.concept} for the period ending {end} first filed as {fmt(first.val)} "
        f"({first.form} {first.accn}, filed {first.filed}), later filed differently; the latest "
        f"{'annual report' if start is None and end in filer.year_ends else 'filing'} wins: "
        f"{figure.note}"
    )
    suffix = "restated" if period == "annual" else "q-restated"
    return [
        cases.statement(
            _id(filer, field.name, suffix, end),
            filer,
            field,
            period,
            end,
            Figure(figure.value, figure.facts, note),
        )
    ]


def citations(filer: Filer) -> list[Case]:
    found: list[Case] = []
    for year in filer.complete_years(3):
        for name in ("revenue", "net_income", "total_assets", "net_cash_flow_from_operations"):
            field = FIELDS[name]
            figure = annual(filer, field, year)
            if figure is None:
                continue
            found.append(_citation(filer, field, "annual", year.year_end, figure, exact_form=True))
    # A quarter-end balance sheet other than a year end is filed once, in its own 10-Q.
    for _, n, end in _recent_quarters(filer, 4):
        if n == 4:
            continue
        figure = at_date(filer, FIELDS["total_assets"], end)
        if figure is not None:
            found.append(
                _citation(filer, FIELDS["total_assets"], "quarterly", end, figure, exact_form=True)
            )
    year, n, end = next(
        (y, n, e) for y, n, e in reversed(list(_quarters(filer, filer.years))) if n == 4
    )
    figure = quarter(filer, FIELDS["revenue"], year, n)
    if figure is not None:
        found.append(
            _citation(filer, FIELDS["revenue"], "quarterly", end, figure, exact_form=False)
        )
    return found


def _citation(
    filer: Filer, field: Field, period: str, end: str, figure: Figure, *, exact_form: bool
) -> Case:
    fact = figure.fact
    expect: dict[str, Any] = {"accession_number": fact.accn, "concept": fact.concept}
    if exact_form:
        expect["form"] = fact.form
    return {
        "id": _id(filer, field.name, "source", period, end),
        "kind": "citation",
        "source": filer.source,
        "args": {
            "ticker": filer.ticker,
            "statement": field.statement,
            "period": period,
            "report_period": end,
            "field": field.name,
        },
        "expect": expect,
        "note": f"the figure rests on {figure.note}",
    }
