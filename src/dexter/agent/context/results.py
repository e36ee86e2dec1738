"""Large tool results go to disk; the context keeps a preview, the path and how to read the rest.

Files live in `<home>/tool-results/<run_id>/<call_id>.txt` with a `<call_id>.json` sidecar naming
the tool and its arguments. The run directory matters: providers with deterministic ids (Ollama,
Gemini: `call_0` every round) would otherwise overwrite results a model still refers to. For the
same reason `save` never overwrites a different result stored under the same id in one run: it
picks a suffixed key (`call_0-2`) and every preview or marker names the key it really used.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dexter.models.types import ToolMessage

MAX_RESULT_CHARS = 50_000
PREVIEW_CHARS = 2_000
TURN_BUDGET_CHARS = 200_000

# A preview plus its header and footer costs about 2,400 characters; persisting anything smaller
# than this would grow the context instead of shrinking it.
_MIN_PERSIST_CHARS = 2 * PREVIEW_CHARS
_MAX_KEY_CHARS = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

PREVIEW_PREFIX = "[Large tool result saved"
MARKER_PREFIX = "[Old tool result cleared"
# Both kinds of placeholder start with the key and the full size, so microcompact and readers can
# find the stored file from either without trusting anything else in the text.
_REFERENCE = re.compile(
    r'^\[(?:Large tool result saved|Old tool result cleared): call_id="(?P<key>[A-Za-z0-9_-]+)",'
    r" (?P<chars>[\d,]+) characters"
)


class ResultNotFound(LookupError):
    """No stored result for this call id in this run."""


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
    return StoredReference(match["key"], int(match["chars"].replace(",", "")))


def is_preview(content: str) -> bool:
    return content.startswith(PREVIEW_PREFIX) and stored_reference(content) is not None


def safe_key(call_id: str) -> str:
    """A filename-safe form of a call id: `[A-Za-z0-9_-]`, bounded length, never empty."""
    key = _UNSAFE.sub("_", call_id) or "result"
    if len(key) > _MAX_KEY_CHARS:
        digest = hashlib.sha1(call_id.encode("utf-8", "surrogatepass"), usedforsecurity=False)
        key = f"{key[: _MAX_KEY_CHARS - 11]}-{digest.hexdigest()[:10]}"
    return key


def _write_atomic(path: Path, text: str) -> None:
    # A crash mid-write must never leave a truncated file that a later read reports as complete.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # newline="" and surrogatepass make the round trip exact for any Python string.
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass", newline="") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_exact(path: Path) -> str:
    with path.open("r", encoding="utf-8", errors="surrogatepass", newline="") as handle:
        return handle.read()


class ResultStore:
    """Full tool results of one run, addressed by (sanitised) tool call id."""

    def __init__(self, home: Path, run_id: str) -> None:
        self.home = home
        self.run_id = safe_key(run_id)
        self.directory = home / "tool-results" / self.run_id

    @classmethod
    def at(cls, directory: Path) -> ResultStore:
        """The store whose run directory is `directory` (`<home>/tool-results/<run_id>`)."""
        return cls(directory.parent.parent, directory.name)

    def path(self, call_id: str) -> Path:
        return self.directory / f"{safe_key(call_id)}.txt"

    def saved(self, call_id: str) -> bool:
        return self.path(call_id).is_file()

    def save(self, call_id: str, tool: str, args: Mapping[str, Any], content: str) -> Path:
        """Store `content` and return its path; the path's stem is the key to read it back by.

        Saving the same content again is a no-op; different content under an id already used in
        this run goes to the next free `<id>-N` key instead of overwriting.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        base = safe_key(call_id)
        key, n = base, 1
        while True:
            path = self.directory / f"{key}.txt"
            if not path.exists():
                break
            if path.stat().st_size >= len(content) and read_exact(path) == content:
                return path
            n += 1
            key = f"{base}-{n}"
        meta = {
            "call_id": call_id,
            "key": key,
            "tool": tool,
            "args": dict(args),
            "chars": len(content),
            "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        _write_atomic(path, content)
        _write_atomic(
            path.with_suffix(".json"),
            json.dumps(meta, ensure_ascii=False, default=str, indent=2),
        )
        return path

    def load(self, call_id: str) -> str:
        path = self.path(call_id)
        if not path.is_file():
            raise ResultNotFound(
                f"no stored tool result for call id {call_id!r} in run {self.run_id} "
                f"(looked for {path})"
            )
        return read_exact(path)

    def info(self, call_id: str) -> dict[str, Any]:
        """The sidecar (tool, args, chars, saved_at), or {} when missing or unreadable."""
        try:
            data = json.loads(self.path(call_id).with_suffix(".json").read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def stored_ids(self, limit: int = 20) -> list[str]:
        """Keys of stored results, most recently saved first."""
        if not self.directory.is_dir():
            return []
        files = sorted(
            self.directory.glob("*.txt"), key=lambda p: p.stat().st_mtime_ns, reverse=True
        )
        return [p.stem for p in files[:limit]]


def _preview_content(message: ToolMessage, path: Path) -> str:
    total = len(message.content)
    key = path.stem
    return (
        f'{PREVIEW_PREFIX}: call_id="{key}", {total:,} characters, tool {message.name}; '
        f"full text at {path}]\n"
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
