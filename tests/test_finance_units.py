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


def test_the_set_is_large_and_every_case_names_a_real_source() -> None:
    root = fixtures_dir()
    assert len(CASES) >= 200
    assert len({(c.area, c.id) for c in CASES}) == len(CASES), "case ids are unique per area"
    per_area = Counter(case.area for case in CASES)
    assert {
        "resolution",
        "fiscal_periods",
        "derived_quarters",
        "restatements",
        "calculate",
        "filing_items",
        "documents",
        "citations",
        "as_of",
    } <= set(per_area)
    for case in CASES:
        assert case.expect is not None, case.id
        if case.source != "method":
            assert (root / case.source).is_file(), f"{case.area}/{case.id}: {case.source}"


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
    ]
    results = asyncio.run(run_cases(wrong, fixtures_dir()))
    assert [r.ok for r in results] == [False] * 4
    assert "2025-FY" in results[0].detail and "2026-FY" in results[1].detail
    assert "missing '$45.2 million'" in results[2].detail
