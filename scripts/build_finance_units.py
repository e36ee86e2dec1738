"""Write the data-derived cases of the finance unit set from the raw recorded fixtures.

Expected values are read straight from the SEC JSON (company_tickers, submissions, companyfacts)
with rules written in `scripts/finance_units/` (each module's docstring states its rules),
independently of Dexter's parsers, so a case checks Dexter against the filing rather than against
itself. Every case carries a `note` naming the concept, accession and filing date its value comes
from, and the arithmetic for derived ones. Hand-written areas (items, documents, calculate,
ownership, routing, per_share) are not generated.

Every companyfacts filer in the fixtures must be listed in FILERS (the script stops otherwise),
so a newly recorded filer gets every statement area. No IFRS (`ifrs-full`) companyfacts filer is
recorded, so there are no IFRS cases; add one to the fixtures and to FILERS to get them.

Run: `uv run python scripts/build_finance_units.py [FIXTURES_DIR]`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from finance_units import companies, statements
from finance_units.as_of import as_of_cases
from finance_units.cases import dump
from finance_units.raw import FACTS_DIR, Filer, Split
from finance_units.splits import verify_splits

# ticker -> (CIK, stock splits from the public record; each is checked against the data).
FILERS: dict[str, tuple[str, tuple[Split, ...]]] = {
    "AAPL": (
        "0000320193",
        (
            Split(7, "2014-06-09", "7-for-1, trading split-adjusted from 2014-06-09"),
            Split(4, "2020-08-31", "4-for-1, trading split-adjusted from 2020-08-31"),
        ),
    ),
    "NVDA": (
        "0001045810",
        (
            Split(4, "2021-07-20", "4-for-1, trading split-adjusted from 2021-07-20"),
            Split(10, "2024-06-10", "10-for-1, trading split-adjusted from 2024-06-10"),
        ),
    ),
    "SNOW": ("0001640147", ()),
    "TSLA": (
        "0001318605",
        (
            Split(5, "2020-08-31", "5-for-1, trading split-adjusted from 2020-08-31"),
            Split(3, "2022-08-25", "3-for-1, trading split-adjusted from 2022-08-25"),
        ),
    ),
}

Case = dict[str, Any]
AREAS: tuple[tuple[str, str, Callable[[Filer], list[Case]]], ...] = (
    (
        "fiscal_periods",
        "Fiscal-period labels: each company's own fiscal year (Apple ends in late September, "
        "NVIDIA and Snowflake in late January, Tesla in December), quarter numbering and TTM.",
        statements.fiscal_periods,
    ),
    (
        "units_scale",
        "Annual income-statement values in whole units as filed (USD, not thousands or "
        "millions), with the filer's own revenue concept (Tesla: contract revenue for FY2018, "
        "Revenues after).",
        statements.income_values,
    ),
    (
        "balance_sheets",
        "Balance sheets at year ends (annual) and quarter ends (quarterly): one value per date "
        "whatever the period type, the latest filing's.",
        statements.balance_sheets,
    ),
    (
        "cash_flows",
        "Cash-flow lines, annual and quarterly (quarters from year-to-date figures; share-based "
        "compensation from the cash-flow line), outflows negative, free cash flow.",
        statements.cash_flows,
    ),
    (
        "derived_quarters",
        "Quarters from three-month facts, and quarters nobody filed derived from year-to-date "
        "figures (the fourth quarter is the year less nine months).",
        statements.derived_quarters,
    ),
    (
        "ttm",
        "Trailing twelve months: the sum of the last four quarters, fourth quarters derived "
        "from the year less nine months.",
        statements.trailing_twelve_months,
    ),
    (
        "total_debt",
        "Total, current and non-current debt: each balance-sheet line of borrowings once, "
        "never a concept twice, leases not added to a notes-only total.",
        statements.total_debt,
    ),
    (
        "share_basis",
        "Per-share amounts and share counts of every period on the latest basis after stock "
        "splits (Apple 4:1 2020; NVIDIA 4:1 2021, 10:1 2024; Tesla 5:1 2020, 3:1 2022).",
        statements.share_basis,
    ),
    (
        "restatements",
        "Periods filed with different values over time: the latest filing wins.",
        statements.restatements,
    ),
    (
        "citations",
        "Every statement figure carries its filing: accession, form and concept.",
        statements.citations,
    ),
)


def load_filers(root: Path) -> list[Filer]:
    recorded = {p.stem.removeprefix("CIK") for p in (root / FACTS_DIR).glob("CIK*.json")}
    listed = {cik for cik, _ in FILERS.values()}
    if recorded != listed:
        raise SystemExit(
            f"companyfacts filers in the fixtures {sorted(recorded)} differ from FILERS "
            f"{sorted(listed)}: list every recorded filer (with its splits) in FILERS."
        )
    filers = []
    for ticker, (cik, splits) in FILERS.items():
        filer = Filer.load(root, ticker, cik, splits)
        for split, count in verify_splits(filer).items():
            print(f"{ticker}: {split.what}: {count} re-filed share counts agree")
        filers.append(filer)
    return filers


def main(root: Path) -> None:
    filers = load_filers(root)
    for area, description, build in AREAS:
        dump(area, description, [case for filer in filers for case in build(filer)])
    dump(
        "as_of",
        "Research as of a date: only what was filed by then (latest statements, values as "
        "filed then, the share basis of the newest filing then, filing lists).",
        [case for filer in filers for case in as_of_cases(filer, root)],
    )
    tickers = {filer.ticker: filer.cik for filer in filers}
    dump(
        "resolution",
        "Ticker, CIK, company-name, share-class and former-name resolution against "
        "company_tickers.json and submissions; misspellings get the right suggestion.",
        companies.resolution(root, tickers),
    )
    dump(
        "filings",
        "Filing lists from submissions: newest first, per form, with accession, filing date "
        "and period.",
        companies.filings(root),
    )


if __name__ == "__main__":
    default = (
        os.environ.get("DEXTER_FIXTURES")
        or Path(__file__).resolve().parents[2] / "shared" / "fixtures"
    )
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(default))
