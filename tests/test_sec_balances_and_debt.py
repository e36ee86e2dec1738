"""One value per balance-sheet date, debt totals that add nothing twice, and quarterly cash-flow
lines from the cash-flow statement: the recorded Apple, NVIDIA, Tesla and Snowflake companyfacts,
plus small documents for the rules they do not isolate."""

from __future__ import annotations

from typing import Any

import pytest

from dexter.data.sec.facts import fact_series, statements_from_facts
from tests.support.fixtures import companyfacts

APPLE, NVIDIA, SNOWFLAKE, TESLA = "0000320193", "0001045810", "0001640147", "0001318605"
FILERS = (APPLE, NVIDIA, SNOWFLAKE, TESLA)


def _sheets(cik: str, period: Any = "annual", limit: int = 20, **kw: Any) -> list[Any]:
    return list(
        statements_from_facts(
            companyfacts(cik), ticker="X", statement="balance", period=period, limit=limit, **kw
        )
    )


@pytest.mark.parametrize("cik", FILERS)
def test_annual_and_quarterly_records_agree_on_every_year_end(cik: str) -> None:
    """A quarterly record and the annual record for the same date read the same facts: Tesla's
    2013 year-end showed 586 M of non-current debt in one and 0 in the other, its 2021 retained
    earnings 329 M and 331 M."""
    for year in _sheets(cik):
        (quarter,) = _sheets(
            cik, "quarterly", limit=1, report_period_gte=year.report_period,
            report_period_lte=year.report_period,
        )  # fmt: skip
        assert quarter.fiscal_period == year.fiscal_period.replace("FY", "Q4")
        fields = set(type(year).model_fields) - {"fiscal_period", "period"}
        assert {f: getattr(quarter, f) for f in fields} == {f: getattr(year, f) for f in fields}


def test_tesla_2013_year_end_has_one_debt_figure() -> None:
    (year,) = _sheets(TESLA, limit=1, report_period_lte="2013-12-31")
    assert year.report_period == "2013-12-31"
    # Its 10-K tagged "long-term debt" 0 beside 586 M of convertible notes: the notes are debt.
    assert year.non_current_debt == 586_119_000
    assert year.total_debt == 182_000 + 586_119_000
    assert year.retained_earnings is not None


# ---------------------------------------------------------------- debt


def test_tesla_debt_adds_neither_finance_leases_nor_the_notes_total() -> None:
    """Tesla's balance-sheet lines are "debt and finance leases" (company concepts, not in
    companyfacts); its notes tag the debt under `DebtCurrent` and `LongTermDebt` (non-current
    part), the leases under `FinanceLeaseLiability…`, and principal as
    `DebtInstrumentCarryingAmount` (5,380 M at 2021 year-end)."""
    years = {y.fiscal_period: y for y in _sheets(TESLA, limit=5)}
    fy21 = years["2021-FY"]
    assert (fy21.current_debt, fy21.non_current_debt) == (1_088_000_000, 4_254_000_000)
    assert fy21.total_debt == 5_342_000_000  # not + 501 M + 991 M of leases, not 5,380 M again
    assert fy21.sources["total_debt"].concept == (
        "computed: us-gaap:DebtCurrent + us-gaap:LongTermDebt"
    )
    # FY2018 added lease-inclusive non-current debt (9,404 M) to lease-free current debt.
    assert years["2018-FY"].total_debt == 2_222_000_000 + 8_411_000_000
    # FY2017: the lease-inclusive line less the capital leases Tesla tagged for that date.
    fy17 = years["2017-FY"]
    assert fy17.non_current_debt == 9_418_319_000 - 589_334_000
    assert fy17.sources["non_current_debt"].concept == (
        "computed: us-gaap:LongTermDebtAndCapitalLeaseObligations − "
        "us-gaap:CapitalLeaseObligationsNoncurrent"
    )


def test_long_term_debt_counts_once_whether_total_or_line() -> None:
    """NVIDIA's FY2026 10-K tags `LongTermDebt` 8,468 M beside its parts 999 M + 7,469 M: the
    same debt, counted once. Its FY2017 10-K tags the balance sheet's "long-term debt" line with
    that concept (no non-current concept), beside 796 M of convertible notes due within a year."""
    years = {y.fiscal_period: y for y in _sheets(NVIDIA, limit=10)}
    assert years["2026-FY"].total_debt == 8_468_000_000
    assert years["2017-FY"].non_current_debt == 1_983_000_000
    assert years["2017-FY"].total_debt == 796_000_000 + 1_983_000_000
    (apple,) = _sheets(APPLE, limit=1)
    # Apple: commercial paper + term debt; LongTermDebt (90,678 M) and principal (91,281 M) are
    # the same term debt again.
    assert apple.total_debt == 7_979_000_000 + 12_350_000_000 + 78_328_000_000


def _fact(value: float, end: str, filing: tuple[str, str, str], start: str | None = None) -> Any:
    accn, form, filed = filing
    fact: dict[str, Any] = {"end": end, "val": value, "accn": accn, "form": form, "filed": filed}
    fact |= {"fy": int(end[:4]), "fp": "FY" if form == "10-K" else "Q1"}
    return fact | ({"start": start} if start else {})


def _balance(concepts: dict[str, float]) -> Any:
    """One 10-K's debt facts for one year-end. Built from the documented companyfacts JSON shape
    (taxonomy -> concept -> units -> facts)."""
    filing = ("0000000099-25-000001", "10-K", "2025-02-20")
    body = {
        name: {"label": name, "units": {"USD": [_fact(value, "2024-12-31", filing)]}}
        for name, value in concepts.items()
    }
    data = {"cik": 99, "entityName": "Example Corp", "facts": {"us-gaap": body}}
    (year,) = statements_from_facts(data, ticker="EX", statement="balance", period="annual")
    return year


