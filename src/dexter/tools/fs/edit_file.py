"""The `edit_file` tool: replace text in a workspace file and show the change as a diff.

`old_text` is matched exactly first. If that fails, a whitespace-tolerant match is tried (runs of
spaces and tabs compare equal to one space; whitespace at line ends is ignored), mapped back to
the original text so only the matched span changes. Either way the match must be unique unless
`replace_all` is set. `preview_edit` computes the same diff without writing, for the approval
prompt.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
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

MAX_EDIT_FILE_BYTES = 16 * 1024 * 1024
MAX_DIFF_CHARS = 30_000
_BOM = "\ufeff"
# Spaces and tabs (plus the Unicode spaces pasted text carries) that collapse to one space.
_BLANKS = (
    " \t\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
)


class EditFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="File path, relative to the workspace.")
    old_text: str = Field(
        min_length=1,
        description="Text to replace, copied from the file with enough context to be unique.",
    )
    new_text: str = Field(description="Replacement text (empty to delete old_text).")
    replace_all: bool = Field(
        False, description="Replace every occurrence instead of requiring exactly one."
    )


@dataclass(frozen=True)
class EditPlan:
    """A computed edit: the file's new bytes and what to tell the user about it."""

    path: Path
    shown: str
    new_data: bytes
    diff: str
    replacements: int
    fuzzy: bool
    first_changed_line: int


class EditFileTool(Tool[EditFileArgs]):
    name: ClassVar[str] = "edit_file"
    brief: ClassVar[str] = "change part of a workspace file"
    description: ClassVar[str] = (
        "Replace `old_text` with `new_text` in a workspace text file. Returns a unified diff "
        "and needs the user's approval (they see the diff).\n"
        "old_text must occur exactly once (include surrounding lines to make it unique) unless "
        "replace_all is true. Matching is exact first, then tolerant of differences in spaces, "
        "tabs and trailing whitespace. Read the file first; use write_file for new files."
    )
    Args: ClassVar[type[BaseModel]] = EditFileArgs
    concurrency_safe: ClassVar[bool] = False
    needs_approval: ClassVar[bool] = True

    def __init__(self, workspace: Path | None = None) -> None:
        self.workspace = (workspace or Path.cwd()).resolve()

    def preview(self, args: EditFileArgs) -> str:
        """The diff this edit would make, without writing anything."""
        return preview_edit(self.workspace, args)

    def resources(self, args: EditFileArgs) -> Resources:
        return Resources.of(writes=[file_resource(self.workspace, args.path)])

    async def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolResult:
        plan = plan_edit(self.workspace, args)
        try:
            write_bytes(plan.path, plan.new_data, keep_mode=True, durable=True)
        except OSError as exc:
            raise ToolFailure(f"can't write {plan.shown}: {exc.strerror or exc}") from None
        ctx.progress(f"edited {plan.shown}")
        count = f"{plan.replacements} occurrence{'s' if plan.replacements != 1 else ''}"
        how = " (whitespace-tolerant match)" if plan.fuzzy else ""
        return ToolResult(
            content=f"Edited {plan.shown}: replaced {count}{how}.\n{plan.diff}",
            data={
                "path": plan.shown,
                "replacements": plan.replacements,
                "fuzzy": plan.fuzzy,
                "first_changed_line": plan.first_changed_line,
            },
        )


def preview_edit(workspace: Path, args: EditFileArgs) -> str:
    """The unified diff `edit_file` would apply for `args`; raises ToolFailure as run would."""
    return plan_edit(workspace, args).diff


