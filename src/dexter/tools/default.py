"""The tools a run binds, chosen from settings: calculate always, finance data when configured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from dexter.config import ConfigError, Settings
from dexter.tools.base import Tool
from dexter.tools.finance.calculate import CalculateTool
from dexter.tools.read_tool_result import ReadToolResult
from dexter.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from dexter.data.router import DataRouter
    from dexter.tools.finance.routed import ModelFactory

FinanceMode = Literal["routed", "direct"]


def finance_mode(settings: Settings) -> FinanceMode:
    """`routed` (default): four meta-tools that plan data calls with a fast model. `direct`: every
    data call bound as its own tool, for strong models and for comparison."""
    from dexter.settings_model import TopLevel

    raw = settings.env.get("DEXTER_FINANCE_TOOLS")
    if raw is None or not raw.strip():
        return settings.section(TopLevel).finance_tools or "routed"
    value = raw.strip().lower()
    if value not in ("routed", "direct"):
        raise ConfigError(f"DEXTER_FINANCE_TOOLS must be 'routed' or 'direct', not {raw!r}.")
    return "direct" if value == "direct" else "routed"


def default_registry(
    settings: Settings,
    *,
    data_router: DataRouter | None = None,
    router_model: ModelFactory | None = None,
) -> ToolRegistry:
    tools: list[Tool[Any]] = [CalculateTool(), ReadToolResult()]
    if data_router is not None:
        from dexter.tools.finance.datacalls import available_data_calls

        calls = available_data_calls(data_router)
        if finance_mode(settings) == "direct" or router_model is None:
            tools += calls
        else:
            from dexter.tools.finance.routed import routed_tools

            tools += routed_tools(calls, router_model)
    return ToolRegistry(tools)
