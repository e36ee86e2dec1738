"""How evidence is read: filing tables, record tables, merged tool results, JSON, calculations."""

from __future__ import annotations

import pytest

from dexter.figures import Evidence, verify_answer
from dexter.figures.evidence import MONEY, PER_SHARE, SHARES, EvidenceIndex, Found, company_names

# The Buckle's 8-K exhibit as read_filings returns it: a filing's table in text, with a
# two-row header, row-group titles and "Amounts in Thousands Except Per Share Amounts".
BUCKLE = Evidence(
    "read_filings (filing_document(company=BKE, document=EX-99.1))",
    """### filing_document(company=BKE, accession_number=0000885245-24-000099, document=EX-99.1)
## BUCKLE INC 8-K filed 2024-11-22 — EX-99.1 bke20241122-8kexhibit.htm [S1]
CONSOLIDATED STATEMENTS OF INCOME

(Amounts in Thousands Except Per Share Amounts)

| Thirteen Weeks Ended | Thirty-Nine Weeks Ended
| November 2, 2024 | October 28, 2023 | November 2, 2024 | October 28, 2023
SALES, Net of returns and allowances | $293,618 | $303,457 | $838,490 | $878,719
Gross profit | 140,071 | 147,215 | 393,302 | 418,884
OPERATING EXPENSES:
Selling | 71,986 | 70,242 | 206,454 | 205,081
NET INCOME | $44,172 | $51,762 | $118,270 | $140,338
EARNINGS PER SHARE:
Basic | $0.89 | $1.05 | $2.37 | $2.83
Diluted | $0.88 | $1.04 | $2.35 | $2.81
""",
)
# Apple's 10-K MD&A as text: a table with change columns, a short percentage row, and a
# second row group after a blank line.
APPLE_10K = Evidence(
    "read_filings (filing_section(company=AAPL, form=10-K, item=7, year=2024))",
    """### filing_section(company=AAPL, form=10-K, item=7, year=2024)
Operating expenses for 2024, 2023 and 2022 were as follows (dollars in millions):

| 2024 | Change | 2023 | Change | 2022
Research and development | $31,370 | 5% | $29,915 | 14% | $26,251
Percentage of total net sales | 8% | 8% | 7%

Gross margin percentage:
Services | 73.9% | 70.8% | 71.7%
""",
)
NVDA_FACTS = Evidence(
    "get_financials (xbrl_facts(company=NVDA, concept=dei:EntityCommonStockSharesOutstanding))",
    """### xbrl_facts(company=NVDA, concept=dei:EntityCommonStockSharesOutstanding, limit=2)
## NVIDIA CORP (NVDA) — dei:EntityCommonStockSharesOutstanding, 68 reported values (unit: shares)
| Period | Value | Filing's fiscal period | Form | Filed | Frame | Source |
|---|---|---|---|---|---|---|
| 2026-05-15 | 24,200,000,000 | 2027 Q1 | 10-Q | 2026-05-20 | — | [S1] |
| 2026-02-20 | 24,300,000,000 | 2026 FY | 10-K | 2026-02-25 | — | [S2] |
""",
)
HOLDINGS = Evidence(
    "get_market_data (institutional_holdings(filer=Example Capital, limit=3))",
    """### institutional_holdings(filer=Example Capital, limit=3)
## 13F holdings of Example Capital — report period 2023-12-31, filed 2024-01-30 [S1]
| # | Issuer | Ticker | Class | CUSIP | Shares | Value (USD millions) | Put/Call |
|---|---|---|---|---|---|---|---|
| 1 | VANGUARD INDEX FDS | — | GROWTH ETF | 922908736 | 91,978 | 26.7 |  |
| 2 | VANGUARD INDEX FDS | — | VALUE ETF | 922908744 | 181,254 | 24.5 |  |
| 13 | APPLE INC | — | COM | 037833100 | 58,228 | 8.2 |  |
Units: shares in shares (PRN = principal amount); values in USD millions as reported on Form 13F.
""",
)


def _found(evidence: Evidence) -> list[Found]:
    return list(EvidenceIndex([evidence]).found)


def _values(evidence: Evidence, raw: str) -> set[tuple[float, str]]:
    return {(f.value, f.kind) for f in _found(evidence) if f.raw == raw}


def test_a_filing_table_keeps_its_declared_scale_and_per_share_cents() -> None:
    assert (293_618_000.0, MONEY) in _values(BUCKLE, "$293,618")
    assert (2.83, PER_SHARE) in _values(BUCKLE, "$2.83")


def test_a_filing_table_row_continues_past_row_group_titles() -> None:
    (selling,) = [f for f in _found(BUCKLE) if f.raw == "71,986"]
    assert selling.field == "Selling"
    assert selling.period is not None and selling.period.end is not None
    assert selling.period.end.isoformat() == "2024-11-02"


def test_change_columns_and_short_rows_take_their_years() -> None:
    periods = {
        f.raw: sorted(f.period.fiscal_years) if f.period else None for f in _found(APPLE_10K)
    }
    assert periods["$26,251"] == [2022]
    assert periods["14%"] == [2023]  # the change column after 2023
    # "8% | 8% | 7%" spread over 2024, 2023 and 2022, not over the change columns.
    assert [sorted(f.period.fiscal_years) for f in _found(APPLE_10K) if f.raw == "7%"] == [[2022]]


