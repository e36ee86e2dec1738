"""Figures found in the evidence, allowing display rounding, scale and the stated period."""

from __future__ import annotations

import json

import pytest

from dexter.figures import Evidence, Figure, verify_answer

# Dexter's own statement table for Apple, as get_financials returns it (values from the
# recorded companyfacts: FY2025 revenue 416,161 and FY2024 391,035 USD millions).
INCOME = Evidence(
    "get_financials (income_statements(company=AAPL, period=annual, limit=3))",
    """### income_statements(company=AAPL, period=annual, limit=3)
## Apple Inc. (AAPL) — income statement (annual)
| Line item | 2025-FY (2025-09-27) | 2024-FY (2024-09-28) | 2023-FY (2023-09-30) |
|---|---|---|---|
| Revenue | 416,161 | 391,035 | 383,285 |
| Gross profit | 195,201 | 180,683 | 169,148 |
| R&D | 34,550 | 31,370 | 29,915 |
| Operating income | 133,050 | 123,216 | 114,301 |
| Net income | 112,010 | 93,736 | 96,995 |
| EPS, diluted (USD) | 7.46 | 6.08 | 6.13 |
| Weighted average shares diluted (millions) | 15,004.7 | 15,408.1 | 15,812.5 |
| Sources | [S1] | [S1] | [S1] [S2] |
Units: USD millions, except per-share values (USD) and share counts (millions).
""",
)
METRICS = Evidence(
    "get_financials (financial_metrics(company=AAPL, period=annual, limit=2))",
    """### financial_metrics(company=AAPL, period=annual, limit=2)
| Line item | 2025-FY (2025-09-27) | 2024-FY (2024-09-28) |
|---|---|---|
| Gross margin | 46.9% | 46.2% |
| Revenue growth | 6.4% | 2.0% |
| Current ratio | 0.89x | 0.87x |
Units: margins, returns, growth, yields and payout ratio in %; other ratios as multiples (x).
""",
)
NVDA_FACTS = Evidence(
    "get_financials (xbrl_facts(company=NVDA, concept=Revenues, limit=2))",
    """### xbrl_facts(company=NVDA, concept=Revenues, limit=2)
## NVIDIA CORP (NVDA) — us-gaap:Revenues, 128 reported values (unit: USD)
| Period | Value | Filing's fiscal period | Form | Filed | Frame | Source |
|---|---|---|---|---|---|---|
| 2026-01-26 to 2026-04-26 | 81,615,000,000 | 2027 Q1 | 10-Q | 2026-05-20 | CY2026Q1 | [S1] |
| 2025-01-27 to 2026-01-25 | 215,938,000,000 | 2026 FY | 10-K | 2026-02-25 | CY2025 | [S2] |
Values are exactly as filed, in the unit shown (USD means dollars, not millions).
""",
)
FILING = Evidence(
    "read_filings (filing_section(company=AAPL, item=7, year=2024))",
    """Net sales by reportable segment for 2024, 2023 and 2022 (dollars in millions):

| 2024 | Change | 2023 | Change | 2022
Americas | $167,045 | 3% | $162,560 | (4)% | $169,658
Total net sales | $391,035 | 2% | $383,285 | (3)% | $394,328

Net income for the fiscal quarter was $44.2 million, or $0.89 per share.
""",
)


def _status(answer: str, *evidence: Evidence) -> dict[str, str]:
    return {f.text: f.status for f in verify_answer(answer, evidence).figures}


def _only(answer: str, *evidence: Evidence) -> Figure:
    (figure,) = verify_answer(answer, evidence).figures
    return figure


@pytest.mark.parametrize(
    "text",
    [
        "$391.0 billion",
        "$391 billion",
        "$391.04 billion",
        "$391,035 million",
        "$391,035,000,000",
        "391.0B",
        "USD 391bn",
    ],
)
def test_an_amount_matches_within_the_rounding_it_displays(text: str) -> None:
    figure = _only(f"Apple's FY2024 revenue was {text}.", INCOME)
    assert figure.status == "verified"
    assert figure.source is not None and "Revenue" in figure.source and "391,035" in figure.source


