"""Per-share figures and share counts on one basis, the latest, through splits and
recapitalisations: the recorded Apple (7:1 2014, 4:1 2020), NVIDIA (4:1 2021, 10:1 2024) and Tesla
(5:1 2020, 3:1 2022, seen only in its 2022 10-Qs) companyfacts, plus two small documents for
filers the fixtures lack (an IFRS recapitalisation, a filer tagging only EPS)."""

from __future__ import annotations

from typing import Any

import pytest

from dexter.cli.data_render import statements_table
from dexter.data.metrics import compute_metrics
from dexter.data.sec.facts import fact_series, index_facts, statements_from_facts
from dexter.data.sec.share_basis import Split
from dexter.tools.citations import SourceLedger
from dexter.tools.finance.format import format_statements
from tests.support.fixtures import companyfacts

APPLE, NVIDIA, SNOWFLAKE, TESLA = "0000320193", "0001045810", "0001640147", "0001318605"


def _income(cik: str, period: Any = "annual", limit: int = 8, **kw: Any) -> list[Any]:
    return list(
        statements_from_facts(
            companyfacts(cik), ticker="X", statement="income", period=period, limit=limit, **kw
        )
    )


def restated(value: float, ratio: float) -> float:
    """A filed per-share value on today's basis, as statements carry it (6 decimals)."""
    return round(value / ratio, 6)


def test_splits_are_read_from_the_data_with_ratio_and_date() -> None:
    def seen(cik: str) -> list[tuple[float, str, str | None, str]]:
        return [
            (s.ratio, s.first_after, s.effective, s.describe())
            for s in index_facts(companyfacts(cik)).splits
        ]

    assert seen(APPLE) == [
        (7.0, "2014-07-23", "2014-06-06", "the 7-for-1 stock split of 2014"),
        (4.0, "2020-10-30", "2020-08-28", "the 4-for-1 stock split of 2020"),
    ]
    assert seen(NVIDIA) == [
        (4.0, "2021-08-20", "2021-06-03", "the 4-for-1 stock split of 2021"),
        (10.0, "2024-08-28", "2024-05-31", "the 10-for-1 stock split of 2024"),
    ]
    # Tesla's 3-for-1 split of August 2022 shows only in one 10-Q's comparatives.
    assert seen(TESLA) == [
        (5.0, "2020-10-26", "2020-08-10", "the 5-for-1 stock split of 2020"),
        (3.0, "2022-10-24", "2022-08-05", "the 3-for-1 stock split of 2022"),
    ]
    assert index_facts(companyfacts(TESLA)).splits[1].last_before == "2022-07-25"
    assert index_facts(companyfacts(SNOWFLAKE)).splits == []


def test_tesla_years_never_refiled_after_the_3_for_1_split_are_restated() -> None:
    """Tesla's facts end in October 2022: its 10-Ks for 2018-2021 predate the split of August
    2022 and no later 10-K re-filed them. FY2021 diluted EPS was filed as 4.90 on 1,129 M
    shares; on today's basis it is 1.63 on 3,387 M."""
    fy21, fy20, fy19, fy18 = _income(TESLA)[:4]
    assert fy21.fiscal_period == "2021-FY"
    assert fy21.earnings_per_share_diluted == restated(4.90, 3)
    assert fy21.earnings_per_share == restated(5.60, 3)
    assert fy21.weighted_average_shares_diluted == 3_387_000_000
    assert fy20.earnings_per_share_diluted == restated(0.64, 3)
    # Growth is the same whichever basis, as long as it is one basis.
    growth = fy21.earnings_per_share_diluted / fy20.earnings_per_share_diluted - 1
    assert growth == pytest.approx(4.90 / 0.64 - 1, abs=1e-4)
    # FY2018 was last filed in February 2021, after the 5-for-1 split: only the 3-for-1 applies.
    assert fy18.earnings_per_share_diluted == pytest.approx(-0.38, abs=0.001)
    source = fy21.sources["earnings_per_share_diluted"]
    assert source.form == "10-K (restated for the 3-for-1 stock split of 2022)"
    assert source.accession_number == "0000950170-22-000796"
    note = (
        "per-share values and share counts restated to the latest basis for the 3-for-1 stock "
        "split of 2022 (filed before it)"
    )
    assert fy21.notes == fy19.notes == [note]
    assert fy21.sources["revenue"].form == "10-K"  # money is not touched
    # As filed, the raw series still says 4.90.
    raw = {p.value for p in fact_series(companyfacts(TESLA), "EarningsPerShareDiluted")}
    assert 4.90 in raw


