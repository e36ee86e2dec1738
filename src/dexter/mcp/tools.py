"""MCP servers' tools as Dexter tools: `server__tool`, behind the permission gate, output framed.

Nothing a server says about itself is trusted: its read-only hints do not let a call skip the
gate (every tool asks first until a rule such as `dexter permissions allow notes__search` allows
it), and everything it returns is framed as untrusted data, like a fetched web page.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from dexter.atomicfile import PRIVATE, private_dir, write_text
from dexter.mcp.client import McpConnection, McpUnavailable, Sleep
from dexter.mcp.config import McpServerConfig, tool_name
from dexter.models.types import ToolSpec
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.untrusted import wrap_untrusted

if TYPE_CHECKING:
    import mcp_types

log = logging.getLogger(__name__)

MAX_DESCRIPTION = 1_000
MAX_OUTPUT = 60_000
PROBE_TIMEOUT = 15.0


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
            result = await self.connection.call(
                self.remote_name, arguments, progress=ProgressRelay(ctx.progress)
            )
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


PROGRESS_INTERVAL = 0.25
MAX_PROGRESS_TEXT = 160
# Terminal escape sequences (colours, cursor moves, titles) a server might send in its text.
_TERMINAL_CODE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|.)")


class ProgressRelay:
    """A server's progress notifications, shown in the call's tool row.

    A server's words are untrusted: control characters (terminal escapes, bidi overrides) are
    dropped, known secrets redacted and the text shortened. Repeats are skipped, and a chatty
    server gets at most one line every 0.25 s (the last step, progress = total, always shows).
    """

    def __init__(
        self, report: Callable[[str], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._report = report
        self._clock = clock
        self._last: str | None = None
        self._at: float | None = None

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        text = progress_text(progress, total, message)
        now = self._clock()
        final = total is not None and progress >= total
        recent = self._at is not None and now - self._at < PROGRESS_INTERVAL
        if text == self._last or (recent and not final):
            return
        self._last, self._at = text, now
        self._report(text)


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """`Indexing filings (3/10)`, or `3/10` / `progress 3` when the server sends no message."""
    from dexter.permissions.secrets import redact

    bare = _TERMINAL_CODE.sub("", message or "")
    printable = "".join(ch if ch.isprintable() else " " for ch in bare)
    words = " ".join(redact(printable).split())
    if len(words) > MAX_PROGRESS_TEXT:
        words = words[: MAX_PROGRESS_TEXT - 1].rstrip() + "…"
    count = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    if words:
        return f"{words} ({count})" if total else words
    return count if total else f"progress {count}"


def left_out(config: McpServerConfig, tool: mcp_types.Tool) -> str | None:
    """Why a server's tool is not offered to the model, or None when it is."""
    if tool.name in config.disabled_tools:
        return 'turned off in "disabledTools"'
    execution = tool.execution
    if execution is not None and execution.task_support == "required":
        # A plain call to such a tool always fails; Dexter does not run MCP tasks.
        return (
            'it runs only as an MCP task (execution.taskSupport "required"), which Dexter '
            "does not start"
        )
    return None


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
    schema = server_schema(tool.input_schema or {})
    attrs = {
        "name": name,
        "description": f"[MCP server {server}] {about}",
        "server": server,
        "remote_name": tool.name,
        "input_schema": schema,
        # The connection gives up after the server's own timeout; this outer limit only backs it.
        "timeout": connection.config.timeout + 10,
    }
    cls = type(f"McpTool_{name}", (McpTool,), attrs)
    instance: McpTool = cls(connection)
    return instance


MAX_SCHEMA_DEPTH = 12


def server_schema(raw: dict[str, Any]) -> dict[str, Any]:
    """A server's input schema in the shape providers accept: local `$ref`s inlined (a
    recursive or dangling one becomes an open `{}` rather than looping or failing), titles and
    `$schema` dropped, an object at the root."""
    defs: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        found = raw.get(key)
        if isinstance(found, dict):
            defs.update(found)

    def walk(node: Any, depth: int, seen: frozenset[str]) -> Any:
        if depth > MAX_SCHEMA_DEPTH:
            return {}
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                key = ref.rsplit("/", 1)[-1]
                target = defs.get(key) if ref.startswith(("#/$defs/", "#/definitions/")) else None
                if not isinstance(target, dict) or key in seen:
                    return {k: walk(v, depth + 1, seen) for k, v in node.items() if k != "$ref"}
                merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
                return walk(merged, depth + 1, seen | {key})
            return {
                k: walk(v, depth + 1, seen)
                for k, v in node.items()
                if k not in ("$defs", "definitions", "$schema")
                and not (k == "title" and isinstance(v, str))
            }
        if isinstance(node, list):
            return [walk(item, depth + 1, seen) for item in node]
        return node

    schema = walk(raw, 0, frozenset())
    if not isinstance(schema, dict) or schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    schema.setdefault("properties", {})
    return schema


