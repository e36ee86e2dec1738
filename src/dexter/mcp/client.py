"""One configured MCP server, kept connected: start on first use, list tools, call, restart
after a crash with backoff, close on exit.

The SDK's `Client` must be entered and left in one task, so a small owner task holds it open
while other tasks call through it. A crash shows up as a failed call: the connection is dropped
and the next call starts the server again, waiting longer after each crash in a row so a server
that dies on start cannot spin.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from dexter.mcp.config import McpServerConfig

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client
    from mcp.shared.dispatcher import ProgressFnT

Sleep = Callable[[float], Awaitable[None]]
CONNECT_TIMEOUT = 20.0
MAX_BACKOFF = 30.0
MAX_TOOLS = 200


class McpUnavailable(Exception):
    """The server could not be reached or started; the message says what to check."""


class McpTimeout(McpUnavailable):
    """The server did not answer within its time limit (the message names server and limit)."""


def backoff_delay(crashes: int) -> float:
    """No wait for the first restart, then 0.5 s doubling up to 30 s."""
    if crashes <= 1:
        return 0.0
    return float(min(MAX_BACKOFF, 0.5 * 2 ** (crashes - 2)))


class McpConnection:
    def __init__(
        self,
        config: McpServerConfig,
        *,
        log_dir: Path | None = None,
        sleep: Sleep = asyncio.sleep,
        connect_timeout: float = CONNECT_TIMEOUT,
        on_listed: Callable[[McpServerConfig, list[mcp_types.Tool]], None] | None = None,
    ) -> None:
        self.config = config
        self.log_dir = log_dir
        self._on_listed = on_listed
        self._sleep = sleep
        self._connect_timeout = connect_timeout
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._tools: list[mcp_types.Tool] | None = None
        self.crashes = 0
        self.starts = 0
        self.last_error: str | None = None

    @property
    def connected(self) -> bool:
        return self._client is not None

    async def tools(self) -> list[mcp_types.Tool]:
        """The server's tools (listed once per connection)."""
        client = await self._connected()
        if self._tools is None:
            try:
                self._tools = await self._list(client)
            except Exception as exc:
                if _is_timeout(exc):
                    raise McpTimeout(self._timed_out("listing tools")) from None
                self.last_error = _describe(exc)
                await self._drop()
                raise McpUnavailable(self._unavailable()) from None
            if self._on_listed is not None:
                self._on_listed(self.config, self._tools)
        return self._tools

    async def call(
        self, tool: str, arguments: dict[str, Any], progress: ProgressFnT | None = None
    ) -> mcp_types.CallToolResult:
        """Run `tool`; `progress` hears each progress notification the server sends for it."""
        client = await self._connected()
        try:
            result = await client.call_tool(
                tool,
                arguments,
                read_timeout_seconds=self.config.timeout,
                progress_callback=progress,
            )
        except Exception as exc:
            # The SDK reports its own time limit as an MCP error (REQUEST_TIMEOUT).
            if _is_timeout(exc):
                raise McpTimeout(self._timed_out(tool)) from None
            if _is_tool_error(exc):
                raise
            # The transport broke: the process died or the HTTP server went away.
            self.crashes += 1
            self.last_error = _describe(exc)
            await self._drop()
            raise McpUnavailable(
                f"MCP server {self.config.name!r} stopped while running {tool} "
                f"({self.last_error}); it will be restarted on the next call."
            ) from None
        self.crashes = 0
        return result

    async def aclose(self) -> None:
        await self._drop()

    async def _connected(self) -> Client:
        async with self._lock:
            if self._client is not None:
                return self._client
            delay = backoff_delay(self.crashes)
            if delay:
                await self._sleep(delay)
            try:
                self._client = await asyncio.wait_for(self._start(), self._connect_timeout)
            except TimeoutError:
                await self._drop()
                self.last_error = (
                    f"it did not answer within {self._connect_timeout:g} s (timed out)"
                )
                raise McpTimeout(self._unavailable()) from None
            except McpUnavailable:
                raise
            except Exception as exc:
                await self._drop()
                self.last_error = _describe(exc)
                raise McpUnavailable(self._unavailable()) from None
            self.starts += 1
            return self._client

    def _timed_out(self, doing: str) -> str:
        return (
            f"MCP server {self.config.name!r} timed out: {doing} did not finish within "
            f'{self.config.timeout:g} s (its "timeout" setting; raise it if that is too short).'
        )

    def problem(self) -> str:
        """What went wrong connecting, without advice (`dexter mcp test` gives its own)."""
        return (
            f"MCP server {self.config.name!r} ({self.config.target}) is not available: "
            f"{self.last_error}."
        )

    @property
    def stderr_log(self) -> Path | None:
        """Where a stdio server's error output is written (appended, start after start)."""
        if self.config.command and self.log_dir is not None:
            return self.log_dir / f"mcp-{self.config.name}.log"
        return None

    def _unavailable(self) -> str:
        hint = (
            "Check the command runs on its own"
            if self.config.command
            else "Check the server is running at that address"
        )
        return f"{self.problem()} {hint}; `dexter mcp test {self.config.name}` shows details."

    async def _start(self) -> Client:
        from mcp import Client

        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Client] = loop.create_future()
        stop = asyncio.Event()
        self._stop = stop
        errlog = self._errlog()
        target = self._target(errlog)

        async def own() -> None:
            try:
                async with Client(target, read_timeout_seconds=self.config.timeout) as client:
                    if not ready.done():
                        ready.set_result(client)
                    await stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(
                        exc
                        if isinstance(exc, Exception)
                        else McpUnavailable("the connection was cancelled")
                    )
                if isinstance(exc, asyncio.CancelledError):
                    raise
            finally:
                errlog.close()

        self._owner = asyncio.create_task(own(), name=f"mcp:{self.config.name}")
        return await ready

    def _target(self, errlog: TextIO) -> Any:
        config = self.config
        if config.command:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
            )
            return stdio_client(params, errlog=errlog)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert config.url is not None
        if config.sse:
            from mcp.client.sse import sse_client

            return sse_client(config.url, headers=dict(config.headers) or None)
        if not config.headers:
            return config.url
        return streamable_http_client(
            config.url, http_client=create_mcp_http_client(headers=dict(config.headers))
        )

    def _errlog(self) -> TextIO:
        """A stdio server's stderr goes to a log file, never over the terminal UI."""
        log = self.stderr_log
        if log is not None:
            with contextlib.suppress(OSError):
                from dexter.atomicfile import open_private, private_dir

                private_dir(log.parent)
                return open_private(log)
        return open(os.devnull, "w", encoding="utf-8")

    async def _list(self, client: Client) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        while len(tools) < MAX_TOOLS:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools[:MAX_TOOLS]

    async def _drop(self) -> None:
        owner, self._owner = self._owner, None
        if self._stop is not None:
            self._stop.set()
        self._client = None
        self._tools = None
        if owner is not None and owner is not asyncio.current_task():
            try:
                await asyncio.wait_for(asyncio.shield(owner), 10)
            except BaseException:  # a crashed transport may raise anything on the way out
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await owner


def _is_timeout(exc: BaseException) -> bool:
    from mcp import MCPError
    from mcp_types import REQUEST_TIMEOUT

    return isinstance(exc, TimeoutError) or (
        isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT
    )


def _is_tool_error(exc: Exception) -> bool:
    """An error the server answered with (bad arguments, unknown tool): the link is fine."""
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    return isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    if isinstance(exc, FileNotFoundError):
        return f"command not found ({exc.filename or exc})"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
