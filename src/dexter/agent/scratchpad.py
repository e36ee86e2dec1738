"""The scratchpad: an append-only JSONL record of one run, plus an in-memory index.

The file is for people and for later tooling (resume, audits); the run itself never rereads it,
so a file that cannot be written (a full disk) costs the record, never the run: the failure is
logged once and kept in `write_error`.
The index drives the soft limits: repeated or near-duplicate tool calls get a short warning that
is attached to the tool's result, where the model actually reads it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dexter.atomicfile import open_private, private_dir

MAX_CALLS_PER_TOOL = 3
# Document readers whose tool class is shared with tools that do keep the limit (routed tools).
REPEATABLE_TOOLS = frozenset({"read_filings", "web_fetch"})
SIMILARITY_THRESHOLD = 0.7
QUERY_ARG_KEYS = ("query", "search", "question", "q", "text", "input")

log = logging.getLogger(__name__)

_NON_WORD = re.compile(r"[^\w\s]", re.ASCII)


def _iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def query_of(args: dict[str, Any]) -> str | None:
    """The free-text query of a call, if it has one: what near-duplicate detection compares."""
    for key in QUERY_ARG_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def _words(text: str) -> set[str]:
    return {word for word in _NON_WORD.sub(" ", text.lower()).split() if len(word) > 2}


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two queries' words of three letters or more."""
    left, right = _words(a), _words(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


@dataclass
class ToolRecord:
    tool: str
    args: dict[str, Any]
    result: str
    is_error: bool


@dataclass
class Scratchpad:
    path: Path
    query: str
    records: list[ToolRecord] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict)
    _queries: dict[str, list[str]] = field(default_factory=dict)
    write_error: OSError | None = None

    @classmethod
    def create(cls, directory: Path, query: str) -> Scratchpad:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d-%H%M%S")
        digest = hashlib.md5(query.encode(), usedforsecurity=False).hexdigest()[:12]
        # The random part keeps identical queries started in the same second (parallel
        # sub-agents, scripted runs) from sharing one file.
        name = f"{stamp}_{digest}_{uuid.uuid4().hex[:8]}.jsonl"
        pad = cls(path=directory / name, query=query)
        try:
            private_dir(directory)
        except OSError as error:
            pad._not_written(error)
        pad._append({"type": "init", "content": query})
        return pad

    @property
    def run_id(self) -> str:
        return self.path.stem

    def _append(self, record: dict[str, Any]) -> None:
        line = json.dumps({**record, "timestamp": _iso_now()}, ensure_ascii=False, default=str)
        try:
            with open_private(self.path) as handle:
                handle.write(line + "\n")
        except OSError as error:
            self._not_written(error)

    def _not_written(self, error: OSError) -> None:
        if self.write_error is None:
            log.warning("the scratchpad %s is not being written: %s", self.path, error)
        self.write_error = error

    def add_thinking(self, text: str) -> None:
        self._append({"type": "thinking", "content": text})

    def add_reasoning(self, text: str) -> None:
        self._append({"type": "reasoning", "content": text})

    def add_answer(
        self,
        text: str,
        status: str,
        sources: list[dict[str, str | None]] | None = None,
        *,
        verification: dict[str, Any] | None = None,
    ) -> None:
        record: dict[str, Any] = {
            "type": "answer",
            "content": text,
            "status": status,
            "sources": sources or [],
        }
        if verification is not None:
            record["verification"] = verification
        self._append(record)

    def add_note(self, kind: str, detail: str) -> None:
        self._append({"type": kind, "content": detail})

    def add_tool_call(
        self,
        tool: str,
        args: dict[str, Any],
        result: str,
        *,
        duration_ms: float,
        error: str | None = None,
        data: Any = None,
    ) -> None:
        self.records.append(ToolRecord(tool, args, result, is_error=error is not None))
        self._counts[tool] = self._counts.get(tool, 0) + 1
        query = query_of(args)
        if query is not None:
            self._queries.setdefault(tool, []).append(query)
        self._append(
            {
                "type": "tool_call",
                "tool": tool,
                "args": args,
                "result": result,
                "duration_ms": round(duration_ms, 1),
                "error": error,
                **_data_field(data),
            }
        )

    def call_count(self, tool: str) -> int:
        return self._counts.get(tool, 0)

    def limit_warning(
        self, tool: str, args: dict[str, Any], *, repeatable: bool = False
    ) -> str | None:
        """A soft-limit warning for a call about to run, or None. Nothing is ever blocked.
        `repeatable` tools (and REPEATABLE_TOOLS) get no call-count nudge, only the
        near-duplicate-query one."""
        count = self._counts.get(tool, 0)
        if repeatable or tool in REPEATABLE_TOOLS:
            count = -1
        if count >= MAX_CALLS_PER_TOOL:
            return (
                f"Note: `{tool}` has now been called {count + 1} times in this run (suggested "
                f"limit {MAX_CALLS_PER_TOOL}). If it is not giving you what you need, try another "
                "tool or different terms, or answer with what you have and say what is missing."
            )
        query = query_of(args)
        if query is not None:
            for previous in self._queries.get(tool, []):
                if similarity(query, previous) >= SIMILARITY_THRESHOLD:
                    return (
                        f"Note: this `{tool}` query is very similar to an earlier one in this run "
                        f"({previous!r}). Repeating it is unlikely to help: change the terms, try "
                        "another tool, or work with the data already retrieved."
                    )
        if count == MAX_CALLS_PER_TOOL - 1:
            return (
                f"Note: `{tool}` has been called {count + 1} of {MAX_CALLS_PER_TOOL} suggested "
                "times in this run. If this call does not help, change approach."
            )
        return None


# Structured results (statement records, holdings) are kept for reports; a huge one is left out
# rather than bloating the log: the text result above still has everything the model saw.
MAX_DATA_CHARS = 500_000


def _data_field(data: Any) -> dict[str, Any]:
    if data is None:
        return {}
    try:
        encoded = json.dumps(data, default=str)
    except (TypeError, ValueError):
        return {}
    return {"data": json.loads(encoded)} if len(encoded) <= MAX_DATA_CHARS else {}
