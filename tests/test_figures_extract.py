"""Which numbers of an answer are figures, and what each one says (value, unit, period)."""

from __future__ import annotations

import pytest

from dexter.figures.extract import Claim, extract


def _figures(answer: str) -> list[Claim]:
    return extract(answer)


def _one(answer: str) -> Claim:
    found = extract(answer)
    assert len(found) == 1, [c.text for c in found]
    return found[0]


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("Revenue was $391.0 billion.", 391.0e9, "USD"),
        ("Revenue was $391,035 million.", 391_035e6, "USD"),
        ("Revenue was 391.0B.", 391.0e9, ""),
        ("Capex of USD 1.2bn.", 1.2e9, "USD"),
        ("A charge of €3.4m.", 3.4e6, "EUR"),
        ("Free cash flow fell to -$2.8bn.", -2.8e9, "USD"),
        ("Other income was (1,234) in the table.", -1234, ""),
        ("Margins rose 6.4%.", 6.4, "%"),
        ("Margins rose 6.4 percent.", 6.4, "%"),
        ("Margins rose 50 basis points.", 0.5, "%"),
        ("Diluted EPS was $6.08.", 6.08, "USD/share"),
        ("Net income was $6.11 per share.", 6.11, "USD/share"),
        ("It trades at 28.5x earnings.", 28.5, "x"),
        ("It trades at 28.5 times earnings.", 28.5, "x"),
        ("Apple had 15.1 billion shares outstanding.", 15.1e9, "shares"),
        ("The company employs 164,000 people.", 164_000, ""),
    ],
)
def test_each_kind_of_figure_is_read_with_its_unit_and_scale(
    text: str, value: float, unit: str
) -> None:
    claim = _one(text)
    assert claim.value == pytest.approx(value)
    assert claim.unit == unit
    assert text[claim.start : claim.end] == claim.text


@pytest.mark.parametrize(
    "text",
    [
        "Apple's fiscal 2024 and FY2025 reports, and Q3 2024.",
        "It was filed on September 28, 2024 (2024-09-28).",
        "See Item 7 and Item 1A of the Form 10-K, the 8-K and the 13F.",
        "As the filing says [S1] [S2], see note [3].",
        "1. Revenue\n2. Margins\n3) Cash",
        "The 1st and 2nd quarters, a 20-for-1 split, the 52-week range.",
        "CIK 0000320193, accession 0000320193-24-000123.",
        "Apple reports 3 segments and looked back two years over 5 regions.",
        "Results from 2023-2024 and the S&P 500 under Rule 10b5-1.",
    ],
)
def test_years_dates_names_markers_and_small_counts_are_not_figures(text: str) -> None:
    assert [c.text for c in _figures(text)] == []


def test_figure_spans_are_exact_so_they_can_be_marked_in_place() -> None:
    answer = "Revenue rose 6.4% to $416.2 billion [S1], or $7.46 per diluted share."
    spans = [answer[c.start : c.end] for c in _figures(answer)]
    assert spans == ["6.4%", "$416.2 billion", "$7.46 per diluted share"]


def test_display_rounding_follows_the_digits_written() -> None:
    claim = _one("Revenue was $391.0 billion.")
    assert claim.tolerance(claim.scales[0]) == pytest.approx(0.05e9)
    hedged = _one("Revenue was about $400 billion.")
    assert hedged.tolerance(hedged.scales[0]) == pytest.approx(50e9)


def test_the_period_attached_to_a_figure_is_its_stated_period() -> None:
    claims = _figures(
        "Revenue grew 6.4% to $416.2 billion in FY2025 from $391.0 billion in FY2024."
    )
    periods = {c.text: c.period.year if c.period else None for c in claims}
    assert periods["$416.2 billion"] == 2025
    assert periods["$391.0 billion"] == 2024


def test_a_period_before_the_figure_governs_it() -> None:
    claims = _figures("In FY2024, revenue was $391.0 billion, and in FY2025 it was $416.2 billion.")
    assert [(c.text, c.period.year if c.period else None) for c in claims] == [
        ("$391.0 billion", 2024),
        ("$416.2 billion", 2025),
    ]


def test_respectively_pairs_figures_and_periods_in_order() -> None:
    claims = _figures(
        "Revenue for FY2025 and FY2024 was $416.2 billion and $391.0 billion, respectively."
    )
    assert [c.period.year if c.period else None for c in claims] == [2025, 2024]


def test_quarters_are_stated_periods() -> None:
    claim = _one("Revenue was $94.9 billion in Q4 FY2025.")
    assert claim.period is not None
    assert (claim.period.year, claim.period.quarter, claim.period.fiscal) == (2025, 4, True)