def test_a_quarter_refiled_after_the_split_is_not_restated_again() -> None:
    """Q3 2021 was re-filed on the new basis in the Q3 2022 10-Q (0.48, as filed); Q2 2021 was
    last filed in the Q2 2022 10-Q, a month before the split (1.02 → 0.34)."""
    quarters = {q.fiscal_period: q for q in _income(TESLA, period="quarterly", limit=6)}
    q3_22, q3_21, q2_21 = quarters["2022-Q3"], quarters["2021-Q3"], quarters["2021-Q2"]
    assert q3_21.earnings_per_share_diluted == 0.48
    assert q3_21.sources["earnings_per_share_diluted"].form == "10-Q"
    assert q3_21.sources["earnings_per_share_diluted"].filing_date == "2022-10-24"
    assert q3_21.notes is None and q3_22.notes is None
    assert q2_21.earnings_per_share_diluted == restated(1.02, 3)
    assert q2_21.notes and "3-for-1" in q2_21.notes[0]
    growth = q3_22.earnings_per_share_diluted / q3_21.earnings_per_share_diluted - 1
    assert growth == pytest.approx(0.979, abs=0.001)  # 0.95 vs 0.48, not 0.95 vs 1.44


def test_apple_years_before_both_splits_are_on_todays_basis() -> None:
    """FY2011's 27.68 diluted EPS was last filed in October 2013, before the 7-for-1 (2014) and
    4-for-1 (2020) splits: 27.68 / 28. FY2017's 9.21 was re-filed after 2014 only: / 4."""
    years = {y.fiscal_period: y for y in _income(APPLE, report_period_lte="2017-12-31")}
    assert years["2017-FY"].earnings_per_share_diluted == restated(9.21, 4)
    assert years["2011-FY"].earnings_per_share_diluted == restated(27.68, 28)
    assert years["2011-FY"].weighted_average_shares_diluted == 936_645_000 * 28
    assert len(years["2011-FY"].notes or []) == 2
    assert len(years["2017-FY"].notes or []) == 1


def test_nvidia_dividends_per_share_follow_both_splits() -> None:
    """NVIDIA paid 0.16 a quarter before its 2021 split and 0.04 after it; after 2024's it
    raised the dividend to 0.01."""

    def quarter(end: str) -> Any:
        (row,) = _income(NVIDIA, "quarterly", 1, report_period_gte=end, report_period_lte=end)
        return row

    assert quarter("2020-10-25").dividends_per_common_share == restated(0.16, 40)
    assert quarter("2022-10-30").dividends_per_common_share == restated(0.04, 10)
    assert quarter("2025-04-27").dividends_per_common_share == 0.01


def test_metrics_across_a_split_use_one_share_basis() -> None:
    """Tesla's 10-K for 2020 counted 960 M shares; its 3-for-1 split of 2022 makes that 2,880 M.
    Book value per share and EPS growth (what `financial_metrics` computes from the statements)
    must not mix the two bases."""

    def statements(kind: Any) -> Any:
        return statements_from_facts(
            companyfacts(TESLA), ticker="TSLA", statement=kind, period="annual", limit=3
        )

    fy21, fy20, _ = compute_metrics(
        statements("income"), statements("balance"), statements("cashflow")
    )
    assert (fy21.fiscal_period, fy20.fiscal_period) == ("2021-FY", "2020-FY")
    assert fy20.book_value_per_share == pytest.approx(22_225_000_000 / 2_880_000_000, rel=1e-3)
    assert fy21.book_value_per_share == pytest.approx(30_189_000_000 / 3_100_000_000, rel=1e-3)
    assert fy21.earnings_per_share_growth == pytest.approx(5.60 / 0.74 - 1, abs=1e-4)
    assert fy20.notes and "3-for-1 stock split of 2022" in fy20.notes[0]


