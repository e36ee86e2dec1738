"""The `read_file` tool: read a text file in the workspace, by lines or by byte range.

Line mode shows numbered lines (400 by default) with a header that says how to read on; byte mode
reads an exact slice, for minified files whose "lines" are huge. Output stays under 40,000
characters, so a read never trips the 50,000-character result cap that would persist it again.
"""

from __future__ import annotations

import difflib
import mimetypes
import os
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.fs.paths import display_path, file_resource, refuse_secret, resolve_in_workspace

MAX_OUTPUT_CHARS = 40_000
DEFAULT_LINES = 400
MAX_LINES = 2_000
MAX_LINE_CHARS = 2_000
MAX_BYTE_RANGE = 32_768
# Line mode reads the whole file; beyond this, byte ranges (which seek) or bash are the way.
MAX_LINE_MODE_BYTES = 64 * 1024 * 1024
SNIFF_BYTES = 8_192
MAX_LISTED = 40


class ReadFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1)
    offset: int | None = Field(None, ge=1, description="First line (1-based).")
    limit: int | None = Field(None, ge=1, le=MAX_LINES, description="Lines to show.")
    byte_offset: int | None = Field(
        None, ge=0, description="Read bytes from here (0-based) instead of lines."
    )
    byte_limit: int | None = Field(None, ge=1, le=MAX_BYTE_RANGE)


class ReadFileTool(Tool[ReadFileArgs]):
    name: ClassVar[str] = "read_file"
    description: ClassVar[str] = (
        "Read a text file in the workspace, with line numbers. Shows "
        f"{DEFAULT_LINES} lines from `offset` by default; the header says where to continue. "
        "For very long lines (minified JSON) read bytes with `byte_offset`/`byte_limit`."
    )
    Args: ClassVar[type[BaseModel]] = ReadFileArgs
    concurrency_safe: ClassVar[bool] = True
    needs_approval: ClassVar[bool] = False
    repeatable: ClassVar[bool] = True

    def __init__(self, workspace: Path | None = None) -> None:
        self.workspace = (workspace or Path.cwd()).resolve()

    def resources(self, args: ReadFileArgs) -> Resources:
        return Resources.of(reads=[file_resource(self.workspace, args.path)])

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        path = resolve_in_workspace(self.workspace, args.path)
        refuse_secret(self.workspace, path)
        shown = display_path(self.workspace, path)
        size = _check_readable(self.workspace, path, shown)
        if args.byte_offset is not None or args.byte_limit is not None:
            if args.offset is not None or args.limit is not None:
                raise ToolFailure(
                    "use either lines (offset/limit) or bytes (byte_offset/byte_limit), not both"
                )
            return _read_bytes(path, shown, size, args.byte_offset or 0, args.byte_limit)
        if size > MAX_LINE_MODE_BYTES:
            raise ToolFailure(
                f"{shown} is {size:,} bytes, too large to read by lines (limit "
                f"{MAX_LINE_MODE_BYTES:,}); read it with byte_offset/byte_limit, or search it "
                "with bash (grep, head, tail)"
            )
        data = _read_all(path, shown)
        _refuse_binary(data[:SNIFF_BYTES], shown, size)
        return _read_lines(data, shown, args.offset or 1, args.limit or DEFAULT_LINES)


def _check_readable(workspace: Path, path: Path, shown: str) -> int:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ToolFailure(_not_found(workspace, path, shown)) from None
    except OSError as exc:
        raise ToolFailure(f"can't read {shown}: {exc.strerror or exc}") from None
    if path.is_dir():
        raise ToolFailure(_directory_listing(path, shown))
    if not path.is_file():
        raise ToolFailure(f"{shown} is not a regular file (a device, socket or pipe)")
    if not os.access(path, os.R_OK):
        raise ToolFailure(f"{shown} is not readable (permission denied)")
    return info.st_size