def test_a_total_and_its_parts_in_one_filing_count_once() -> None:
    year = _balance(
        {
            "LongTermDebtCurrent": 200,
            "LongTermDebtNoncurrent": 800,
            "LongTermDebt": 1_000,  # the two above, by definition
            "DebtInstrumentCarryingAmount": 1_000,  # the notes saying it again
            "FinanceLeaseLiabilityCurrent": 50,
            "FinanceLeaseLiabilityNoncurrent": 150,
        }
    )
    assert (year.current_debt, year.non_current_debt, year.total_debt) == (200, 800, 1_000)


def test_a_notes_only_total_gets_no_finance_lease_added() -> None:
    """A filer whose debt lines are company concepts: only the notes' total and a lease
    liability are in companyfacts."""
    year = _balance({"DebtInstrumentCarryingAmount": 900, "FinanceLeaseLiabilityCurrent": 40})
    assert year.total_debt == 900 and year.current_debt is None
    with_current = _balance(
        {
            "LongTermDebtAndCapitalLeaseObligationsCurrent": 140,  # 100 debt + 40 leases
            "FinanceLeaseLiabilityCurrent": 40,
            "DebtInstrumentCarryingAmount": 900,
        }
    )
    assert with_current.current_debt == 100
    assert with_current.total_debt == 900


def test_lease_inclusive_lines_lose_their_leases() -> None:
    year = _balance(
        {
            "LongTermDebtAndCapitalLeaseObligationsCurrent": 130,
            "CapitalLeaseObligationsCurrent": 30,
            "LongTermDebtAndCapitalLeaseObligations": 1_070,
            "CapitalLeaseObligationsNoncurrent": 70,
            "CommercialPaper": 25,
        }
    )
    assert (year.current_debt, year.non_current_debt, year.total_debt) == (125, 1_000, 1_125)


# ---------------------------------------------------------------- quarters from the statement line


def _ytd(cik: str, concept: str, start: str, end: str) -> float:
    values = [
        p.value for p in fact_series(companyfacts(cik), concept) if (p.start, p.end) == (start, end)
    ]
    assert values, (concept, start, end)
    return values[0]


def test_quarterly_share_based_compensation_is_the_cash_flow_line() -> None:
    """NVIDIA's 10-Qs tag three months of share-based compensation expense in the notes
    (1,624 M for Q2 FY2026) and the cash-flow add-back year to date only: Q2 is the six-month
    add-back less Q1's (3,099 − 1,474 = 1,625 M)."""
    quarters = {
        q.fiscal_period: q
        for q in statements_from_facts(
            companyfacts(NVIDIA), ticker="NVDA", statement="cashflow", period="quarterly",
            limit=3, report_period_lte="2025-10-26",
        )
    }  # fmt: skip
    q2, q3 = quarters["2026-Q2"], quarters["2026-Q3"]
    six = _ytd(NVIDIA, "ShareBasedCompensation", "2025-01-27", "2025-07-27")
    nine = _ytd(NVIDIA, "ShareBasedCompensation", "2025-01-27", "2025-10-26")
    first = _ytd(NVIDIA, "ShareBasedCompensation", "2025-01-27", "2025-04-27")
    assert q2.share_based_compensation == six - first == 1_625_000_000
    assert q3.share_based_compensation == nine - six
    for q in (q2, q3):
        source = q.sources["share_based_compensation"]
        assert source.concept == "us-gaap:ShareBasedCompensation"
        assert source.form == f"10-Q (derived {q.fiscal_period[-2:]})"
    notes = _ytd(NVIDIA, "AllocatedShareBasedCompensationExpense", "2025-04-28", "2025-07-27")
    assert notes != q2.share_based_compensation


def test_tesla_quarterly_cash_flow_lines_come_from_the_cash_flow_statement() -> None:
    (q2,) = statements_from_facts(
        companyfacts(TESLA), ticker="TSLA", statement="cashflow", period="quarterly", limit=1,
        report_period_lte="2013-06-30",
    )  # fmt: skip
    assert q2.fiscal_period == "2013-Q2"
    six = _ytd(TESLA, "ShareBasedCompensation", "2013-01-01", "2013-06-30")
    first = _ytd(TESLA, "ShareBasedCompensation", "2013-01-01", "2013-03-31")
    assert q2.share_based_compensation == six - first  # 19.7 M, where the notes say 19.3 M


def test_the_notes_stand_in_only_where_no_cash_flow_quarter_can_be_derived() -> None:
    """Snowflake's first 10-Q, after its IPO, compares with the quarter ended October 2019,
    whose cash-flow figure is nine months with no earlier year-to-date figure to subtract: that
    quarter's expense comes from the notes. A quarter later, the cash-flow line is back."""
    q4, q3 = statements_from_facts(
        companyfacts(SNOWFLAKE), ticker="SNOW", statement="cashflow", period="quarterly",
        limit=2, report_period_lte="2020-01-31",
    )  # fmt: skip
    assert (q3.fiscal_period, q3.report_period) == ("2020-Q3", "2019-10-31")
    assert q4.sources["share_based_compensation"].concept == "us-gaap:ShareBasedCompensation"
    assert q3.sources["share_based_compensation"].concept == (
        "us-gaap:AllocatedShareBasedCompensationExpense"
    )
