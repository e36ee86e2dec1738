"""The test run's closing summary says why tests were skipped, each reason once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.conftest import pytest_terminal_summary

FIXTURES = "SEC fixtures not found at ../shared/fixtures; set DEXTER_FIXTURES or run …"


@dataclass
class _Report:
    longrepr: Any


@dataclass
class _Reporter:
    stats: dict[str, list[_Report]]
    lines: list[str] = field(default_factory=list)

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(f"--- {title} ---")

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_skip_reasons_are_grouped_and_counted() -> None:
    skipped = [_Report(("tests/test_a.py", 3, f"Skipped: {FIXTURES}")) for _ in range(217)]
    skipped.append(_Report(("tests/test_browser.py", 24, "Skipped: no browser here.")))
    reporter = _Reporter({"skipped": skipped, "passed": []})
    pytest_terminal_summary(reporter)
    assert reporter.lines == [
        "--- why tests were skipped ---",
        f"  217 {FIXTURES}",
        "    1 no browser here.",
    ]


def test_nothing_is_added_when_nothing_was_skipped() -> None:
    reporter = _Reporter({"passed": []})
    pytest_terminal_summary(reporter)
    assert reporter.lines == []