@pytest.mark.parametrize(
    "text",
    ["$391.3 billion", "$391.9 billion", "$39.1 billion", "$391.0 million", "$319.0 billion"],
)
def test_a_wrong_digit_or_scale_is_unsupported(text: str) -> None:
    assert _only(f"Apple's FY2024 revenue was {text}.", INCOME).status == "unsupported"


def test_percentages_per_share_and_multiples_match_their_own_kind() -> None:
    statuses = _status(
        "Gross margin was 46.9% in FY2025 and diluted EPS was $7.46; the current ratio was 0.89x.",
        INCOME,
        METRICS,
    )
    assert statuses == {"46.9%": "verified", "$7.46": "verified", "0.89x": "verified"}


def test_a_percent_matches_a_ratio_written_as_a_fraction() -> None:
    calc = Evidence(
        "calculate",
        "ratio(numerator=112,010,000,000, denominator=416,161,000,000) = 0.269151",
    )
    assert _only("Net margin was 26.9%.", calc).status == "verified"


def test_a_figure_for_another_period_than_stated_is_unsupported_with_a_note() -> None:
    figure = _only("FY2024 revenue of $416.2 billion was a record.", INCOME)
    assert figure.status == "unsupported"
    assert figure.source is not None and "2025" in figure.source


def test_an_undated_echo_of_the_number_does_not_excuse_the_wrong_period() -> None:
    calc = Evidence(
        "calculate",
        "percent_change(start=391,035,000,000, end=416,161,000,000) = +6.4255%",
    )
    assert _only("FY2024 revenue of $416.2 billion.", INCOME, calc).status == "unsupported"


def test_the_right_period_verifies() -> None:
    statuses = _status(
        "Revenue rose to $416.2 billion in FY2025 from $391.0 billion in FY2024.", INCOME
    )
    assert statuses == {"$416.2 billion": "verified", "$391.0 billion": "verified"}


def test_fiscal_years_ending_in_january_are_named_by_their_end_year() -> None:
    assert _only("NVIDIA's FY2026 revenue was $215.9 billion.", NVDA_FACTS).status == "verified"
    assert _only("NVIDIA's FY2024 revenue was $215.9 billion.", NVDA_FACTS).status == (
        "unsupported"
    )


def test_filing_tables_use_their_declared_scale_and_prose_its_own() -> None:
    statuses = _status(
        "Americas net sales were $167.0 billion in 2024; quarterly net income was $44.2 million, "
        "or $0.89 per share.",
        FILING,
    )
    assert statuses == {
        "$167.0 billion": "verified",
        "$44.2 million": "verified",
        "$0.89 per share": "verified",
    }


def test_a_loss_stated_in_words_matches_a_negative_number() -> None:
    filing = Evidence("read_filings", "Greater China net sales changed (8)% in 2024.")
    assert _only("Greater China sales fell 8% in 2024.", filing).status == "verified"


def test_json_rows_keep_field_and_period() -> None:
    rows = {
        "income_statements": [
            {"report_period": "2025-09-27", "fiscal_period": "2025-FY", "revenue": 416161000000},
            {"report_period": "2024-09-28", "fiscal_period": "2024-FY", "revenue": 391035000000},
        ]
    }
    evidence = Evidence("financialdatasets income", json.dumps(rows))
    figure = _only("FY2025 revenue was $416.2 billion.", evidence)
    assert figure.status == "verified"
    assert figure.source is not None and "revenue" in figure.source
    assert _only("FY2024 revenue was $416.2 billion.", evidence).status == "unsupported"


def test_the_question_is_evidence_for_figures_the_user_gave() -> None:
    question = Evidence("your question", "Assume revenue grows 8% a year; what is it in 2027?")
    assert _only("At 8% a year, revenue compounds.", question).status == "verified"


def test_an_invented_figure_is_unsupported() -> None:
    assert _only("Apple's services revenue was $109.2 billion.", INCOME).status == "unsupported"


def test_no_figures_no_work() -> None:
    verification = verify_answer("Apple's fiscal year ends in September (see Item 7).", [INCOME])
    assert verification.figures == ()


