"""The workspace tools: `workspace_map`, `find_symbol` and `related`.

They read only the folders the run's principal may see (the operator's working directory, or a
principal's granted folders), through the incremental index under DEXTER_HOME, so the model gets
an outline of a research folder, where a name is defined and used, and one hop of a file's
neighbours, without reading every file. Offered on request (`load_tools`): most questions
never need them, and each schema costs its characters on every request.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolResult

if TYPE_CHECKING:
    from dexter.workspace.service import Workspace
    from dexter.workspace.stale import FilingSource
    from dexter.workspace.view import Snapshot

# Staleness asks SEC for each ticker's filings: past this, the map is returned without it.
STALE_TIMEOUT = 20.0
MAX_STALE_LINES = 8
MAX_HITS = 60
MAX_NEIGHBOURS = 20
_OPEN: dict[tuple[Path, Path], Workspace] = {}
_OPEN_LOCK = threading.Lock()


class WorkspaceAccess:
    """The roots a run may see and their indexes, opened on first use and shared by the three
    tools of one registry."""

    def __init__(
        self, roots: Sequence[Path], home: Path, filings: FilingSource | None = None
    ) -> None:
        self.roots = [r.resolve() for r in roots]
        self.home = home
        self.filings = filings

    def workspace(self, root: Path) -> Workspace:
        # One per folder and home for the whole process: every agent a gateway builds for the
        # same granted folder shares its index connection and its snapshot.
        from dexter.workspace.service import Workspace

        key = (root, self.home.resolve())
        with _OPEN_LOCK:
            found = _OPEN.get(key)
            if found is None:
                found = _OPEN[key] = Workspace(root, self.home)
            return found

    async def snapshots(self, ctx: ToolContext) -> list[tuple[Path, Snapshot]]:
        """Each visible root's snapshot, its index refreshed first (only changed files read)."""
        from dexter.workspace.service import too_wide

        loop = asyncio.get_running_loop()

        def progress(done: int, total: int) -> None:
            # Called on the indexing thread; the run's events belong to the loop.
            loop.call_soon_threadsafe(ctx.progress, f"indexing the workspace: {done}/{total}")

        found = []
        wide: list[str] = []
        for root in self.roots:
            if not root.is_dir():
                continue
            reason = too_wide(root)
            if reason is not None:
                wide.append(f"{root} is {reason}")
                continue
            try:
                workspace = self.workspace(root)
                found.append((root, await asyncio.to_thread(workspace.refresh, progress)))
            except (OSError, sqlite3.Error) as error:
                raise ToolFailure(
                    f"the workspace index under {self.home / 'workspace'} could not be "
                    f"updated: {error}. Read files with read_file instead."
                ) from None
        if not found and wide:
            raise ToolFailure(
                f"{'; '.join(wide)}: too wide to map. Dexter maps the folder it runs in; ask "
                "the user to start it in a project folder, or read files with read_file."
            )
        if not found:
            raise ToolFailure("no workspace folder is available to this conversation")
        return found

    def label(self, root: Path, path: str) -> str:
        """A path as the model should write it back: relative, prefixed with the root's name
        only when several roots are visible."""
        return path if len(self.roots) == 1 else f"{root.name}/{path}"

    def locate(self, text: str, snapshots: list[tuple[Path, Snapshot]]) -> tuple[Path, str]:
        clean = text.strip().strip("`").removeprefix("@")
        for root, snapshot in snapshots:
            candidate = Path(clean)
            relative = clean
            if candidate.is_absolute():
                try:
                    relative = candidate.resolve().relative_to(root).as_posix()
                except ValueError:
                    continue
            elif len(self.roots) > 1 and clean.startswith(root.name + "/"):
                relative = clean[len(root.name) + 1 :]
            found = snapshot.resolve(relative)
            if found is not None:
                return root, found
        raise ToolFailure(
            f"no indexed file matches {text!r}; give a path relative to the workspace "
            "(see workspace_map). Ignored, binary and secret files are not indexed."
        )


class WorkspaceMapArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    focus: str = Field(
        "",
        description="The user's question, or the files, functions, tickers and accession "
        "numbers it names: these rank first.",
    )
    budget: int = Field(2000, ge=200, le=8000, description="Tokens the outline may use.")
    stale: bool = Field(
        True, description="Also check models and memos against their tickers' latest 10-K/10-Q."
    )