def test_the_model_and_the_user_are_told_which_periods_were_restated() -> None:
    rows = _income(TESLA)[:3]
    text = format_statements(rows, kind="income_statement", ledger=SourceLedger())
    assert (
        "Note: Per-share values and share counts restated to the latest basis for the 3-for-1 "
        "stock split of 2022 (filed before it): 2019-FY, 2020-FY, 2021-FY." in text
    )
    # FY2021, FY2020, FY2019 on today's basis (filed as 4.90, 0.64 and −0.98).
    assert "| EPS, diluted (USD) | 1.6333 | 0.2133 | -0.3267 |" in text
    # `dexter data income TSLA` puts the same under its table, in its own period labels.
    grid = statements_table(rows, title="Tesla, Inc. (TSLA) — income statement, annual")
    assert grid.caption == (
        "USD millions; per-share figures in USD; share counts in millions. Per-share values and "
        "share counts restated to the latest basis for the 3-for-1 stock split of 2022 (filed "
        "before it): FY2019, FY2020, FY2021."
    )


# ---------------------------------------------------------------- documents the fixtures lack


def _fact(value: float, start: str | None, end: str, filing: tuple[str, str, str]) -> Any:
    accn, form, filed = filing
    fact: dict[str, Any] = {"end": end, "val": value, "accn": accn, "form": form, "filed": filed}
    fact |= {"fy": int(filed[:4]) - 1, "fp": "FY"}
    return fact | ({"start": start} if start else {})


def _document(taxonomy: str, concepts: dict[str, tuple[str, list[Any]]]) -> dict[str, Any]:
    """Built from the documented companyfacts JSON shape: taxonomy -> concept -> units -> facts."""
    body = {
        name: {"label": name, "units": {unit: facts}} for name, (unit, facts) in concepts.items()
    }
    return {"cik": 99, "entityName": "Example plc", "facts": {taxonomy: body}}


def _eps_series(
    years: dict[int, tuple[float, float]], recap_year: int, ratio: float, form: str, cents: bool
) -> dict[str, list[Any]]:
    """Each annual report covers its year and the two before; reports filed after `recap_year`
    restate every share count × ratio and EPS ÷ ratio (rounded to the cent, as filed)."""
    series: dict[str, list[Any]] = {"income": [], "shares": [], "eps": []}
    for year in sorted(years):
        filing = (f"0000000099-{year + 1 - 2000:02d}-000001", form, f"{year + 1}-04-20")
        factor = ratio if year > recap_year else 1.0
        for shown in (year, year - 1, year - 2):
            if shown not in years:
                continue
            income, shares = years[shown]
            start, end = f"{shown}-01-01", f"{shown}-12-31"
            count = round(shares * factor)
            eps = round(income / count, 2) if cents else income / count
            series["income"].append(_fact(income, start, end, filing))
            series["shares"].append(_fact(count, start, end, filing))
            series["eps"].append(_fact(eps, start, end, filing))
    return series


def test_an_ifrs_recapitalisation_restates_every_year_not_only_the_refiled_ones() -> None:
    """An IFRS filer (20-F, ifrs-full) issues 3 bonus shares for every 5 in 2023 (1 old share =
    1.6 new, not a clean split). Its 2023 20-F restates 2022 and 2021; 2020 and 2019 stay as
    filed in older 20-Fs, so growth into 2021 read across bases was −22% where it is +25%.
    Built from the documented companyfacts JSON shape (no IFRS filer is among the fixtures)."""
    years = {
        2019: (1_100_000_000.0, 1_013_000_000),
        2020: (1_200_000_000.0, 1_013_000_000),
        2021: (1_500_000_000.0, 1_013_000_000),
        2022: (2_000_000_000.0, 1_013_000_000),
        2023: (3_000_000_000.0, 1_013_000_000),
    }
    series = _eps_series(years, recap_year=2022, ratio=1.6, form="20-F", cents=True)
    data = _document(
        "ifrs-full",
        {
            "ProfitLoss": ("EUR", series["income"]),
            "WeightedAverageShares": ("shares", series["shares"]),
            "AdjustedWeightedAverageShares": ("shares", series["shares"]),
            "BasicEarningsLossPerShare": ("EUR/shares", series["eps"]),
            "DilutedEarningsLossPerShare": ("EUR/shares", series["eps"]),
        },
    )
    (split,) = index_facts(data).splits
    assert (split.ratio, split.last_before, split.first_after) == (1.6, "2023-04-20", "2024-04-20")
    assert split.describe() == "the change of share basis (1 old share = 1.6 new) of 2023-2024"
    rows = statements_from_facts(data, ticker="EX", statement="income", period="annual", limit=5)
    by_year = {r.fiscal_period: r for r in rows}
    assert set(by_year) == {"2019-FY", "2020-FY", "2021-FY", "2022-FY", "2023-FY"}
    for year, (income, shares) in years.items():
        row = by_year[f"{year}-FY"]
        assert row.weighted_average_shares == pytest.approx(shares * 1.6, rel=1e-6)
        assert row.earnings_per_share == pytest.approx(income / (shares * 1.6), abs=0.006)
    eps = {y: by_year[f"{y}-FY"].earnings_per_share for y in years}
    # 2021 as the 2023 20-F re-filed it (0.93); 2020 as filed in 2022 (1.18) on today's basis.
    assert (eps[2021], eps[2020]) == (0.93, restated(1.18, 1.6))
    assert eps[2021] / eps[2020] - 1 == pytest.approx(0.261, abs=0.001)  # not 0.93/1.18: −21%
    assert [r.fiscal_period for r in rows if r.notes] == ["2020-FY", "2019-FY"]
    assert rows[-1].currency == "EUR"