def test_two_roundings_that_only_touch_are_different_figures() -> None:
    holdings = Evidence(
        "get_market_data (institutional_holdings(filer=Example Capital))",
        "| # | Issuer | Shares | Value (USD millions) |\n|---|---|---|---|\n"
        "| 5 | APPLE INC | 58,228 | 8.2 |\n",
    )
    assert _only("Its Apple stake was worth $8.2 million.", holdings).status == "verified"
    assert _only("Its Apple stake was worth $8.3 million.", holdings).status == "unsupported"


def test_an_amount_printed_without_its_zero_decimal_is_exact_to_the_tables_precision() -> None:
    snow = Evidence(
        "get_financials (income_statements(company=SNOW, period=annual, limit=2))",
        "| Line item | 2025-FY (2025-01-31) | 2024-FY (2024-01-31) |\n|---|---|---|\n"
        "| Revenue | 3,626.4 | 2,806.5 |\n| EBIT | -816 | -1,093.1 |\n"
        "Units: USD millions, except per-share values (USD) and share counts (millions).\n",
    )
    assert _only("FY2025 EBIT was a loss of $816.0 million.", snow).status == "verified"
    assert _only("FY2025 EBIT was a loss of $816.4 million.", snow).status == "unsupported"


def test_a_figure_of_another_company_is_unsupported_with_a_note() -> None:
    nvda = Evidence(
        "get_financials (income_statements(company=NVDA, period=annual, limit=1))",
        "## NVIDIA CORP (NVDA) — income statement (annual)\n"
        "| Line item | 2026-FY (2026-01-25) |\n|---|---|\n| Revenue | 215,938 |\n"
        "Units: USD millions, except per-share values (USD) and share counts (millions).\n",
    )
    figure = _only("Apple's revenue was $215.9 billion, like NVIDIA's.", INCOME, nvda)
    assert figure.status == "unsupported"
    assert figure.source is not None and "NVDA" in figure.source


def test_the_latest_fiscal_year_and_a_ttm_mean_the_most_recent_periods() -> None:
    assert _only("In the latest fiscal year revenue was $416.2 billion.", INCOME).status == (
        "verified"
    )
    assert _only("In the latest fiscal year revenue was $391.0 billion.", INCOME).status == (
        "unsupported"
    )
    ttm = Evidence(
        "get_financials (income_statements(company=AAPL, period=ttm, limit=2))",
        "| Line item | 2026-Q1-TTM (2025-12-27) | 2025-Q4-TTM (2025-09-27) |\n|---|---|---|\n"
        "| Revenue | 435,617 | 416,161 |\n"
        "Units: USD millions, except per-share values (USD) and share counts (millions).\n",
    )
    assert _only("TTM revenue was $435.6 billion.", ttm).status == "verified"
    assert _only("TTM revenue was $416.2 billion.", ttm).status == "unsupported"


def test_a_days_price_is_that_days() -> None:
    prices = Evidence(
        "get_market_data (stock_prices(company=MSFT, start_date=2021-12-28))",
        "| Date | Open (USD) | High (USD) | Low (USD) | Close (USD) | Volume |\n"
        "|---|---|---|---|---|---|\n"
        "| 2021-12-30 | 341.91 | 343.13 | 338.82 | 339.32 | 15,994,500 |\n"
        "| 2021-12-31 | 338.51 | 339.36 | 335.85 | 336.32 | 18,000,800 |\n",
    )
    assert _only("Microsoft ended 2021 at $336.32.", prices).status == "verified"
    assert _only("Microsoft ended 2021 at $339.32.", prices).status == "unsupported"
    assert _only("On December 30, 2021 it closed at $339.32.", prices).status == "verified"


def test_a_quarter_without_a_year_is_the_newest_such_quarter() -> None:
    quarters = Evidence(
        "get_financials (income_statements(company=AAPL, period=quarterly, limit=5))",
        "| Line item | 2026-Q1 (2025-12-27) | 2025-Q4 (2025-09-27) | 2025-Q1 (2024-12-28) |\n"
        "|---|---|---|---|\n| Revenue | 143,756 | 102,466 | 124,300 |\n"
        "Units: USD millions, except per-share values (USD) and share counts (millions).\n",
    )
    assert _only("Q1 revenue was $143.8 billion.", quarters).status == "verified"
    assert _only("Q1 revenue was $124.3 billion.", quarters).status == "unsupported"
    assert _only("Q4 revenue was $102.5 billion.", quarters).status == "verified"
