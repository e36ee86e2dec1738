"""Waiting for a `dexter mcp serve --http` process to answer, by what it says, not by time."""

from __future__ import annotations

import asyncio

from dexter.cli.mcp_command import READY


async def until_ready(stderr: asyncio.StreamReader, within: float = 60.0) -> None:
    """Read the server's stderr up to its ready line (the lines before it are notes)."""
    async with asyncio.timeout(within):
        while True:
            line = (await stderr.readline()).decode()
            if not line:
                raise AssertionError("the MCP server exited before it was ready")
            if line.strip() == READY:
                return