def test_table_cells_take_scale_and_period_from_headers() -> None:
    answer = (
        "| Line item (USD millions) | FY2025 | FY2024 |\n"
        "|---|---|---|\n"
        "| Revenue | 416,161 | 391,035 |\n"
        "| Gross margin (%) | 46.9 | 46.2 |\n"
    )
    claims = _figures(answer)
    assert [c.text for c in claims] == ["416,161", "391,035", "46.9", "46.2"]
    assert claims[0].value == pytest.approx(416_161e6)
    assert claims[0].period is not None and claims[0].period.year == 2025
    assert claims[1].period is not None and claims[1].period.year == 2024
    assert claims[2].unit == "%"


def test_a_table_cell_without_declared_scale_may_stand_for_any_scale() -> None:
    answer = "| Line item | FY2025 |\n|---|---|\n| Revenue | 416,161 |\n"
    (claim,) = _figures(answer)
    assert 1e6 in claim.scales and 1.0 in claim.scales


def _periods(answer: str) -> dict[str, str | None]:
    return {c.text: c.period.text if c.period else None for c in _figures(answer)}


def test_a_period_in_parentheses_labels_the_figure_after_it() -> None:
    periods = _periods("Free cash flow was $5.02 billion in 2021 (2020: $2.79 billion).")
    assert periods == {"$5.02 billion": "2021", "$2.79 billion": "2020"}


def test_a_figure_compared_against_takes_no_period_from_the_sentence() -> None:
    periods = _periods("In FY2025 revenue rose to $416.2 billion, up from $391.0 billion.")
    assert periods == {"$416.2 billion": "FY2025", "$391.0 billion": None}


def test_a_paragraph_about_one_period_gives_it_to_sentences_naming_none() -> None:
    periods = _periods(
        "Apple ended FY2025 with $35.9 billion of cash. Total assets were $359.2 billion."
    )
    assert periods["$359.2 billion"] == "FY2025"


def test_a_year_earlier_clause_is_the_year_before() -> None:
    (_, earlier) = _figures(
        "NVIDIA's Q1 FY2027 tax expense was $11.6 billion. A year earlier it paid $3.1 billion."
    )
    assert earlier.period is not None
    assert (earlier.period.year, earlier.period.quarter) == (2026, 1)


def test_quarters_months_days_ranges_and_trailing_periods() -> None:
    claims = {
        c.text: c.period
        for c in _figures(
            "Cash ended Q1 at $11.49 billion. In the September quarter revenue was $94.0 billion. "
            "On October 14 it closed at $121.10. Between June 1 and August 11, 2023 it rose from "
            "$207.25 to $242.65. Over the trailing twelve months to April 26, 2026 revenue was "
            "$253.5 billion."
        )
    }
    assert claims["$11.49 billion"] is not None and claims["$11.49 billion"].quarter == 1
    assert claims["$94.0 billion"] is not None and claims["$94.0 billion"].month == 9
    assert claims["$121.10"] is not None and (claims["$121.10"].month, claims["$121.10"].day) == (
        10,
        14,
    )
    ranged = claims["$242.65"]
    assert ranged is not None and ranged.start is not None and ranged.end is not None
    assert (ranged.start.isoformat(), ranged.end.isoformat()) == ("2023-06-01", "2023-08-11")
    trailing = claims["$253.5 billion"]
    assert trailing is not None and trailing.ttm and trailing.end is not None


def test_each_figure_belongs_to_the_company_named_before_it() -> None:
    companies = {"AAPL": "AAPL", "apple": "AAPL", "NVDA": "NVDA", "nvidia": "NVDA"}
    claims = extract(
        "Apple's revenue was $416.2 billion versus NVIDIA's $215.9 billion. NVIDIA has more "
        "equity ($157.3 billion vs $73.7 billion).",
        companies,
    )
    assert {c.text: c.company for c in claims} == {
        "$416.2 billion": "AAPL",
        "$215.9 billion": "NVDA",
        "$157.3 billion": "NVDA",
        "$73.7 billion": None,  # the other side of a comparison
    }


def test_a_sentence_may_declare_the_scale_of_its_bare_numbers() -> None:
    claims = _figures("Quarterly revenue (USD millions): Q2 868.8 and Q3 942.1.")
    assert [(c.text, c.scales) for c in claims] == [("868.8", (1e6,)), ("942.1", (1e6,))]


def test_amounts_in_ranges_and_after_product_names_are_figures() -> None:
    texts = [c.text for c in _figures("Sold at $150.84-$154.76; iPhone $201.2B.")]
    assert texts == ["$150.84", "$154.76", "$201.2B"]
