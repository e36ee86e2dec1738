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
