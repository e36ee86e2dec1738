"""Before context is compacted, keep what the user said about themselves.

The fast model reads the user's OWN messages from the run (the run's findings only as context, to
resolve what "it" or "that stock" refers to) and answers with a JSON list of short, durable facts
about the user: preferences, holdings, goals, decisions, corrections; or an empty list. Output
that is not such a list is treated as "nothing"; each fact then passes the same checks as
`memory_update` (short, not market data, not already remembered) and the accepted ones are
appended to today's daily note under a "## Noted" heading.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from dexter.memory.files import EVERGREEN_NAME
from dexter.memory.tools import entry_problem, normalise_entry
from dexter.models.base import Model, complete_by_streaming
from dexter.models.errors import ModelError
from dexter.models.types import ModelRequest, SystemMessage, UserMessage

if TYPE_CHECKING:
    from dexter.memory.backend import MemoryDocuments

__all__ = ["MAX_FACTS", "NOTED_HEADING", "flush_memories", "parse_facts"]

NOTED_HEADING = "## Noted"
MAX_FACTS = 8
MAX_FACT_CHARS = 300
MAX_USER_CHARS = 12_000
MAX_FINDINGS_CHARS = 6_000
FLUSH_OUTPUT_TOKENS = 600

_INSTRUCTIONS = """\
You maintain a personal memory for a financial research assistant. The conversation is about to \
be shortened, so decide what is worth remembering about the USER for future sessions.

Use only what the user states about themselves in their own messages: investment preferences \
and style, holdings and trades they made (ticker, shares, cost), financial goals and time \
horizons, risk tolerance, accounts and tax situation, decisions they took, and corrections to \
earlier facts. The research findings are context only (to resolve what the user referred to); \
never turn findings, prices, quotes or market data into memories, and do not guess.

Answer with a JSON array of strings and nothing else. Each string is one short, self-contained \
fact in the third person, e.g. ["Holds 200 NVDA at an average cost of $410."]. \
If there is nothing durable, answer []."""

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def _clip(text: str, limit: int, *, keep_end: bool = False) -> str:
    if len(text) <= limit:
        return text
    return "…" + text[-limit:] if keep_end else text[:limit] + "…"


def _request(user_messages: Sequence[str], findings: str) -> ModelRequest:
    said = "\n".join(
        f"{n}. {message.strip()}" for n, message in enumerate(user_messages, 1) if message.strip()
    )
    context = findings.strip() or "(no findings yet)"
    prompt = (
        "The user's own messages, oldest first:\n"
        f"{_clip(said, MAX_USER_CHARS, keep_end=True)}\n\n"
        "Research findings so far (context only, not memories):\n"
        f"{_clip(context, MAX_FINDINGS_CHARS)}\n\n"
        "Reply with the JSON array of durable facts about the user, or []."
    )
    return ModelRequest(
        messages=[SystemMessage(_INSTRUCTIONS), UserMessage(prompt)],
        max_output_tokens=FLUSH_OUTPUT_TOKENS,
    )


def parse_facts(text: str) -> list[str]:
    """The facts in a model reply: a JSON array of strings, tolerating fences and chatter.

    Anything else (prose, "nothing", an object, broken JSON) is no facts.
    """
    body = _FENCE.sub("", text.strip())
    start, end = body.find("["), body.rfind("]")
    if start < 0 or end <= start:
        return []
    try:
        value: Any = json.loads(body[start : end + 1])
    except json.JSONDecodeError:
        return []
    if not isinstance(value, list):
        return []
    facts: list[str] = []
    for item in value:
        if isinstance(item, str):
            fact = " ".join(item.split()).lstrip("-*• ").strip()
            if fact:
                facts.append(fact)
    return facts


async def flush_memories(
    model: Model,
    *,
    user_messages: list[str],
    findings: str,
    files: MemoryDocuments,
    today: date | None = None,
) -> list[str]:
    """Ask `model` for durable facts about the user and append the accepted ones to today's note.

    Returns the facts written (empty when there was nothing, the reply was unusable, or the model
    call failed: a flush must never break the run it protects).
    """
    if not any(message.strip() for message in user_messages):
        return []
    try:
        response = await complete_by_streaming(model, _request(user_messages, findings))
    except ModelError:
        return []
    name = files.daily_name(today)
    texts = await asyncio.to_thread(lambda: [files.read(n) for n in (name, EVERGREEN_NAME)])
    known = {normalise_entry(line) for text in texts for line in text.splitlines() if line.strip()}
    accepted: list[str] = []
    for fact in parse_facts(response.message.content):
        if len(fact) > MAX_FACT_CHARS or entry_problem(fact) is not None:
            continue
        key = normalise_entry(fact)
        if not key or key in known:
            continue
        known.add(key)
        accepted.append(fact)
        if len(accepted) >= MAX_FACTS:
            break
    if not accepted:
        return []
    bullets = "\n".join(f"- {fact}" for fact in accepted)
    noted = _last_heading(await asyncio.to_thread(files.read, name)) == NOTED_HEADING
    entry = bullets if noted else f"{NOTED_HEADING}\n{bullets}"
    await asyncio.to_thread(files.append, name, entry)
    return accepted


def _last_heading(text: str) -> str | None:
    headings = [line.strip() for line in text.splitlines() if line.startswith("#")]
    return headings[-1] if headings else None