class WorkspaceMapTool(Tool[WorkspaceMapArgs]):
    name: ClassVar[str] = "workspace_map"
    description: ClassVar[str] = (
        "A ranked outline of the local research folder (code, notebooks, Excel models, memos, "
        "data files) that fits a token budget: each file's functions, named ranges, input "
        "cells, periods, tickers and cited filings, the files the focus names first, then "
        "what they use and what uses them. Says which models or memos are stale (older than "
        "their ticker's latest 10-K/10-Q). Use before reading files one by one."
    )
    brief: ClassVar[str] = "ranked outline of the local files"
    Args: ClassVar[type[BaseModel]] = WorkspaceMapArgs
    concurrency_safe: ClassVar[bool] = True
    repeatable: ClassVar[bool] = True

    def __init__(self, access: WorkspaceAccess) -> None:
        self.access = access

    async def run(self, args: WorkspaceMapArgs, ctx: ToolContext) -> ToolResult:
        snapshots = await self.access.snapshots(ctx)
        share = max(200, args.budget // len(snapshots))
        parts: list[str] = []
        shown: list[str] = []
        for root, snapshot in snapshots:
            result = await asyncio.to_thread(snapshot.render_map, args.focus, share)
            parts.append(result.text)
            shown += [self.access.label(root, p) for p in result.shown]
        stale: list[str] = []
        if args.stale and self.access.filings is not None:
            stale = await self._stale(snapshots)
        text = "\n\n".join(parts)
        if stale:
            text += "\n\nStale:\n" + "\n".join(f"- {line}" for line in stale)
        return ToolResult(content=text, data={"files": shown, "stale": stale})

    async def _stale(self, snapshots: list[tuple[Path, Snapshot]]) -> list[str]:
        from dexter.workspace.stale import find_stale

        assert self.access.filings is not None
        lines: list[str] = []
        try:
            async with asyncio.timeout(STALE_TIMEOUT):
                for root, snapshot in snapshots:
                    report = await find_stale(snapshot, self.access.filings)
                    lines += [
                        s.describe().replace(s.path, self.access.label(root, s.path), 1)
                        for s in report.stale
                    ]
                    lines += [f"(not checked: {note})" for note in report.notes]
        except TimeoutError:
            lines.append("(staleness check stopped: SEC filings took too long)")
        if len(lines) > MAX_STALE_LINES:
            lines = [*lines[:MAX_STALE_LINES], f"… and {len(lines) - MAX_STALE_LINES} more"]
        return lines


class FindSymbolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1,
        max_length=200,
        description="A function or class, named range, sheet, column, ticker or accession "
        "number (0000320193-24-000123).",
    )


class FindSymbolTool(Tool[FindSymbolArgs]):
    name: ClassVar[str] = "find_symbol"
    description: ClassVar[str] = (
        "Where a name is defined and where it is used across the local folder's code, "
        "notebooks, Excel workbooks and memos: a function or class, a named range, a ticker, "
        "an SEC accession number. Returns file:line for each."
    )
    brief: ClassVar[str] = "where a name, ticker or accession is defined and used"
    Args: ClassVar[type[BaseModel]] = FindSymbolArgs
    concurrency_safe: ClassVar[bool] = True
    repeatable: ClassVar[bool] = True

    def __init__(self, access: WorkspaceAccess) -> None:
        self.access = access

    async def run(self, args: FindSymbolArgs, ctx: ToolContext) -> ToolResult:
        definitions: list[dict[str, Any]] = []
        references: list[dict[str, Any]] = []
        for root, snapshot in await self.access.snapshots(ctx):
            workspace = self.access.workspace(root)
            hits = await asyncio.to_thread(workspace.find_symbol, args.name, snapshot)
            for into, found in ((definitions, hits.definitions), (references, hits.references)):
                into += [
                    {
                        "path": self.access.label(root, h.path),
                        "line": h.line,
                        "kind": h.kind,
                        "detail": h.detail,
                    }
                    for h in found
                ]
        if not definitions and not references:
            return ToolResult(
                content=f"{args.name!r} is not defined or used in any indexed file.",
                data={"definitions": [], "references": []},
            )
        lines = [f"{args.name}: {len(definitions)} definitions, {len(references)} references"]
        lines += ["Defined:"] + [_hit(h) for h in definitions[:MAX_HITS]] if definitions else []
        if references:
            lines += ["Used:"] + [_hit(h) for h in references[:MAX_HITS]]
            if len(references) > MAX_HITS:
                lines.append(f"  … and {len(references) - MAX_HITS} more")
        return ToolResult(
            content="\n".join(lines),
            data={"definitions": definitions, "references": references},
        )


