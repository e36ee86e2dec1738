"""Large tool results go to disk; the context keeps a preview, the key and how to read the rest.

The store itself is `dexter.tools.results.ResultStore` (tools read it back).
Files live in `<home>/tool-results/<run_id>/<call_id>.txt` with a `<call_id>.json` sidecar naming
the tool and its arguments. The run directory matters: providers with deterministic ids (Ollama,
Gemini: `call_0` every round) would otherwise overwrite results a model still refers to. For the
same reason `save` never overwrites a different result stored under the same id in one run: it
picks a suffixed key (`call_0-2`) and every preview or marker names the key it really used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dexter.models.types import ToolMessage
from dexter.tools.results import ResultStore

__all__ = [
    "MARKER_PREFIX",
    "MAX_RESULT_CHARS",
    "PREVIEW_CHARS",
    "TURN_BUDGET_CHARS",
    "ResultStore",
    "apply_turn_budget",
    "cap_result",
    "is_preview",
    "stored_reference",
]

MAX_RESULT_CHARS = 50_000
PREVIEW_CHARS = 2_000
TURN_BUDGET_CHARS = 200_000

# A preview plus its header and footer costs about 2,400 characters; persisting anything smaller
# than this would grow the context instead of shrinking it.
_MIN_PERSIST_CHARS = 2 * PREVIEW_CHARS

PREVIEW_PREFIX = "[Large tool result saved"
MARKER_PREFIX = "[Cleared"
# Both kinds of placeholder start with the key and the full size, so microcompact and readers can
# find the stored file from either without trusting anything else in the text. Neither names the
# file: the key is all `read_tool_result` needs, and a path would show the model (and whoever
# reads its transcript) the user's home folder.
_REFERENCE = re.compile(
    r'^\[(?:Large tool result saved: call_id="(?P<key>[A-Za-z0-9_-]+)",'
    r" (?P<chars>[\d,]+) characters|Cleared (?P<cleared>[A-Za-z0-9_-]+), (?P<size>[\d,]+) chars\])"
)


@dataclass(frozen=True, slots=True)
class StoredReference:
    """What a preview or marker points at: the store key and the full result's size."""

    key: str
    chars: int


def stored_reference(content: str) -> StoredReference | None:
    """The stored result a preview or a microcompact marker refers to, or None for plain text."""
    match = _REFERENCE.match(content)
    if match is None:
        return None
    key, chars = match["key"] or match["cleared"], match["chars"] or match["size"]
    return StoredReference(key, int(chars.replace(",", "")))


def is_preview(content: str) -> bool:
    return content.startswith(PREVIEW_PREFIX) and stored_reference(content) is not None


def _preview_content(message: ToolMessage, path: Path) -> str:
    total = len(message.content)
    key = path.stem
    return (
        f'{PREVIEW_PREFIX}: call_id="{key}", {total:,} characters, tool {message.name}]\n'
        f"Preview (first {PREVIEW_CHARS:,} characters):\n"
        f"{message.content[:PREVIEW_CHARS]}\n"
        f"[{total - PREVIEW_CHARS:,} more characters not shown. Read them with "
        f'read_tool_result(call_id="{key}", offset={PREVIEW_CHARS}); find lines with '
        f'read_tool_result(call_id="{key}", search="<term>").]'
    )


def persist(
    message: ToolMessage, *, store: ResultStore, tool_args: Mapping[str, Any]
) -> ToolMessage:
    """Store the full content and return the preview message (same id, name and error flag)."""
    path = store.save(message.tool_call_id, message.name, tool_args, message.content)
    return replace(message, content=_preview_content(message, path))


def cap_result(
    message: ToolMessage,
    *,
    store: ResultStore,
    tool_args: Mapping[str, Any],
    max_chars: int = MAX_RESULT_CHARS,
) -> ToolMessage:
    """Replace a result over `max_chars` by a preview; anything else is returned as is."""
    if len(message.content) <= max_chars or stored_reference(message.content):
        return message
    return persist(message, store=store, tool_args=tool_args)


def apply_turn_budget(
    messages: Sequence[ToolMessage],
    *,
    store: ResultStore,
    args_by_id: Mapping[str, Mapping[str, Any]],
    budget: int = TURN_BUDGET_CHARS,
) -> list[ToolMessage]:
    """Persist a turn's largest results until the turn fits `budget`, keeping the order.

    Previews and markers are never persisted again: that would replace the full file with the
    preview. Results too small to shrink by persisting are left alone.
    """
    result = list(messages)
    total = sum(len(m.content) for m in result)
    if total <= budget:
        return result
    candidates = sorted(
        (
            i
            for i, m in enumerate(result)
            if len(m.content) >= _MIN_PERSIST_CHARS and stored_reference(m.content) is None
        ),
        key=lambda i: len(result[i].content),
        reverse=True,
    )
    for index in candidates:
        if total <= budget:
            break
        old = result[index]
        new = persist(old, store=store, tool_args=args_by_id.get(old.tool_call_id, {}))
        result[index] = new
        total += len(new.content) - len(old.content)
    return result