class McpToolset:
    """Every configured server's tools, known without starting anything.

    Building an agent is synchronous and happens before its event loop runs, so the tool list
    comes from a listing cached under `$DEXTER_HOME/cache/mcp/` (refreshed whenever the server's
    configuration changes, and by `dexter mcp list|test`). A server with no listing yet is
    started once, briefly, to list its tools. The connections the tools call through start on
    their first call, in the run's own event loop.
    """

    def __init__(
        self, configs: Sequence[McpServerConfig], *, home: Path, sleep: Sleep = asyncio.sleep
    ) -> None:
        self.configs = list(configs)
        self.cache_dir = home / "cache" / "mcp"
        self.connections = {
            c.name: McpConnection(c, log_dir=home / "logs", on_listed=self._store, sleep=sleep)
            for c in configs
        }
        self.errors: dict[str, str] = {}
        self._tools: list[Tool[Any]] | None = None

    def tools(self) -> list[Tool[Any]]:
        if self._tools is None:
            self._tools = self._build()
        return list(self._tools)

    def _build(self) -> list[Tool[Any]]:
        listings = {c.name: self._cached(c) for c in self.configs}
        missing = [c for c in self.configs if listings[c.name] is None]
        if missing:
            listings.update(_probe_in_thread(missing, self))
        tools: list[Tool[Any]] = []
        seen: set[str] = set()
        for config in self.configs:
            listed = listings.get(config.name)
            if listed is None:
                continue
            for remote in listed:
                if left_out(config, remote) is not None:
                    continue
                adapted = adapt(self.connections[config.name], remote)
                if adapted.name not in seen:
                    seen.add(adapted.name)
                    tools.append(adapted)
        return tools

    def _cache_file(self, config: McpServerConfig) -> Path:
        return self.cache_dir / f"{config.name}.json"

    def _cached(self, config: McpServerConfig) -> list[mcp_types.Tool] | None:
        import mcp_types

        try:
            raw = json.loads(self._cache_file(config).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(raw, dict) or raw.get("fingerprint") != fingerprint(config):
            return None
        try:
            return [mcp_types.Tool.model_validate(t) for t in raw.get("tools", [])]
        except ValueError:
            return None

    def _store(self, config: McpServerConfig, tools: Sequence[mcp_types.Tool]) -> None:
        payload = {
            "fingerprint": fingerprint(config),
            "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
        }
        try:
            private_dir(self.cache_dir)
            write_text(self._cache_file(config), json.dumps(payload), mode=PRIVATE)
        except OSError:
            pass  # a read-only home only means listing again next time

    async def aclose(self) -> None:
        await asyncio.gather(
            *(c.aclose() for c in self.connections.values()), return_exceptions=True
        )


def fingerprint(config: McpServerConfig) -> str:
    """Changes whenever the server's configuration does (secrets only as part of a hash)."""
    material = json.dumps(
        [
            config.command,
            config.args,
            sorted(config.env.items()),
            config.cwd,
            config.url,
            sorted(config.headers.items()),
            config.transport,
        ],
        default=str,
    )
    return hashlib.sha256(material.encode()).hexdigest()[:32]  # fmt: skip


def _probe_in_thread(
    configs: Sequence[McpServerConfig], toolset: McpToolset
) -> dict[str, list[mcp_types.Tool] | None]:
    """Start each server, list its tools, stop it, in a thread with its own event loop (this
    may be called from inside a running loop)."""

    async def probe_all() -> dict[str, list[mcp_types.Tool] | None]:
        async def one(config: McpServerConfig) -> list[mcp_types.Tool] | None:
            connection = McpConnection(
                config,
                log_dir=toolset.connections[config.name].log_dir,
                on_listed=toolset._store,
                connect_timeout=PROBE_TIMEOUT,
            )
            try:
                return await connection.tools()
            except McpUnavailable as exc:
                toolset.errors[config.name] = str(exc)
                log.info("MCP server %s left out: %s", config.name, exc)
                return None
            finally:
                await connection.aclose()

        results = await asyncio.gather(*(one(c) for c in configs))
        return {c.name: r for c, r in zip(configs, results, strict=True)}

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-probe") as pool:
        return pool.submit(asyncio.run, probe_all()).result()