def test_a_table_continues_across_a_blank_line_into_its_next_row_group() -> None:
    services = [f for f in _found(APPLE_10K) if f.field == "Services"]
    assert {f.raw for f in services} == {"73.9%", "70.8%", "71.7%"}
    assert {f.raw: min(f.period.fiscal_years) for f in services if f.period} == {
        "73.9%": 2024,
        "70.8%": 2023,
        "71.7%": 2022,
    }


def test_record_tables_take_a_period_per_row_and_share_counts_from_the_concept() -> None:
    facts = _found(NVDA_FACTS)
    (latest,) = [f for f in facts if f.raw == "24,200,000,000"]
    assert latest.kind == SHARES
    assert latest.period is not None and latest.period.end is not None
    assert latest.period.end.isoformat() == "2026-05-15"
    # Filing dates and fiscal-period labels are not figures of the fact.
    assert not [f for f in facts if f.raw in ("2026", "2027")]


def test_holdings_are_shares_and_millions_and_their_ranks_are_not_numbers() -> None:
    assert (91_978.0, SHARES) in _values(HOLDINGS, "91,978")
    assert (26_700_000.0, MONEY) in _values(HOLDINGS, "26.7")
    assert not _values(HOLDINGS, "13")  # the rank column


def test_sections_of_a_merged_tool_result_keep_their_own_company() -> None:
    merged = Evidence(
        'get_financials (query="Apple and NVIDIA revenue")',
        """### income_statements(company=AAPL, period=annual, limit=1)
## Apple Inc. (AAPL) — income statement (annual)
| Line item | 2025-FY (2025-09-27) |
|---|---|
| Revenue | 416,161 |
Units: USD millions, except per-share values (USD) and share counts (millions).

### income_statements(company=NVDA, period=annual, limit=1)
## NVIDIA CORP (NVDA) — income statement (annual)
| Line item | 2026-FY (2026-01-25) |
|---|---|
| Revenue | 215,938 |
Units: USD millions, except per-share values (USD) and share counts (millions).
""",
    )
    companies = {f.raw: f.company for f in _found(merged)}
    assert companies["416,161"] == "AAPL"
    assert companies["215,938"] == "NVDA"
    assert company_names([merged]) == {
        "AAPL": "AAPL",
        "apple": "AAPL",
        "NVDA": "NVDA",
        "nvidia": "NVDA",
    }
    statuses = {
        f.text: f.status
        for f in verify_answer(
            "NVIDIA's revenue was $416.2 billion, against Apple's $215.9 billion.", [merged]
        ).figures
    }
    assert statuses == {"$416.2 billion": "unsupported", "$215.9 billion": "unsupported"}


def test_a_calculation_is_read_in_the_scale_of_its_inputs() -> None:
    income = Evidence(
        "get_financials (income_statements(company=AAPL, period=quarterly, limit=2))",
        """| Line item | 2026-Q1 (2025-12-27) | 2025-Q4 (2025-09-27) |
|---|---|---|
| Revenue | 143,756 | 102,466 |
Units: USD millions, except per-share values (USD) and share counts (millions).
""",
    )
    calc = Evidence(
        'calculate (operation="mean")', "mean(values=[143756, 102466]) = 123,111 (count 2)"
    )
    figures = verify_answer("Average quarterly revenue was $123.1 billion.", [income, calc])
    assert [f.status for f in figures.figures] == ["verified"]
    wrong = verify_answer("Average quarterly revenue was $123.1 million.", [income, calc])
    assert [f.status for f in wrong.figures] == ["unsupported"]


@pytest.mark.parametrize(
    "body",
    [
        '{"income_statements": [{"ticker": "AAPL", "report_period": "2025-09-27", '
        '"fiscal_period": "2025-FY", "period": "annual", "revenue": 416161000000, '
        '"gross_margin": 0.469}]}',
        '### income_statements(company=AAPL)\n[{"report_period": "2025-09-27", '
        '"revenue": 416161000000, "gross_margin": 0.469}]',
    ],
)
def test_json_fields_keep_their_kind_and_row_period(body: str) -> None:
    evidence = Evidence("financialdatasets", body)
    statuses = {
        f.text: f.status
        for f in verify_answer(
            "FY2025 revenue was $416.2 billion with a 46.9% gross margin.", [evidence]
        ).figures
    }
    assert statuses == {"$416.2 billion": "verified", "46.9%": "verified"}


def test_long_prose_read_only_where_a_figure_could_be_quoted_gives_the_same_verdicts() -> None:
    prose = Evidence(
        "read_filings (filing_section(company=AAPL, item=7))",
        ("Filler sentence about products in 2024 with 12 items and 3 regions. " * 300)
        + "Total net sales increased 2% or $7.8 billion during 2024 compared to 2023.",
    )
    answer = "Net sales rose $7.8 billion in 2024, and $7.9 billion in 2023."
    verdicts = [(f.text, f.status) for f in verify_answer(answer, [prose]).figures]
    assert verdicts == [("$7.8 billion", "verified"), ("$7.9 billion", "unsupported")]


def test_a_spanning_header_tells_the_quarter_from_the_year_to_date() -> None:
    spans = {f.raw: f.period.span for f in _found(BUCKLE) if f.period is not None}
    assert spans["$293,618"] == "quarter"
    assert spans["$838,490"] == "ytd"
    statuses = [
        f.status
        for f in verify_answer(
            "Buckle's Q3 net sales were $293.6 million; year to date they were $838.5 million, "
            "and year-to-date net income was $44.2 million.",
            [BUCKLE],
        ).figures
    ]
    # $44.2 million is the quarter's net income, not the year to date's.
    assert statuses == ["verified", "verified", "unsupported"]
