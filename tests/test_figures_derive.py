"""Figures that follow from found ones, and the coincidences that must not pass as such."""

from __future__ import annotations

from dexter.figures import Evidence, Figure, verify_answer

# Dexter's statement tables for Apple (values from the recorded companyfacts, USD millions).
INCOME = Evidence(
    "get_financials (income_statements(company=AAPL, period=annual, limit=5))",
    """### income_statements(company=AAPL, period=annual, limit=5)
## Apple Inc. (AAPL) — income statement (annual)
| Line item | 2025-FY (2025-09-27) | 2024-FY (2024-09-28) | 2023-FY (2023-09-30) \
| 2022-FY (2022-09-24) | 2021-FY (2021-09-25) |
|---|---|---|---|---|---|
| Revenue | 416,161 | 391,035 | 383,285 | 394,328 | 365,817 |
| Gross profit | 195,201 | 180,683 | 169,148 | 170,782 | 152,836 |
| Operating income | 133,050 | 123,216 | 114,301 | 119,437 | 108,949 |
| Pre-tax income | 132,729 | 123,485 | 113,736 | 119,103 | 109,207 |
| Income tax expense | 20,719 | 29,749 | 16,741 | 19,300 | 14,527 |
| Net income | 112,010 | 93,736 | 96,995 | 99,803 | 94,680 |
| Shares diluted (millions) | 15,004.7 | 15,408.1 | 15,812.5 | 16,325.8 | 16,864.9 |
| Sources | [S1] | [S1] | [S1] [S2] | [S2] | [S3] |
Units: USD millions, except per-share values (USD) and share counts (millions).
""",
)
CASH_FLOW = Evidence(
    "get_financials (cash_flow_statements(company=AAPL, period=annual, limit=3))",
    """### cash_flow_statements(company=AAPL, period=annual, limit=3)
## Apple Inc. (AAPL) — cash flow statement (annual)
| Line item | 2025-FY (2025-09-27) | 2024-FY (2024-09-28) | 2023-FY (2023-09-30) |
|---|---|---|---|
| Operating cash flow | 111,482 | 118,254 | 110,543 |
| Capital expenditure | -12,715 | -9,447 | -10,959 |
| Issuance or purchase of equity shares | -90,711 | -94,949 | -77,550 |
| Dividends and other cash distributions | -15,421 | -15,234 | -15,025 |
| Free cash flow | 98,767 | 108,807 | 99,584 |
Units: USD millions, except per-share values (USD) and share counts (millions).
""",
)


def _by_text(answer: str, *evidence: Evidence) -> dict[str, Figure]:
    return {f.text: f for f in verify_answer(answer, evidence).figures}


def test_growth_between_two_stated_figures_is_derived_with_its_formula() -> None:
    figures = _by_text(
        "Revenue rose 6.4% to $416.2 billion in FY2025 from $391.0 billion in FY2024.", INCOME
    )
    growth = figures["6.4%"]
    assert growth.status == "derived"
    assert growth.formula is not None and "growth" in growth.formula


def test_a_margin_is_derived_from_the_rows_its_sentence_names() -> None:
    figures = _by_text("Apple's FY2025 gross margin was 46.9%.", INCOME)
    assert figures["46.9%"].status == "derived"
    assert "Gross profit" in (figures["46.9%"].formula or "")


def test_an_effective_tax_rate_is_tax_over_pretax_income() -> None:
    figures = _by_text("The effective tax rate dropped to 15.6% in FY2025.", INCOME)
    assert figures["15.6%"].status == "derived"


def test_a_wrong_margin_is_not_derived_from_some_other_pair() -> None:
    figures = _by_text("Apple's FY2025 gross margin was 47.9%.", INCOME)
    assert figures["47.9%"].status == "unsupported"


def test_cagr_over_the_years_the_sentence_names() -> None:
    figures = _by_text("From FY2021 to FY2025 revenue compounded at a 3.3% annual rate.", INCOME)
    assert figures["3.3%"].status == "derived"
    assert "CAGR over 4 years" in (figures["3.3%"].formula or "")


def test_a_derived_figure_for_another_period_is_unsupported() -> None:
    # 6.4% is FY2025's revenue growth; FY2024's was 2.0%.
    figures = _by_text("Revenue grew 6.4% in FY2024.", INCOME)
    assert figures["6.4%"].status == "unsupported"


def test_a_difference_and_a_sum_of_stated_figures() -> None:
    figures = _by_text(
        "Apple returned $106.1 billion in FY2025: buybacks of $90.7 billion and dividends of "
        "$15.4 billion. Operating cash flow fell $6.8 billion to $111.5 billion from "
        "$118.3 billion.",
        CASH_FLOW,
    )
    assert figures["$106.1 billion"].status == "derived"
    assert figures["$6.8 billion"].status == "derived"


def test_a_total_over_consecutive_periods_needs_a_word_for_a_total() -> None:
    total = "Buybacks have totalled $263.2 billion over the last three years."
    assert _by_text(total, CASH_FLOW)["$263.2 billion"].status == "derived"
    # The same number without any word of a total is not a total of the row.
    bare = "Buybacks were $263.2 billion."
    assert _by_text(bare, CASH_FLOW)["$263.2 billion"].status == "unsupported"


def test_percentage_points_between_two_derived_margins() -> None:
    figures = _by_text(
        "Gross margin reached 46.9% in FY2025, up from 46.2% in FY2024, an expansion of "
        "70 basis points.",
        INCOME,
    )
    assert figures["46.9%"].status == "derived"
    assert figures["70 basis points"].status == "derived"


def test_a_per_share_value_from_an_amount_and_a_share_count() -> None:
    figures = _by_text(
        "Net income of $112.0 billion over 15,004.7 million diluted shares is $7.46 per "
        "diluted share.",
        INCOME,
    )
    assert figures["$7.46 per diluted share"].status == "derived"


def test_a_whole_percent_is_not_derived_from_evidence_alone() -> None:
    # 1 - 15,004.7 / 15,408.1 is 2.6%, but a whole "3%" could be many things.
    figures = _by_text("Revenue guidance implies 3% growth next year.", INCOME)
    assert figures["3%"].status == "unsupported"


def test_an_annualised_quarterly_dividend() -> None:
    question = Evidence("your question", "Apple pays a quarterly dividend of $0.25 a share.")
    figures = _by_text("The quarterly dividend of $0.25 per share is $1.00 annualised.", question)
    assert figures["$1.00"].status == "derived"
