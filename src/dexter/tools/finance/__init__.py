"""Financial tools."""

from dexter.tools.finance.calculate import CalculateArgs, CalculateTool

__all__ = ["CalculateArgs", "CalculateTool"]
