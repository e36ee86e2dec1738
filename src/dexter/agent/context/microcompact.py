"""Microcompact: old read-only tool results become short markers that keep their figures.

Runs before every model call. The most recent results stay verbatim; older ones from tools the
caller marks compactable (data fetches, searches, reads; never writes or approvals) are replaced
by a marker: the key to read the full text back, its size, and the result's figure lines (a
cleared income statement still shows its revenue row). The call itself (tool and arguments) is
already in the assistant turn just before, so the marker does not repeat it. The full text is
saved before the marker is written, so `read_tool_result` can always honour it, and no marker
ever names a file: the model needs the key, not the user's home folder.
"""

from __future__ import annotations

import re
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

__all__ = ["MARKER_PREFIX", "MicrocompactResult", "figure_lines", "is_marker", "microcompact"]

KEEP_RECENT = 4
MIN_CHARS = 1_000


@dataclass(frozen=True, slots=True)
class MicrocompactResult:
    messages: list[Message]
    cleared: int
    chars_saved: int


def is_marker(content: str) -> bool:
    """True for a result microcompact already cleared."""
    return content.startswith(MARKER_PREFIX) and stored_reference(content) is not None


FIGURE_LINES_CHARS = 400
_FIGURE_LINE_CHARS = 160
# A reported figure, not a counter: money, a decimal, thousands grouping, a percentage, a scale
# word, a four-digit-or-longer number (amounts, years) or a source id. "Paragraph 12 of filing 7"
# is not, and neither is the line number `read_file` puts in front of every line.
_FIGURE = re.compile(
    r"[$€£¥]\s?\d|\d\.\d|\d,\d{3}|\d\s?%|\d{4,}|\[S\d+\]"
    r"|\d\s?(?:bn|mn|billion|million|thousand|[BMKT])\b"
)
_LINE_NUMBER = re.compile(r"^\s*\d+\t")


def figure_lines(text: str, *, budget: int = FIGURE_LINES_CHARS) -> list[str]:
    """The first distinct lines that carry figures, whitespace collapsed, within `budget`.

    Financial tool output leads with its headline rows (revenue, net income, dates, source ids);
    keeping those is what lets a long run still answer with the exact figures fetched early.
    Bracketed notices (a file's header, a preview's footer) are skipped, and the user's home
    folder is shown as "~".
    """
    home = _home_pattern()
    picked: list[str] = []
    used = 0
    for raw in text.splitlines():
        line = " ".join(_LINE_NUMBER.sub("", raw).split())
        if not line or (line.startswith("[") and line.endswith("]")):
            continue
        if not _FIGURE.search(line):
            continue
        if home is not None:
            line = home.sub("~", line)
        if len(line) > _FIGURE_LINE_CHARS:
            line = line[: _FIGURE_LINE_CHARS - 1] + "…"
        if line in picked:
            continue
        if used + len(line) > budget:
            break
        picked.append(line)
        used += len(line) + 1
    return picked


def _marker(key: str, chars: int, figures: list[str]) -> str:
    head = f"{MARKER_PREFIX} {key}, {chars:,} chars]"
    return "\n".join([head, *figures])


def _home_pattern() -> re.Pattern[str] | None:
    """The user's home folder as written in text (either spelling of a symlinked one), never a
    longer name it is the start of ("/home/ann" in "/home/anna")."""
    try:
        home = Path.home()
    except RuntimeError:  # no home folder known at all
        return None
    spellings = {str(home), str(home.resolve())} - {"/", ""}
    if not spellings:
        return None
    alternatives = "|".join(re.escape(s) for s in sorted(spellings, key=len, reverse=True))
    return re.compile(f"(?:{alternatives})(?![\\w.-])")


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

    `calls` maps tool_call_id to (tool name, args), recorded beside the stored text.
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
            text = store.load(key)
        else:
            path = store.save(message.tool_call_id, tool, args, message.content)
            key, chars, text = path.stem, len(message.content), message.content
        figures = figure_lines(text)
        marker = _marker(key, chars, figures)
        if len(marker) >= len(message.content):
            continue
        result[index] = replace(message, content=marker)
        cleared += 1
        saved_chars += len(message.content) - len(marker)
    return MicrocompactResult(result, cleared, saved_chars)
