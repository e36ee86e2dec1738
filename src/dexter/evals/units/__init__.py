"""The judge-free finance unit set: cases as data (one YAML file per area), one runner."""

from dexter.evals.units.runner import (
    AREAS_DIR,
    Case,
    CaseResult,
    FixturesMissing,
    find_fixtures,
    load_cases,
    run_cases,
)

__all__ = [
    "AREAS_DIR",
    "Case",
    "CaseResult",
    "FixturesMissing",
    "find_fixtures",
    "load_cases",
    "run_cases",
]
