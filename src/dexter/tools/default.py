"""The tools a normal run binds."""

from __future__ import annotations

from dexter.config import Settings
from dexter.tools.finance.calculate import CalculateTool
from dexter.tools.registry import ToolRegistry


def default_registry(settings: Settings) -> ToolRegistry:
    """Tools for this configuration; data tools read their keys and base URLs from `settings`."""
    return ToolRegistry([CalculateTool()])
