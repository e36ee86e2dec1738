"""Handlers of `dexter eval …` (parsers in eval_command.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def run_units(args: argparse.Namespace) -> int:
    from dexter.evals.units import find_fixtures, load_cases, run_cases
    from dexter.evals.units.runner import CaseResult

    fixtures = find_fixtures(args.fixtures)
    cases = load_cases(areas=args.area)
    if not cases:
        known = sorted({c.area for c in load_cases()})
        print(
            f"dexter: no cases for area {', '.join(args.area)}; areas: {', '.join(known)}.",
            file=sys.stderr,
        )
        return EXIT_USAGE

    def show(result: CaseResult) -> None:
        if args.verbose and not args.json:
            mark = "ok  " if result.ok else "FAIL"
            print(f"{mark} {result.case.area}/{result.case.id}", flush=True)

    results = asyncio.run(run_cases(cases, fixtures, on_result=show))
    total, passed = Counter[str](), Counter[str]()
    for result in results:
        total[result.case.area] += 1
        passed[result.case.area] += result.ok
    failures = [r for r in results if not r.ok]
    if args.json:
        print(
            json.dumps(
                {
                    "fixtures": str(fixtures),
                    "areas": {a: {"cases": total[a], "passed": passed[a]} for a in sorted(total)},
                    "cases": len(results),
                    "passed": len(results) - len(failures),
                    "failures": [
                        {
                            "area": r.case.area,
                            "id": r.case.id,
                            "source": r.case.source,
                            "expected": r.case.expect,
                            "detail": r.detail,
                        }
                        for r in failures
                    ],
                },
                default=str,
                indent=2,
            )
        )
        return EXIT_FAILED if failures else EXIT_OK
    width = max(len(a) for a in total)
    for area in sorted(total):
        print(f"{area:<{width}}  {passed[area]:>3}/{total[area]:<3} passed")
    for result in failures:
        print(f"FAIL {result.case.area}/{result.case.id} ({result.case.source}): {result.detail}")
    summary = f"{len(results) - len(failures)}/{len(results)} cases passed in {len(total)} areas"
    print(summary if not failures else f"{summary}; {len(failures)} failed")
    return EXIT_FAILED if failures else EXIT_OK
