"""The totals line under `dexter usage` and `dexter sessions show` reads as English."""

from __future__ import annotations

from dexter.cli.usage_command import totals_line
from dexter.store.ledger import UsageTotals


def test_one_call_of_each_is_singular() -> None:
    line = totals_line(UsageTotals(calls=1, tool_calls=1)).plain
    assert "1 model call ·" in line and line.endswith("· 1 tool call")


def test_several_tool_calls_are_plural() -> None:
    line = totals_line(UsageTotals(calls=2, tool_calls=3, failed_tool_calls=1)).plain
    assert "2 model calls" in line and line.endswith("3 tool calls, 1 failed")
