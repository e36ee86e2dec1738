"""The `read_tool_result` tool: page through or search a tool result that was stored on disk.

Large results and microcompacted ones live in `<home>/tool-results/<run_id>/<key>.txt` (see
`dexter.agent.context.results`). The run id is not part of ToolContext, so the tool takes an
optional `run_dir` callable: when it returns a directory, only that run is read (exact, and safe
with parallel runs reusing ids like `call_0`). Without it, or when it returns None, every run
under `ctx.home / "tool-results"` is searched, newest file first.

Output sizes stay under 40,000 characters plus a header, so a read never trips the 50,000-character
cap that would persist it again.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dexter.principal import ToolScope
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.results import ResultStore, safe_key

MAX_READ_CHARS = 40_000
MAX_MATCHES = 20
CONTEXT_LINES = 2
# A "line" in a minified JSON blob can be the whole result; excerpts are clipped around the hit.
MAX_EXCERPT_CHARS = 1_200
LISTED_IDS = 20


class ReadToolResultArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1)
    offset: int = Field(0, ge=0, description="Character to start at (a search starts there too).")
    length: int = Field(10_000, ge=1, le=MAX_READ_CHARS)
    search: str | None = Field(
        None, min_length=1, description="Text to find: returns matching lines and their offsets."
    )


class ReadToolResult(Tool[ReadToolResultArgs]):
    name: ClassVar[str] = "read_tool_result"
    scope: ClassVar[ToolScope] = "public"
    description: ClassVar[str] = (
        "Read a tool result that was saved (too large) or cleared from the context: give the "
        "call_id its notice names; page with offset/length or find lines with search. Use this "
        "instead of calling the tool again."
    )
    Args: ClassVar[type[BaseModel]] = ReadToolResultArgs
    concurrency_safe: ClassVar[bool] = True
    needs_approval: ClassVar[bool] = False
    repeatable: ClassVar[bool] = True

    def __init__(self, run_dir: Callable[[], Path | None] | None = None) -> None:
        # Normally the run's store comes with each call (ctx.results), so reads never cross
        # into another run: parallel runs and sub-agents reuse ids like "call_0".
        self._run_dir = run_dir

    def resources(self, args: ReadToolResultArgs) -> Resources:
        return Resources.of(reads=["results"])

    async def run(self, args: ReadToolResultArgs, ctx: ToolContext) -> ToolResult:
        store, key = self._locate(_normalise(args.call_id), ctx)
        text = store.load(key)
        info = store.info(key)
        what = f'call_id="{key}"'
        if info.get("tool"):
            what += f" ({info['tool']})"
        if args.search is not None:
            content = _search(text, args.search, args.offset, args.length, key, what)
        else:
            content = _slice(text, args.offset, args.length, what)
        return ToolResult(content=content, data={"call_id": key, "chars": len(text)})

    def _stores(self, ctx: ToolContext) -> list[ResultStore]:
        directory = self._run_dir() if self._run_dir is not None else None
        if directory is not None:
            return [ResultStore.at(directory)]
        if ctx.results is not None:
            return [ctx.results]
        root = ctx.home / "tool-results"
        runs = [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []
        runs.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
        return [ResultStore.at(p) for p in runs]

    def _locate(self, key: str, ctx: ToolContext) -> tuple[ResultStore, str]:
        stores = self._stores(ctx)
        found = [s for s in stores if s.saved(key)]
        if found:
            newest = max(found, key=lambda s: s.path(key).stat().st_mtime_ns)
            return newest, key
        listed: list[str] = []
        for store in stores:
            listed += [k for k in store.stored_ids(LISTED_IDS) if k not in listed]
            if len(listed) >= LISTED_IDS:
                break
        known = ", ".join(listed[:LISTED_IDS]) if listed else "none"
        raise ToolFailure(
            f"No stored result for call_id {key!r}. Stored call_ids (most recent first): {known}."
        )


def _normalise(call_id: str) -> str:
    # Models copy the key with the punctuation around it in a notice ("call_7," from
    # "[Cleared call_7, 1,204 chars]"), or pass a stored file's name instead of the id.
    raw = call_id.strip().strip("\"'`,;:[]")
    if raw.endswith(".txt"):
        raw = Path(raw).stem
    return safe_key(raw)


def _slice(text: str, offset: int, length: int, what: str) -> str:
    total = len(text)
    if offset > total:
        raise ToolFailure(f"offset {offset} is past the end: the result has {total} characters.")
    end = min(total, offset + length)
    more = f"next offset {end}" if end < total else "end of result"
    return f"[{what}: characters {offset}–{end} of {total}; {more}]\n{text[offset:end]}"


def _search(text: str, term: str, offset: int, budget: int, key: str, what: str) -> str:
    total = len(text)
    pattern = re.compile(re.escape(term), re.IGNORECASE)
    matches = list(pattern.finditer(text, offset))
    if not matches:
        return (
            f'[{what}: no matches for "{term}" in {total} characters from offset {offset}. '
            f"Try another term, or page with offset/length.]"
        )
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def line_bounds(position: int) -> tuple[int, int]:
        line = bisect.bisect_right(starts, position) - 1
        first = max(0, line - CONTEXT_LINES)
        last = line + CONTEXT_LINES + 1
        return starts[first], starts[last] if last < len(starts) else total

    excerpts: list[tuple[int, int]] = []
    used = shown = 0
    next_offset: int | None = None
    for match in matches:
        start, end = line_bounds(match.start())
        half = (MAX_EXCERPT_CHARS - len(match.group())) // 2
        start = max(start, match.start() - max(half, 0))
        end = min(end, max(match.end() + max(half, 0), match.end()))
        if excerpts and start <= excerpts[-1][1]:
            grown = max(end, excerpts[-1][1]) - excerpts[-1][1]
            if shown >= MAX_MATCHES or (used + grown > budget and shown):
                next_offset = match.start()
                break
            excerpts[-1] = (excerpts[-1][0], excerpts[-1][1] + grown)
            used += grown
        else:
            if shown >= MAX_MATCHES or (used + end - start > budget and shown):
                next_offset = match.start()
                break
            end = min(end, start + budget)
            excerpts.append((start, end))
            used += end - start
        shown += 1

    found = f"{len(matches)} match" + ("" if len(matches) == 1 else "es")
    lines = [
        f'[{what}: {found} for "{term}" in {total} characters from offset '
        f"{offset}; showing {shown} in {len(excerpts)} excerpts, exact text by character range]"
    ]
    for start, end in excerpts:
        lines.append(f"--- characters {start}–{end} ---\n{text[start:end]}")
    if next_offset is not None:
        lines.append(
            f"[More matches from offset {next_offset}: "
            f'read_tool_result(call_id="{key}", search="{term}", offset={next_offset})]'
        )
    return "\n".join(lines)


__all__ = ["MAX_READ_CHARS", "ReadToolResult", "ReadToolResultArgs"]
