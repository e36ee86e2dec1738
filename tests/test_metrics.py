"""Ratios computed from statements: exact on Apple's real figures, silent (None) on gaps."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from dexter.data.metrics import compute_metrics, growth, ratio
from dexter.data.models import BalanceSheet, CashFlowStatement, IncomeStatement
from dexter.data.sec.facts import statements_from_facts
from tests.support.fixtures import sec_mirror_file

APPLE_FACTS = "https://data.sec.gov/api/xbrl/companyfacts/CIK0000320193.json"


def _apple(
    period: Any = "annual", limit: int = 3
) -> tuple[list[IncomeStatement], list[BalanceSheet], list[CashFlowStatement]]:
    path = sec_mirror_file(APPLE_FACTS)
    if not path.is_file():
        pytest.skip(f"{path} is missing; run `uv run python scripts/fetch_fixtures.py`.")
    data = _load(str(path))
    kw: dict[str, Any] = {"ticker": "AAPL", "period": period, "limit": limit}
    return (
        statements_from_facts(data, statement="income", **kw),
        statements_from_facts(data, statement="balance", **kw),
        statements_from_facts(data, statement="cashflow", **kw),
    )


@cache
def _load(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def test_apple_fy2025_margins_and_growth_are_exact() -> None:
    fy25, fy24, _ = compute_metrics(*_apple())
    assert (fy25.fiscal_period, fy25.report_period, fy25.period) == (
        "2025-FY",
        "2025-09-27",
        "annual",
    )
    assert fy25.net_margin == 112_010_000_000 / 416_161_000_000
    assert fy25.gross_margin == 195_201_000_000 / 416_161_000_000
    assert fy25.revenue_growth == (416_161_000_000 - 391_035_000_000) / 391_035_000_000
    assert fy24.revenue_growth is not None  # FY2023 was in the input, so FY2024 has a base
    assert fy25.earnings_per_share == 7.49
    # Averaged over FY2024's closing (56,950 M) and FY2025's closing (73,733 M) equity.
    assert fy25.return_on_equity == 112_010_000_000 / ((73_733_000_000 + 56_950_000_000) / 2)
    assert fy25.return_on_equity_ending == 112_010_000_000 / 73_733_000_000
    assert fy25.return_on_assets == 112_010_000_000 / ((359_241_000_000 + 364_980_000_000) / 2)
    assert fy25.sources["return_on_equity"].concept == (
        "computed: net_income / average(opening, closing shareholders_equity)"
    )
    assert fy25.sources["earnings_per_share"].concept == (
        "computed: earnings_per_share, basic (reported)"
    )
    assert fy25.current_ratio == 147_957_000_000 / 165_631_000_000
    assert fy25.debt_to_equity is not None and fy25.debt_to_equity > 1  # Apple's buyback-era book
    assert fy25.free_cash_flow_per_share == pytest.approx(98_767_000_000 / 14_773_260_000)
    assert fy25.sources["net_margin"].concept == "computed: net_income / revenue"
    assert fy25.sources["net_margin"].accession_number == "0000320193-25-000079"
    assert fy25.accession_number == "0000320193-25-000079"


def test_oldest_period_has_no_growth_and_valuation_needs_a_price() -> None:
    metrics = compute_metrics(*_apple())
    assert metrics[-1].revenue_growth is None  # nothing older to compare with
    assert all(m.market_cap is None and m.price_to_earnings_ratio is None for m in metrics)


def test_valuation_with_a_price_for_the_latest_period_only() -> None:
    fy25, fy24, _ = compute_metrics(*_apple(), price=250.0)
    market_cap = 250.0 * 14_773_260_000
    assert fy25.market_cap == market_cap
    assert fy25.price_to_earnings_ratio == market_cap / 112_010_000_000
    assert fy25.price_to_sales_ratio == market_cap / 416_161_000_000
    assert fy25.price_to_book_ratio == market_cap / 73_733_000_000
    assert fy25.enterprise_value == market_cap + 98_657_000_000 - 35_934_000_000
    assert fy25.free_cash_flow_yield == 98_767_000_000 / market_cap
    assert fy24.market_cap is None and fy24.price_to_earnings_ratio is None


def test_quarterly_valuation_skips_earnings_multiples() -> None:
    latest = compute_metrics(*_apple("quarterly", 5), price=250.0)[0]
    assert latest.fiscal_period == "2026-Q1"
    assert latest.market_cap is not None and latest.price_to_book_ratio is not None
    # One quarter's earnings would make P/E look four times too high.
    assert latest.price_to_earnings_ratio is None and latest.price_to_sales_ratio is None
    # Year-on-year: Q1 FY2026 (143,756 M) against Q1 FY2025 (124,300 M), not Q4 FY2025.
    assert latest.revenue_growth == (143_756_000_000 - 124_300_000_000) / 124_300_000_000
    assert latest.sources["revenue_growth"].concept == (
        "computed: Δ revenue vs same quarter a year earlier"
    )


def _income(period: str, **values: Any) -> IncomeStatement:
    return IncomeStatement(
        ticker="EX",
        report_period=period,
        fiscal_period=f"{period[:4]}-FY",
        period="annual",
        **values,
    )


def test_missing_and_zero_inputs_give_none_not_errors() -> None:
    bare = [_income("2025-12-31"), _income("2024-12-31")]
    (latest, _) = compute_metrics(bare, [], [], price=10.0)
    values = latest.model_dump(
        exclude={"ticker", "report_period", "fiscal_period", "period", "currency", "sources"}
    )
    assert {k for k, v in values.items() if v is not None} == set()
    zero = _income("2025-12-31", revenue=0, net_income=5, gross_profit=0, operating_income=-3)
    sheet = BalanceSheet(
        ticker="EX",
        report_period="2025-12-31",
        fiscal_period="2025-FY",
        period="annual",
        total_assets=0,
        current_liabilities=0,
        shareholders_equity=0,
    )
    (metrics,) = compute_metrics([zero], [sheet], [], price=10.0)
    assert metrics.net_margin is None and metrics.return_on_assets is None
    assert metrics.current_ratio is None and metrics.return_on_equity is None
    assert metrics.market_cap is None  # no share count


def test_growth_from_a_loss_uses_the_size_of_the_loss() -> None:
    now, then = _income("2025-12-31", net_income=-5), _income("2024-12-31", net_income=-10)
    (latest, _) = compute_metrics([now, then], [], [])
    assert latest.earnings_growth == 0.5
    assert growth(1, 0) is None and ratio(1, None) is None and ratio(3, 2) == 1.5


def test_periods_align_by_report_period_across_statements() -> None:
    income = [_income("2025-12-31", revenue=100, net_income=10)]
    sheet = BalanceSheet(
        ticker="EX",
        report_period="2025-12-31",
        fiscal_period="2025-FY",
        period="annual",
        total_assets=200,
        shareholders_equity=50,
    )
    flows = CashFlowStatement(
        ticker="EX",
        report_period="2024-12-31",
        fiscal_period="2024-FY",
        period="annual",
        free_cash_flow=7,
    )
    metrics = compute_metrics(income, [sheet], [flows])
    assert [m.report_period for m in metrics] == ["2025-12-31", "2024-12-31"]
    assert metrics[0].return_on_assets_ending == 10 / 200
    assert metrics[0].return_on_equity_ending == 10 / 50
    # No 2024 balance sheet, so no opening balance to average with.
    assert metrics[0].return_on_assets is None and metrics[0].return_on_equity is None
    assert metrics[0].free_cash_flow_growth is None  # the 2025 cash flow is missing


def test_snowflake_debt_to_equity_counts_its_convertible_notes() -> None:
    path = sec_mirror_file("https://data.sec.gov/api/xbrl/companyfacts/CIK0001640147.json")
    if not path.is_file():
        pytest.skip(f"{path} is missing; run `uv run python scripts/fetch_fixtures.py`.")
    data = _load(str(path))
    kw: dict[str, Any] = {"ticker": "SNOW", "period": "annual", "limit": 1}
    (balance,) = statements_from_facts(data, statement="balance", **kw)
    (fy25,) = compute_metrics([], [balance], [])
    assert balance.shareholders_equity is not None
    assert fy25.debt_to_equity == 2_271_529_000 / balance.shareholders_equity


def _sheet(period: str, **values: Any) -> BalanceSheet:
    return BalanceSheet(
        ticker="EX",
        report_period=period,
        fiscal_period=f"{period[:4]}-FY",
        period="annual",
        **values,
    )


def test_a_loss_on_negative_equity_is_not_a_positive_return() -> None:
    income = [_income("2025-12-31", net_income=-30), _income("2024-12-31", net_income=-20)]
    sheets = [
        _sheet("2025-12-31", shareholders_equity=-100, total_assets=400),
        _sheet("2024-12-31", shareholders_equity=-60, total_assets=300),
    ]
    latest, _ = compute_metrics(income, sheets, [])
    assert latest.return_on_equity is None and latest.return_on_equity_ending is None
    assert latest.return_on_assets == -30 / 350


def test_roic_uses_the_unclamped_tax_rate_and_counts_minority_interest() -> None:
    income = [
        _income(
            "2025-12-31",
            operating_income=100,
            pretax_income=80,
            income_tax_expense=100,  # a tax charge above pre-tax income: rate 125%, not 100%
            net_income=-20,
        )
    ]
    sheet = _sheet(
        "2025-12-31", shareholders_equity=300, total_debt=150, non_controlling_interest=50
    )
    (metrics,) = compute_metrics(income, [sheet], [])
    assert metrics.return_on_invested_capital == 100 * (1 - 100 / 80) / 500
    assert "non_controlling_interest" in str(metrics.sources["return_on_invested_capital"].concept)
    loss = [_income("2025-12-31", operating_income=100, pretax_income=-10, income_tax_expense=5)]
    (metrics,) = compute_metrics(loss, [sheet], [])
    assert metrics.return_on_invested_capital == 100 / 500
    assert "pre-tax loss: no tax applied" in str(
        metrics.sources["return_on_invested_capital"].concept
    )
