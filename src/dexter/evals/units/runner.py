"""Load the unit cases and check each one against Dexter's own data and tool code.

A case is `{id, kind, source, args, expect, note?}`: `source` is the fixture file the expected
value was read from (relative to the fixtures root), `kind` names the check below. No model, no
network: SEC data comes from the recorded mirror through the real provider.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from dexter.config import ConfigError

AREAS_DIR = Path(__file__).parent
_REPO_ROOT = Path(__file__).resolve().parents[4]


class FixturesMissing(ConfigError):
    """The recorded fixtures are not where we looked."""


@dataclass(frozen=True, slots=True)
class Case:
    area: str
    id: str
    kind: str
    source: str
    args: Mapping[str, Any]
    expect: Any
    note: str | None = None


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: Case
    ok: bool
    actual: Any = None
    error: str | None = None

    @property
    def detail(self) -> str:
        if self.error:
            return self.error
        return f"expected {self.case.expect!r}, got {self.actual!r}"


def find_fixtures(explicit: Path | None = None) -> Path:
    """`explicit`, else DEXTER_FIXTURES, else `../shared/fixtures` next to the repository."""
    configured = os.environ.get("DEXTER_FIXTURES")
    candidates = [explicit] if explicit else []
    if not explicit and configured:
        candidates.append(Path(configured))
    if not candidates:
        candidates = [
            _REPO_ROOT.parent / "shared" / "fixtures",
            Path.cwd().parent / "shared" / "fixtures",
        ]
    for candidate in candidates:
        if (candidate / "sec-mirror").is_dir():
            return candidate
    raise FixturesMissing(
        f"The recorded fixtures were not found at {candidates[0]}. Pass --fixtures DIR or set "
        "DEXTER_FIXTURES, or run `uv run python scripts/fetch_fixtures.py` to download them."
    )


# libyaml's loader reads the thousand-odd cases ten times faster than the pure-Python one.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_cases(directory: Path = AREAS_DIR, areas: Sequence[str] = ()) -> list[Case]:
    cases: list[Case] = []
    for path in sorted(directory.glob("*.yaml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
        area = str(data.get("area") or path.stem)
        if areas and area not in areas:
            continue
        for raw in data.get("cases") or []:
            cases.append(
                Case(
                    area=area,
                    id=str(raw["id"]),
                    kind=str(raw["kind"]),
                    source=str(raw["source"]),
                    args=dict(raw.get("args") or {}),
                    expect=raw.get("expect"),
                    note=raw.get("note"),
                )
            )
    return cases


def same(expected: Any, actual: Any) -> bool:
    """Numbers compare by value (7.46 == Decimal('7.46')); mappings and lists element-wise."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual if isinstance(expected, bool) else False
    if isinstance(expected, int | float | Decimal) and isinstance(actual, int | float | Decimal):
        return Decimal(str(expected)) == Decimal(str(actual))
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return all(k in actual and same(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            same(e, a) for e, a in zip(expected, actual, strict=True)
        )
    return bool(expected == actual)


async def run_cases(
    cases: Sequence[Case],
    fixtures: Path,
    *,
    on_result: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    from dexter.evals.units.checks import Checker

    results: list[CaseResult] = []
    with tempfile.TemporaryDirectory(prefix="dexter-units-") as cache:
        checker = Checker(fixtures, Path(cache))
        try:
            for case in cases:
                result = await checker.check(case)
                results.append(result)
                if on_result is not None:
                    on_result(result)
        finally:
            await checker.aclose()
    return results
