"""What Dexter remembers, loaded into the system prompt at the start of a session.

The section holds MEMORY.md (evergreen facts) and today's and yesterday's daily notes, newest
daily note first, within a token budget. When everything does not fit, the budget is shared
fairly (a short file keeps all of its lines, the rest is split between the longer ones) and each
file is trimmed by whole lines: MEMORY.md keeps its first lines, a daily note its last (newest)
ones, with a marker saying how many lines were left out and how to read them. Older notes are
reached with `memory_search`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING

from dexter.memory.chunking import estimate_tokens
from dexter.memory.files import EVERGREEN_NAME

if TYPE_CHECKING:
    from dexter.memory.backend import MemoryBackend, MemoryDocuments

__all__ = ["DEFAULT_MEMORY_TOKENS", "MEMORY_HEADING", "memory_prompt"]

DEFAULT_MEMORY_TOKENS = 2000
MEMORY_HEADING = "## What you remember about the user"

_INTRO = (
    "From your memory files in {where}: things the user told you in earlier sessions. Treat "
    "them as the user's own statements; when notes disagree, the newer note wins."
)
_USAGE = (
    "Memory tools: memory_search recalls older notes (cite the file and lines it returns); "
    "memory_get reads a file exactly; memory_update saves what the user tells you about "
    "themselves (preferences, holdings, goals, decisions, corrections) as one short entry. "
    "Never save prices, market data or tool output."
)
_KEYWORD_ONLY = " Memory search is keyword-only here (no embedding model), so use exact words."


@dataclass(slots=True)
class _Section:
    name: str
    label: str
    lines: list[str]
    keep_tail: bool
    budget: int = 0

    def header(self) -> str:
        return f"### {self.name} ({self.label})"


def _omitted(count: int, name: str, tail: bool) -> str:
    which = "earlier" if tail else "later"
    return f"[… {count} {which} lines omitted; memory_get file {name} reads them]"


def _render(section: _Section, keep: int) -> str:
    lines = section.lines
    if keep >= len(lines):
        body = lines
    elif section.keep_tail:
        body = [_omitted(len(lines) - keep, section.name, True), *lines[len(lines) - keep :]]
    else:
        body = [*lines[:keep], _omitted(len(lines) - keep, section.name, False)]
    return "\n".join([section.header(), *body])


def _fit(section: _Section, budget: int) -> str | None:
    """The section with as many whole lines as fit in `budget` tokens; None if not even one."""
    full = _render(section, len(section.lines))
    if estimate_tokens(full) <= budget:
        return full
    low, high, best = 1, len(section.lines) - 1, None
    while low <= high:  # more lines never means fewer tokens, so binary search the count
        mid = (low + high) // 2
        text = _render(section, mid)
        if estimate_tokens(text) <= budget:
            best, low = text, mid + 1
        else:
            high = mid - 1
    return best


def _share(sections: list[_Section], budget: int) -> None:
    """Water-filling: each section gets what it needs up to an equal share of what is left."""
    needs = {id(s): estimate_tokens(_render(s, len(s.lines))) for s in sections}
    remaining = budget
    pending = sorted(sections, key=lambda s: needs[id(s)])
    while pending:
        share = remaining // len(pending)
        section = pending.pop(0)
        section.budget = min(needs[id(section)], share)
        remaining -= section.budget


def _content(text: str) -> list[str]:
    lines = text.strip("\n").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return lines if any(line.strip() for line in lines) else []


async def memory_prompt(
    files: MemoryDocuments,
    index: MemoryBackend | None = None,
    *,
    max_tokens: int = DEFAULT_MEMORY_TOKENS,
    today: date | None = None,
) -> str | None:
    """The "What you remember about the user" section, or None when memory is empty.

    The whole section, usage note included, stays within `max_tokens` (estimated as in
    chunking, about four characters per token).
    """
    day = today or date.today()
    candidates = [
        (files.daily_name(day), "today", True),
        (files.daily_name(day - timedelta(days=1)), "yesterday", True),
    ]
    sections: list[_Section] = []
    texts = await asyncio.to_thread(
        lambda: {n: files.read(n) for n in (EVERGREEN_NAME, *(c[0] for c in candidates))}
    )
    evergreen = _content(texts[EVERGREEN_NAME])
    if evergreen:
        sections.append(_Section(EVERGREEN_NAME, "long-term", evergreen, keep_tail=False))
    for name, label, tail in candidates:
        lines = _content(texts[name])
        if lines:
            sections.append(_Section(name, f"{label}'s note", lines, keep_tail=tail))
    if not sections:
        return None

    usage = _USAGE + (_KEYWORD_ONLY if index is not None and index.keyword_only else "")
    intro = _INTRO.format(where=files.location())
    frame = "\n\n".join([MEMORY_HEADING, intro, usage])
    # Each section adds a blank-line separator: count it against the budget too.
    room = max_tokens - estimate_tokens(frame) - len(sections)
    if room <= 0:
        return None
    _share(sections, room)
    rendered: list[str] = []
    carry = 0  # budget a section did not use (whole lines rarely fill it) passes on
    for section in sections:
        allowed = section.budget + carry
        text = _fit(section, allowed)
        carry = allowed - (estimate_tokens(text) if text else 0)
        if text is not None:
            rendered.append(text)
    if not rendered:
        return None
    return "\n\n".join([MEMORY_HEADING, intro, *rendered, usage])
