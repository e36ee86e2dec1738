"""Full tool results of one run on disk, addressed by tool call id.

Written by the agent's context manager when a result is too large for the context, read back by
the `read_tool_result` tool; it sits here, below both, so neither imports the other.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dexter.atomicfile import PRIVATE, private_dir, write_text

_MAX_KEY_CHARS = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class ResultNotFound(LookupError):
    """No stored result for this call id in this run."""


def safe_key(call_id: str) -> str:
    """A filename-safe form of a call id: `[A-Za-z0-9_-]`, bounded length, never empty."""
    key = _UNSAFE.sub("_", call_id) or "result"
    if len(key) > _MAX_KEY_CHARS:
        digest = hashlib.sha1(call_id.encode("utf-8", "surrogatepass"), usedforsecurity=False)
        key = f"{key[: _MAX_KEY_CHARS - 11]}-{digest.hexdigest()[:10]}"
    return key


def _write_exact(path: Path, text: str) -> None:
    # Whole or not at all: a truncated file must never be read back as a complete result.
    # newline="" and surrogatepass make the round trip exact for any Python string.
    write_text(path, text, errors="surrogatepass", newline="", mode=PRIVATE)


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
        private_dir(self.directory)
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
        _write_exact(path, content)
        _write_exact(
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


__all__ = ["ResultNotFound", "ResultStore", "read_exact", "safe_key"]
