"""The `write_file` tool: create or replace a text file in the workspace, atomically."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dexter.atomicfile import write_bytes
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.fs.paths import (
    display_path,
    file_resource,
    refuse_protected,
    resolve_in_workspace,
)


class WriteFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="File path, relative to the workspace.")
    content: str = Field(description="The complete new content of the file (UTF-8 text).")
    create_dirs: bool = Field(True, description="Create missing parent directories (default true).")


class WriteFileTool(Tool[WriteFileArgs]):
    name: ClassVar[str] = "write_file"
    brief: ClassVar[str] = "create or overwrite a workspace file"
    description: ClassVar[str] = (
        "Create or overwrite a text file in the workspace. Writes `content` (UTF-8) and needs "
        "the user's approval.\n"
        "Paths are relative to the workspace; files outside it can't be written. Missing "
        "parent directories are created. The write is atomic: the file is never left half "
        "written. To change part of an existing file, use edit_file instead."
    )
    Args: ClassVar[type[BaseModel]] = WriteFileArgs
    concurrency_safe: ClassVar[bool] = False
    needs_approval: ClassVar[bool] = True

    def __init__(self, workspace: Path | None = None) -> None:
        self.workspace = (workspace or Path.cwd()).resolve()

    def resources(self, args: WriteFileArgs) -> Resources:
        return Resources.of(writes=[file_resource(self.workspace, args.path)])

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        path = resolve_in_workspace(self.workspace, args.path)
        refuse_protected(self.workspace, path)
        shown = display_path(self.workspace, path)
        if path == self.workspace or path.is_dir():
            raise ToolFailure(f"{shown} is a directory; give a file path")
        if path.exists() and not path.is_file():
            raise ToolFailure(f"{shown} is not a regular file; refusing to replace it")
        previous = path.stat().st_size if path.is_file() else None
        parent = path.parent
        folder = display_path(self.workspace, parent)
        if not parent.is_dir():
            if parent.exists():
                raise ToolFailure(f"can't write {shown}: {folder} is not a directory")
            if not args.create_dirs:
                raise ToolFailure(
                    f"can't write {shown}: the directory {folder}/ doesn't exist "
                    "(set create_dirs to true to create it)"
                )
        data = args.content.encode("utf-8")
        try:
            parent.mkdir(parents=True, exist_ok=True)
            # Flushed to disk, and an existing file keeps its mode (a script stays executable).
            write_bytes(path, data, keep_mode=True, durable=True)
        except OSError as exc:
            raise ToolFailure(f"can't write {shown}: {exc.strerror or exc}") from None
        lines = args.content.count("\n") + (0 if args.content.endswith("\n") or not data else 1)
        what = "new file" if previous is None else f"replaced the previous {previous:,} bytes"
        ctx.progress(f"wrote {shown}")
        return ToolResult(
            content=f"Wrote {len(data):,} bytes ({lines:,} lines) to {shown} ({what}).",
            data={
                "path": shown,
                "bytes_written": len(data),
                "created": previous is None,
            },
        )