def plan_edit(workspace: Path, args: EditFileArgs) -> EditPlan:
    path = resolve_in_workspace(workspace, args.path)
    refuse_protected(workspace, path)
    shown = display_path(workspace, path)
    original = _read_text(path, shown)
    bom = original.startswith(_BOM)
    body = original[1:] if bom else original
    # The file keeps its line ending style: CRLF if its first line ends with one.
    newline = "\r\n" if "\n" in body and body.split("\n", 1)[0].endswith("\r") else "\n"
    content = _to_lf(body)
    old, new = _to_lf(args.old_text), _to_lf(args.new_text)

    spans = _exact_spans(content, old)
    fuzzy = False
    if not spans:
        spans = _fuzzy_spans(content, old)
        fuzzy = bool(spans)
    if not spans:
        raise ToolFailure(
            f"old_text was not found in {shown} (not exactly, nor ignoring differences in "
            "spaces, tabs and trailing whitespace). Read the file again and copy the text "
            "exactly as it appears."
        )
    if len(spans) > 1 and not args.replace_all:
        raise ToolFailure(
            f"old_text matches {len(spans)} places in {shown}; include more surrounding lines "
            "so it matches exactly one, or set replace_all to true to replace all of them"
        )
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces += [content[last:start], new]
        last = end
    pieces.append(content[last:])
    updated = "".join(pieces)
    if updated == content:
        raise ToolFailure("no changes: new_text is identical to the text it would replace")

    first_line = content.count("\n", 0, spans[0][0]) + 1
    diff = _unified_diff(content, updated, shown)
    restored = (_BOM if bom else "") + (
        updated.replace("\n", "\r\n") if newline == "\r\n" else updated
    )
    return EditPlan(
        path=path,
        shown=shown,
        new_data=restored.encode("utf-8"),
        diff=diff,
        replacements=len(spans),
        fuzzy=fuzzy,
        first_changed_line=first_line,
    )


def _read_text(path: Path, shown: str) -> str:
    if not path.exists():
        raise ToolFailure(f"file not found: {shown} (use write_file to create a new file)")
    if not path.is_file():
        raise ToolFailure(f"{shown} is not a regular file")
    size = path.stat().st_size
    if size > MAX_EDIT_FILE_BYTES:
        raise ToolFailure(
            f"{shown} is {size:,} bytes, too large to edit (limit {MAX_EDIT_FILE_BYTES:,})"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ToolFailure(f"can't read {shown}: {exc.strerror or exc}") from None
    if b"\x00" in data[:8192]:
        raise ToolFailure(f"{shown} is a binary file; edit_file changes text files only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(
            f"{shown} is not valid UTF-8 text; edit_file would corrupt it, so it refuses"
        ) from None


def _to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _exact_spans(content: str, old: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    index = content.find(old)
    while index != -1:
        spans.append((index, index + len(old)))
        index = content.find(old, index + len(old))
    return spans


_RUN = re.compile(f"[{_BLANKS}]+")


def _normalise(text: str) -> tuple[str, list[int], list[int]]:
    """Whitespace-normalised text, with each character's start and end in the original."""
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    index = 0
    for match in _RUN.finditer(text):
        for position in range(index, match.start()):
            chars.append(text[position])
            starts.append(position)
            ends.append(position + 1)
        after = match.end()
        if after < len(text) and text[after] != "\n":  # blanks at a line's end are dropped
            chars.append(" ")
            starts.append(match.start())
            ends.append(after)
        index = after
    for position in range(index, len(text)):
        chars.append(text[position])
        starts.append(position)
        ends.append(position + 1)
    return "".join(chars), starts, ends


def _fuzzy_spans(content: str, old: str) -> list[tuple[int, int]]:
    needle = _normalise(old)[0]
    if not needle.strip():
        return []
    haystack, starts, ends = _normalise(content)
    spans: list[tuple[int, int]] = []
    index = haystack.find(needle)
    while index != -1:
        spans.append((starts[index], ends[index + len(needle) - 1]))
        index = haystack.find(needle, index + len(needle))
    return spans


def _unified_diff(before: str, after: str, shown: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(),
        after.splitlines(),
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
        lineterm="",
    )
    diff = "\n".join(lines)
    if len(diff) > MAX_DIFF_CHARS:
        diff = diff[:MAX_DIFF_CHARS] + f"\n… [diff clipped: {len(diff):,} characters in all]"
    return diff
