"""Microcompact: old read-only tool results become markers that say where the data went.

Runs before every model call. The most recent results stay verbatim; older ones from tools the
caller marks compactable (data fetches, searches, reads; never writes or approvals) are replaced
by a one-paragraph marker naming the tool, its arguments, the size and the stored file. The full
text is saved before the marker is written, so `read_tool_result` can always honour the marker and
the model has no reason to fetch the same data again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dexter.agent.context.results import (
    MARKER_PREFIX,
    ResultStore,
    stored_reference,
)
from dexter.models.types import Message, ToolMessage

__all__ = ["MARKER_PREFIX", "MicrocompactResult", "is_marker", "microcompact"]

KEEP_RECENT = 4
MIN_CHARS = 1_000
_MAX_ARGS_CHARS = 200


@dataclass(frozen=True, slots=True)
class MicrocompactResult:
    messages: list[Message]
    cleared: int
    chars_saved: int


def is_marker(content: str) -> bool:
    """True for a result microcompact already cleared."""
    return content.startswith(MARKER_PREFIX) and stored_reference(content) is not None


def _describe_call(tool: str, args: Mapping[str, Any]) -> str:
    parts = [
        f"{name}={json.dumps(value, ensure_ascii=False, default=str)}"
        for name, value in args.items()
    ]
    text = f"{tool}({', '.join(parts)})"
    return text if len(text) <= _MAX_ARGS_CHARS else text[: _MAX_ARGS_CHARS - 2] + "…)"


KEY_LINES_CHARS = 900
_KEY_LINE_CHARS = 180


def key_lines(text: str, budget: int = KEY_LINES_CHARS) -> list[str]:
    """The first lines that carry figures (digits), so a cleared result keeps its key numbers.

    Financial tool output leads with its headline rows (revenue, net income, dates, source ids);
    keeping those is what lets a long run still answer with the exact figures fetched early.
    """
    picked: list[str] = []
    used = 0
    for raw in text.splitlines():
        line = raw.strip()
        if not any(ch.isdigit() for ch in line) or set(line) <= set("|-: "):
            continue
        if line.startswith(("[Large tool result", MARKER_PREFIX)):
            continue
        line = line if len(line) <= _KEY_LINE_CHARS else line[: _KEY_LINE_CHARS - 1] + "…"
        if used + len(line) > budget:
            break
        picked.append(line)
        used += len(line) + 1
    return picked


def _marker(
    key: str, chars: int, tool: str, args: Mapping[str, Any], path: Path, figures: list[str]
) -> str:
    text = (
        f'{MARKER_PREFIX}: call_id="{key}", {chars:,} characters from '
        f"{_describe_call(tool, args)}. The full result is saved at {path}; read it with "
        f'read_tool_result(call_id="{key}") (offset/length to page, search="<term>" to find '
        f"lines) instead of calling {tool} again.]"
    )
    if figures:
        text += "\nKey lines kept:\n" + "\n".join(figures)
    return text


def microcompact(
    messages: Sequence[Message],
    *,
    store: ResultStore,
    calls: Mapping[str, tuple[str, Mapping[str, Any]]],
    compactable: Callable[[str], bool],
    keep_recent: int = KEEP_RECENT,
    min_chars: int = MIN_CHARS,
) -> MicrocompactResult:
    """Clear compactable results older than the `keep_recent` most recent ones.

    `calls` maps tool_call_id to (tool name, args) and is only used to describe the call.
    Results shorter than `min_chars` are not worth a marker and stay as they are.
    """
    live = [
        i
        for i, m in enumerate(messages)
        if isinstance(m, ToolMessage) and compactable(m.name) and not is_marker(m.content)
    ]
    old = live[: max(0, len(live) - keep_recent)]
    result: list[Message] = list(messages)
    cleared = saved_chars = 0
    for index in old:
        message = result[index]
        assert isinstance(message, ToolMessage)
        if len(message.content) < min_chars:
            continue
        tool, args = calls.get(message.tool_call_id, (message.name, {}))
        reference = stored_reference(message.content)
        if reference is not None:
            # Already a preview: the full text is on disk under the key the preview names.
            path = store.path(reference.key)
            if not path.is_file():
                continue  # never promise a file that is not there
            key, chars = reference.key, reference.chars
        else:
            path = store.save(message.tool_call_id, tool, args, message.content)
            key, chars = path.stem, len(message.content)
        marker = _marker(key, chars, tool, args, path, key_lines(message.content))
        if len(marker) >= len(message.content):
            continue
        result[index] = replace(message, content=marker)
        cleared += 1
        saved_chars += len(message.content) - len(marker)
    return MicrocompactResult(result, cleared, saved_chars)
