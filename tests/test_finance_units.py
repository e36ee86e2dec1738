"""The judge-free finance unit set: every case passes on the recorded fixtures, and the runner
really fails a case whose expectation is wrong."""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from dataclasses import replace

import pytest

from dexter.evals.units import CaseResult, load_cases, run_cases
from tests.support.fixtures import fixtures_dir

CASES = load_cases()
AREAS = sorted({case.area for case in CASES})


STATEMENT_AREAS = (
    "fiscal_periods",
    "units_scale",
    "balance_sheets",
    "cash_flows",
    "derived_quarters",
    "ttm",
    "total_debt",
    "share_basis",
    "citations",
    "as_of",
)


def test_the_set_is_large_and_every_case_names_a_real_source() -> None:
    root = fixtures_dir()
    assert len(CASES) >= 1000
    assert len({(c.area, c.id) for c in CASES}) == len(CASES), "case ids are unique per area"
    per_area = Counter(case.area for case in CASES)
    assert {
        "resolution",
        "derived_quarters",
        "restatements",
        "calculate",
        "filing_items",
        "documents",
        *STATEMENT_AREAS,
    } <= set(per_area)
    for case in CASES:
        assert case.expect is not None, case.id
        if case.source != "method":
            assert (root / case.source).is_file(), f"{case.area}/{case.id}: {case.source}"


def test_every_recorded_companyfacts_filer_is_in_every_statement_area() -> None:
    """A filer added to the fixtures must get cases everywhere (rerun the generator), so the
    statement cases never again cover only the two filers that happened to be there first."""
    facts = fixtures_dir() / "sec-mirror" / "data.sec.gov" / "api" / "xbrl" / "companyfacts"
    filers = sorted(p.relative_to(fixtures_dir()).as_posix() for p in facts.glob("CIK*.json"))
    assert len(filers) >= 4
    for area in STATEMENT_AREAS:
        per_filer = Counter(c.source for c in CASES if c.area == area)
        thin = {f: per_filer[f] for f in filers if per_filer[f] < 5}
        assert not thin, f"{area}: too few cases for {thin}"


def test_resolution_covers_names_former_names_share_classes_and_misspellings() -> None:
    resolution = [c for c in CASES if c.area == "resolution"]
    kinds = Counter(c.id.split("-")[0] for c in resolution)
    assert all(kinds[k] >= 4 for k in ("ticker", "cik", "name", "former", "class", "misspelt"))
    assert all(c.kind == "suggest" for c in resolution if c.id.startswith("misspelt"))


@functools.cache
def _all_results() -> list[CaseResult]:
    # One run for every area: each company's facts are parsed once, not once per area.
    return asyncio.run(run_cases(CASES, fixtures_dir()))


@pytest.mark.parametrize("area", AREAS)
def test_area_passes_on_the_fixtures(area: str) -> None:
    results = [r for r in _all_results() if r.case.area == area]
    assert results
    failures = [f"{r.case.id}: {r.detail}" for r in results if not r.ok]
    assert not failures, "\n".join(failures)


def test_a_wrong_expectation_fails_with_what_was_found() -> None:
    by_id = {case.id: case for case in CASES}
    wrong = [
        replace(by_id["aapl-fy-2025-09-27"], expect="2026-FY"),
        replace(by_id["nvda-fy-2026-01-25"], expect="2025-FY"),
        replace(by_id["buckle-ex99-net-income"], expect={"contains": ["$45.2 million"]}),
        replace(by_id["aapl-revenue-growth-fy25"], expect={"result": 6.5}),
        # Tesla's FY2021 diluted EPS on the old basis (4.90) is not the 3:1 basis (1.6333).
        replace(by_id["tsla-earnings_per_share_diluted-2021-12-31"], expect=4.9),
        replace(by_id["misspelt-ticker-tsal"], expect={"contains": ["TLSA ("]}),
    ]
    results = asyncio.run(run_cases(wrong, fixtures_dir()))
    assert [r.ok for r in results] == [False] * len(wrong)
    assert "2025-FY" in results[0].detail and "2026-FY" in results[1].detail
    assert "missing '$45.2 million'" in results[2].detail
    assert "got Decimal('1.6333')" in results[4].detail