def _hit(hit: dict[str, Any]) -> str:
    where = f"{hit['path']}:{hit['line']}" if hit["line"] else hit["path"]
    detail = f" {hit['detail']}" if hit["detail"] else ""
    return f"  {where} ({hit['kind']}){detail}"


class RelatedArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="A file of the workspace.")
    would_import: str | None = Field(
        None,
        description="A module or file this file would import: says whether that closes an "
        "import cycle.",
    )


class RelatedTool(Tool[RelatedArgs]):
    name: ClassVar[str] = "related"
    description: ClassVar[str] = (
        "One hop around a local file: what it uses (imports, data files it reads, named "
        "ranges, functions it calls) and what uses it, each with its interface (signatures, "
        "sheets and names, columns) instead of its contents, plus files about the same ticker "
        "or filing. With would_import, warns when a new import would close a cycle."
    )
    brief: ClassVar[str] = "what a local file uses and what uses it"
    Args: ClassVar[type[BaseModel]] = RelatedArgs
    concurrency_safe: ClassVar[bool] = True
    repeatable: ClassVar[bool] = True

    def __init__(self, access: WorkspaceAccess) -> None:
        self.access = access

    async def run(self, args: RelatedArgs, ctx: ToolContext) -> ToolResult:
        snapshots = await self.access.snapshots(ctx)
        root, path = self.access.locate(args.path, snapshots)
        snapshot = dict(snapshots)[root]
        related = snapshot.related(path)
        label = self.access.label
        lines = [f"{label(root, path)} [{related.kind}]"]
        lines += [f"  {line}" for line in related.interface[:12]]
        for title, side in (("Uses", related.uses), ("Used by", related.used_by)):
            if not side:
                lines.append(f"{title}: nothing in the workspace")
                continue
            lines.append(f"{title}:")
            for other, reasons, interface in side[:MAX_NEIGHBOURS]:
                lines.append(f"- {label(root, other)} ({', '.join(reasons)})")
                lines += [f"    {line}" for line in interface]
            if len(side) > MAX_NEIGHBOURS:
                lines.append(f"- … and {len(side) - MAX_NEIGHBOURS} more")
        for subject, others in related.subjects:
            kind, _, value = subject.partition(":")
            names = ", ".join(label(root, o) for o in others[:8])
            lines.append(f"Also about {kind} {value}: {names}")
        data: dict[str, Any] = {
            "path": label(root, path),
            "uses": [label(root, u[0]) for u in related.uses],
            "used_by": [label(root, u[0]) for u in related.used_by],
        }
        if args.would_import:
            target = snapshot.module_target(path, args.would_import.strip())
            if target is None:
                lines.append(f"{args.would_import} is not a file of this workspace: no cycle.")
                data["cycle"] = None
            else:
                chain = snapshot.would_cycle(path, target)
                data["cycle"] = [label(root, c) for c in chain] if chain else None
                if chain:
                    lines.append(
                        "Warning: importing it would close a cycle: "
                        + " → ".join(label(root, c) for c in chain)
                    )
                else:
                    lines.append(f"Importing {label(root, target)} closes no cycle.")
        return ToolResult(content="\n".join(lines), data=data)


def workspace_tools(
    roots: Sequence[Path], home: Path, filings: FilingSource | None = None
) -> list[Tool[Any]]:
    access = WorkspaceAccess(roots, home, filings)
    return [WorkspaceMapTool(access), FindSymbolTool(access), RelatedTool(access)]


WORKSPACE_TOOLS = frozenset({"workspace_map", "find_symbol", "related"})

__all__ = [
    "WORKSPACE_TOOLS",
    "FindSymbolTool",
    "RelatedTool",
    "WorkspaceAccess",
    "WorkspaceMapTool",
    "workspace_tools",
]