def _read_all(path: Path, shown: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ToolFailure(f"can't read {shown}: {exc.strerror or exc}") from None


def _not_found(workspace: Path, path: Path, shown: str) -> str:
    parent = path.parent
    root = workspace.resolve()
    while not parent.is_dir() and parent != root and parent.is_relative_to(root):
        parent = parent.parent
    where = display_path(workspace, parent)
    if parent != path.parent:
        missing = display_path(workspace, path.parent)
        return f"file not found: {shown} (the directory {missing}/ doesn't exist; " + (
            f"nearest existing directory is {where}/)"
        )
    try:
        names = sorted(entry.name for entry in parent.iterdir())
    except OSError:
        names = []
    close = difflib.get_close_matches(path.name, names, n=5, cutoff=0.5)
    close += [n for n in names if n.lower() == path.name.lower() and n not in close]
    if close:
        return f"file not found: {shown}. Similar names in {where}/: {', '.join(close)}"
    return f"file not found: {shown} ({where}/ has {len(names)} entries, none with a similar name)"


def _directory_listing(path: Path, shown: str) -> str:
    try:
        entries = sorted(path.iterdir(), key=lambda entry: entry.name)
    except OSError as exc:
        return f"{shown} is a directory, and it can't be listed: {exc.strerror or exc}"
    names = [entry.name + ("/" if entry.is_dir() else "") for entry in entries[:MAX_LISTED]]
    more = f" … and {len(entries) - MAX_LISTED} more" if len(entries) > MAX_LISTED else ""
    listing = ", ".join(names) if names else "(empty)"
    return f"{shown} is a directory, not a file. It contains: {listing}{more}"


def _refuse_binary(sample: bytes, shown: str, size: int) -> None:
    if not _looks_binary(sample):
        return
    kind = mimetypes.guess_type(shown)[0] or "unknown type"
    raise ToolFailure(
        f"{shown} is a binary file ({kind}, {size:,} bytes); read_file shows text only. "
        "Inspect it with bash if needed (e.g. `file`, `xxd | head`)."
    )


def _looks_binary(sample: bytes) -> bool:
    if b"\x00" in sample:
        return True
    if not sample:
        return False
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 3:  # a character cut off by the sample's end
            return False
    # Not UTF-8: text in another encoding has few control characters, binary data has many.
    controls = sum(1 for byte in sample if byte < 32 and byte not in b"\t\n\r\f\b\x1b")
    return controls / len(sample) > 0.05


def _read_lines(data: bytes, shown: str, offset: int, limit: int) -> ToolResult:
    size = len(data)
    if not data:
        return ToolResult(
            content=f"[{shown}: empty file (0 bytes)]",
            data={"path": shown, "total_bytes": 0, "total_lines": 0},
        )
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    total = len(lines)
    if offset > total:
        raise ToolFailure(
            f"offset {offset} is beyond the end of {shown} ({total:,} lines); "
            f"use an offset from 1 to {total}"
        )
    start = offset - 1
    byte_pos = sum(len(line) + 1 for line in lines[:start])
    width = len(str(min(total, start + limit)))
    budget = MAX_OUTPUT_CHARS - 400  # room for the header
    body: list[str] = []
    used = 0
    invalid = False
    end = start
    for index in range(start, min(total, start + limit)):
        raw = lines[index]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if index == 0 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            invalid = True
        if len(text) > MAX_LINE_CHARS:
            text = (
                text[:MAX_LINE_CHARS] + f" … [line clipped: {len(text):,} characters; read it "
                f"whole with byte_offset={byte_pos}]"
            )
        row = f"{index + 1:>{width}}\t{text}"
        if body and used + len(row) + 1 > budget:
            break
        body.append(row)
        used += len(row) + 1
        byte_pos += len(lines[index]) + 1
        end = index + 1
    if end < total:
        status = f"showing lines {offset:,}–{end:,} of {total:,}; continue with offset={end + 1}"
    else:
        status = f"showing lines {offset:,}–{end:,} of {total:,} (end of file)"
    header = f"[{shown}: {size:,} bytes, {total:,} lines; {status}]"
    if invalid:
        header += "\n[note: some bytes are not valid UTF-8 and are shown as �]"
    return ToolResult(
        content=header + "\n" + "\n".join(body),
        data={
            "path": shown,
            "total_bytes": size,
            "total_lines": total,
            "first_line": offset,
            "last_line": end,
            "next_offset": end + 1 if end < total else None,
        },
    )


def _read_bytes(path: Path, shown: str, size: int, offset: int, limit: int | None) -> ToolResult:
    if offset >= size:
        raise ToolFailure(
            f"byte_offset {offset:,} is at or beyond the end of {shown} ({size:,} bytes)"
        )
    length = limit or MAX_BYTE_RANGE
    try:
        with path.open("rb") as handle:
            _refuse_binary(handle.read(SNIFF_BYTES), shown, size)
            handle.seek(offset)
            # Three extra bytes on each side let the range move to character boundaries.
            chunk = handle.read(length + 3)
    except OSError as exc:
        raise ToolFailure(f"can't read {shown}: {exc.strerror or exc}") from None
    start = 0
    while start < min(3, len(chunk)) and _continuation(chunk[start]):
        start += 1  # the offset fell inside a multi-byte character: skip to the next one
    stop = min(length, len(chunk))
    while stop > start and stop < len(chunk) and _continuation(chunk[stop]):
        stop -= 1  # don't cut the last character in half
    if stop == start:  # a range shorter than one character: take that whole character
        stop = min(len(chunk), start + 1)
        while stop < len(chunk) and _continuation(chunk[stop]):
            stop += 1
    text = chunk[start:stop].decode("utf-8", errors="replace")
    first, last = offset + start, offset + stop
    if last < size:
        status = f"continue with byte_offset={last}"
    else:
        status = "end of file"
    header = f"[{shown}: bytes {first:,}–{last:,} of {size:,}; {status}]"
    return ToolResult(
        content=header + "\n" + text,
        data={
            "path": shown,
            "total_bytes": size,
            "byte_start": first,
            "byte_end": last,
            "next_byte_offset": last if last < size else None,
        },
    )


def _continuation(byte: int) -> bool:
    return 0x80 <= byte < 0xC0
