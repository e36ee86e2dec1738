"""Research as of a past day: only facts and filings filed on or before it.

The latest annual record is the newest fiscal year whose 10-K was filed by then; the latest
quarterly record is the newest quarter any filing had reported (a fourth quarter once its 10-K
is in). Values are the latest filed by then, on the share basis of the newest filing by then: a
split whose first split-adjusted filing came later is not applied yet.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finance_units import cases
from finance_units.raw import Filer
from finance_units.rules import FIELDS, annual, quarter

Case = dict[str, Any]
SUBMISSIONS = "sec-mirror/data.sec.gov/submissions/CIK{cik}.json"

# Days worth asking about, and why; on days marked True the share basis is asked about too.
DAYS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "AAPL": (
        ("2016-01-01", "before the 2016 restatement of FY2015 total assets", False),
        (
            "2020-09-15",
            "after the 4-for-1 split took effect, before any filing on the new basis",
            True,
        ),
        ("2020-11-01", "after the FY2020 10-K, the first filing on the 4-for-1 basis", True),
        ("2025-01-15", "a fourth quarter derived from the FY2024 10-K", False),
        ("2025-06-01", "between the Q2 10-Q and the FY2025 10-K", False),
        ("2025-11-01", "the day after the FY2025 10-K", False),
    ),
    "NVDA": (
        ("2021-06-01", "before the 4-for-1 split", True),
        ("2021-09-01", "after the first filing on the 4-for-1 basis", True),
        (
            "2024-06-20",
            "after the 10-for-1 split took effect, before any filing on the new basis",
            True,
        ),
        (
            "2025-02-20",
            "before the FY2025 10-K, after the first filings on the 10-for-1 basis",
            True,
        ),
        ("2025-03-01", "after the FY2025 10-K", False),
    ),
    "SNOW": (
        ("2023-03-28", "the day before the FY2023 10-K", False),
        ("2023-03-29", "the day of the FY2023 10-K", False),
        ("2025-04-01", "after the FY2025 10-K", False),
    ),
    "TSLA": (
        ("2020-03-01", "before the 5-for-1 split", True),
        ("2021-03-01", "after the 5-for-1 split, before the 3-for-1", True),
        ("2022-02-06", "the day before the FY2021 10-K", False),
        ("2022-02-07", "the day of the FY2021 10-K", False),
        (
            "2022-09-01",
            "after the 3-for-1 split took effect, before any filing on the new basis",
            True,
        ),
        ("2022-11-01", "after the Q3 2022 10-Q, the first filing on the 3-for-1 basis", True),
    ),
}
# On days around a split, the latest years' diluted EPS and share count are asked for too.
SHARE_YEARS = 2


def as_of_cases(filer: Filer, root: Path) -> list[Case]:
    found: list[Case] = []
    submissions = _submissions(root, filer.cik)
    for day, why, shares in DAYS.get(filer.ticker, ()):
        view = filer.on(day)
        found += _latest(filer, view, day, why)
        if shares:
            found += _share_basis(filer, view, day, why)
        if submissions is not None:
            found += _filings(filer, submissions, day, why)
    return found


def _latest(filer: Filer, view: Filer, day: str, why: str) -> list[Case]:
    found: list[Case] = []
    year = [y for y in view.years if y.complete][-1]
    for statement, name in (("income", "revenue"), ("balance", "total_assets")):
        figure = annual(view, FIELDS[name], year)
        assert figure is not None
        found.append(
            _latest_case(
                filer,
                f"{name}-annual-{day}",
                statement,
                "annual",
                day,
                name,
                {"fiscal_period": f"{year.label}-FY", "report_period": year.end},
                figure.value,
                f"{why}: the newest 10-K filed by {day} is {year.accn} ({year.filed}); "
                + figure.note,
            )
        )
    last = view.years[-1]
    n = len(last.quarter_ends)
    end = last.quarter_ends[-1]
    for statement, name in (("income", "revenue"), ("cashflow", "net_cash_flow_from_operations")):
        figure = quarter(view, FIELDS[name], last, n)
        if figure is None:
            continue
        found.append(
            _latest_case(
                filer,
                f"{name}-quarter-{day}",
                statement,
                "quarterly",
                day,
                name,
                {"fiscal_period": f"{last.label}-Q{n}", "report_period": end},
                figure.value,
                f"{why}: the newest quarter reported by {day} ends {end}; " + figure.note,
            )
        )
    return found


def _latest_case(
    filer: Filer,
    suffix: str,
    statement: str,
    period: str,
    day: str,
    field: str,
    expect: dict[str, Any],
    value: Any,
    note: str,
) -> Case:
    return {
        "id": f"{filer.ticker.lower()}-{suffix}",
        "kind": "latest",
        "source": filer.source,
        "args": {
            "ticker": filer.ticker,
            "statement": statement,
            "period": period,
            "as_of": day,
            "field": field,
        },
        "expect": {**expect, "value": cases.number(value)},
        "note": note,
    }


def _share_basis(filer: Filer, view: Filer, day: str, why: str) -> list[Case]:
    found: list[Case] = []
    years = [y for y in view.years if y.complete]
    for year in years[-SHARE_YEARS:]:
        for name in ("earnings_per_share_diluted", "weighted_average_shares_diluted"):
            field = FIELDS[name]
            figure = annual(view, field, year)
            if figure is None:
                continue
            basis = ", ".join(f"{s.ratio}-for-1 {s.effective}" for s in view.splits_in_view)
            case = cases.statement(
                f"{filer.ticker.lower()}-{name}-{year.end}-as-of-{day}",
                filer,
                field,
                "annual",
                year.year_end,
                figure,
                as_of=day,
            )
            case["note"] = f"{why}; splits reflected by then: {basis or 'none'}. {case['note']}"
            found.append(case)
    return found


def _submissions(root: Path, cik: str) -> dict[str, Any] | None:
    path = root / SUBMISSIONS.format(cik=cik)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _filings(filer: Filer, submissions: dict[str, Any], day: str, why: str) -> list[Case]:
    recent = submissions["filings"]["recent"]
    found: list[Case] = []
    for form in ("10-K", "10-Q"):
        rows = [
            i
            for i, (f, filed) in enumerate(zip(recent["form"], recent["filingDate"], strict=True))
            if f == form and filed <= day
        ]
        if not rows:
            continue
        i = max(rows, key=lambda i: (recent["filingDate"][i], recent["accessionNumber"][i]))
        found.append(
            {
                "id": f"{filer.ticker.lower()}-{form.lower()}-{day}",
                "kind": "filing",
                "source": SUBMISSIONS.format(cik=filer.cik),
                "args": {"ticker": filer.ticker, "form": form, "index": 0, "as_of": day},
                "expect": {
                    "accession_number": recent["accessionNumber"][i],
                    "filing_date": recent["filingDate"][i],
                },
                "note": f"{why}: the newest {form} in submissions filed on or before {day} "
                f"(recent[{i}], report date {recent['reportDate'][i]})",
            }
        )
    return found
