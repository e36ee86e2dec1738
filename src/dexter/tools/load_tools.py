"""The `load_tools` tool: offer tools held on request for the rest of the run.

A registry with tools on request (see `dexter.tools.registry`) binds one of these. The system
prompt names those tools with a line each; loading one sends its full description and parameters
from the model's next step on, for the rest of that run only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dexter.principal import ToolScope
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult

if TYPE_CHECKING:
    from dexter.tools.registry import ToolRegistry

LOAD_TOOLS = "load_tools"


class LoadToolsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    names: list[str] = Field(min_length=1, max_length=20)


class LoadTools(Tool[LoadToolsArgs]):
    name: ClassVar[str] = LOAD_TOOLS
    description: ClassVar[str] = (
        "Load tools listed under 'More tools' in the system prompt; you can call them from your "
        "next step on."
    )
    Args: ClassVar[type[BaseModel]] = LoadToolsArgs
    concurrency_safe: ClassVar[bool] = True
    repeatable: ClassVar[bool] = True
    # It only offers what this registry already binds for the run's principal.
    scope: ClassVar[ToolScope] = "public"

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry

    def resources(self, args: LoadToolsArgs) -> Resources:
        return Resources()

    async def run(self, args: LoadToolsArgs, ctx: ToolContext) -> ToolResult:
        names = [n.strip().strip("`") for n in args.names if n.strip()]
        on_request = self.registry.on_request
        unknown = [n for n in names if n not in on_request and n not in self.registry]
        if unknown and len(unknown) == len(names):
            loadable = ", ".join(sorted(on_request))
            raise ToolFailure(f"no tool named {', '.join(unknown)}. Tools to load: {loadable}.")
        self.registry.load(ctx.run_id, names)
        ready = [n for n in names if n in self.registry]
        text = f"Loaded: {', '.join(ready)}. Call them from your next step."
        if unknown:
            text += f" Unknown, not loaded: {', '.join(unknown)}."
        return ToolResult(content=text, data={"loaded": ready, "unknown": unknown})

    async def run_finished(self, run_id: str) -> None:
        self.registry.release(run_id)


__all__ = ["LOAD_TOOLS", "LoadTools", "LoadToolsArgs"]
