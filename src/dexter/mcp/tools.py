"""MCP servers' tools as Dexter tools: `server__tool`, behind the permission gate, output framed.

Nothing a server says about itself is trusted: its read-only hints do not let a call skip the
gate (every tool asks first until a rule such as `dexter permissions allow notes__search` allows
it), and everything it returns is framed as untrusted data, like a fetched web page.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from dexter.mcp.client import McpConnection, McpUnavailable
from dexter.mcp.config import McpServerConfig, tool_name
from dexter.models.types import ToolSpec
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.web.extract import wrap_untrusted

if TYPE_CHECKING:
    import mcp_types

MAX_DESCRIPTION = 1_000
MAX_OUTPUT = 60_000


class McpArgs(BaseModel):
    """Whatever the server's schema asks for; the server validates its own arguments."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpArgs]):
    Args: ClassVar[type[BaseModel]] = McpArgs
    needs_approval: ClassVar[bool] = True
    concurrency_safe: ClassVar[bool] = False
    server: ClassVar[str] = ""
    remote_name: ClassVar[str] = ""
    input_schema: ClassVar[dict[str, Any]] = {}

    def __init__(self, connection: McpConnection) -> None:
        self.connection = connection

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.input_schema)

    async def run(self, args: McpArgs, ctx: ToolContext) -> ToolResult:
        arguments = args.model_dump()
        try:
            result = await self.connection.call(self.remote_name, arguments)
        except McpUnavailable as exc:
            raise ToolFailure(str(exc)) from None
        except Exception as exc:  # the server refused the request (unknown tool, bad arguments)
            raise ToolFailure(
                f"MCP server {self.server!r} refused {self.remote_name}: {exc}"
            ) from None
        text = result_text(result)
        source = f"mcp:{self.server}/{self.remote_name}"
        content = wrap_untrusted(source, text)
        if result.is_error:
            raise ToolFailure(
                f"{self.remote_name} on MCP server {self.server!r} failed:\n{content}"
            )
        return ToolResult(content=content, data=result.structured_content)


def result_text(result: mcp_types.CallToolResult) -> str:
    """Every text block; other content named, not inlined (images, audio, embedded files)."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            inner = getattr(resource, "text", None)
            uri = getattr(resource, "uri", "")
            parts.append(str(inner) if inner is not None else f"[embedded resource {uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {getattr(block, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'unknown'} content omitted]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, indent=2, default=str))
    text = "\n".join(parts).strip() or "(no output)"
    if len(text) > MAX_OUTPUT:
        text = text[:MAX_OUTPUT] + f"\n[… cut at {MAX_OUTPUT:,} characters]"
    return text


def adapt(connection: McpConnection, tool: mcp_types.Tool) -> McpTool:
    server = connection.config.name
    name = tool_name(server, tool.name)
    title = tool.title or (tool.annotations.title if tool.annotations else None)
    about = (tool.description or title or tool.name).strip()
    if len(about) > MAX_DESCRIPTION:
        about = about[:MAX_DESCRIPTION].rstrip() + " …"
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    attrs = {
        "name": name,
        "description": f"[MCP server {server}] {about}",
        "server": server,
        "remote_name": tool.name,
        "input_schema": schema,
    }
    cls = type(f"McpTool_{name}", (McpTool,), attrs)
    instance: McpTool = cls(connection)
    return instance


class McpToolset:
    """Every configured server, connected on first use and closed together."""

    def __init__(self, configs: Sequence[McpServerConfig], *, log_dir: Path | None = None) -> None:
        self.connections = [McpConnection(c, log_dir=log_dir) for c in configs]
        self.errors: dict[str, str] = {}

    async def tools(self) -> list[Tool[Any]]:
        """The tools of every server that answers; a server that does not is left out, and why
        is kept in `errors` (one broken server must not stop a run)."""
        listed = await asyncio.gather(
            *(c.tools() for c in self.connections), return_exceptions=True
        )
        tools: list[Tool[Any]] = []
        seen: set[str] = set()
        for connection, outcome in zip(self.connections, listed, strict=True):
            if isinstance(outcome, BaseException):
                self.errors[connection.config.name] = str(outcome)
                continue
            for remote in outcome:
                adapted = adapt(connection, remote)
                if adapted.name not in seen:
                    seen.add(adapted.name)
                    tools.append(adapted)
        return tools

    async def aclose(self) -> None:
        await asyncio.gather(*(c.aclose() for c in self.connections), return_exceptions=True)