def test_a_20_for_1_split_seen_only_in_eps_restates_the_older_years() -> None:
    """A filer whose share counts are all per class (not in companyfacts' non-dimensional
    facts) tags only EPS. After a 20-for-1 split its 10-K restates the two years it repeats;
    the year before stays at 50.00, and EPS growth showed −94% instead of +19%.
    Built from the documented companyfacts JSON shape."""
    years = {
        2018: (40_000_000_000.0, 1_000_200_000),
        2019: (50_000_000_000.0, 1_000_000_000),
        2020: (59_500_000_000.0, 1_000_000_000),
        2021: (100_000_000_000.0, 1_000_000_000),
        2022: (110_000_000_000.0, 1_000_000_000),
    }
    series = _eps_series(years, recap_year=2021, ratio=20.0, form="10-K", cents=True)
    data = _document(
        "us-gaap",
        {
            "NetIncomeLoss": ("USD", series["income"]),
            "EarningsPerShareBasic": ("USD/shares", series["eps"]),
            "EarningsPerShareDiluted": ("USD/shares", series["eps"]),
        },
    )
    (split,) = index_facts(data).splits
    assert split.ratio == 20.0 and split.describe() == "the 20-for-1 stock split of 2022-2023"
    rows = statements_from_facts(data, ticker="EX", statement="income", period="annual", limit=5)
    eps = {r.fiscal_period: r.earnings_per_share_diluted for r in rows}
    assert eps["2019-FY"] == pytest.approx(2.50)  # 50.00 filed before the split, / 20
    assert eps["2020-FY"] == 2.98  # re-filed by the company on the new basis, as filed
    assert eps["2020-FY"] / eps["2019-FY"] - 1 == pytest.approx(0.192, abs=0.001)


def test_restating_only_diluted_shares_is_not_a_split() -> None:
    """A new accounting rule restates two years' diluted share counts by 10% while basic counts
    stay as filed: a restatement, not a change of basis (both would move in a split).
    Built from the documented companyfacts JSON shape."""
    old, new = ("a1", "10-K", "2023-02-01"), ("a2", "10-K", "2024-02-01")
    basic, diluted = [], []
    for year in (2021, 2022):
        start, end = f"{year}-01-01", f"{year}-12-31"
        basic += [_fact(1_013_000_000, start, end, old), _fact(1_013_000_000, start, end, new)]
        diluted += [_fact(1_100_000_000, start, end, old), _fact(1_210_000_000, start, end, new)]
    data = _document(
        "us-gaap",
        {
            "WeightedAverageNumberOfSharesOutstandingBasic": ("shares", basic),
            "WeightedAverageNumberOfDilutedSharesOutstanding": ("shares", diluted),
        },
    )
    assert index_facts(data).splits == []


def test_split_names() -> None:
    assert Split(0.1, "2020-01-01", "2020-04-01", 4).name == "1-for-10 reverse stock split"
    assert Split(1.5, "2020-01-01", "2020-04-01", 4).name == "3-for-2 stock split"
    assert Split(2.0, "2019-11-01", "2020-02-01", 4).year == "2019-2020"
