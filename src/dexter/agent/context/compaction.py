"""Condensing a long run into a structured summary, with the input to the summariser bounded.

The rebuilt conversation is: the system prompt, ONE user message (the original question verbatim,
the summary, the standing constraints and every follow-up the user sent during the run, verbatim),
then the last rounds verbatim so the model keeps its immediate working state. One user message
rather than several, because stricter providers reject consecutive user turns.

The summariser never sees more than `max_input_tokens`: larger material is cut into chunks that
are summarised one by one and then merged (repeatedly, if the partial summaries are still large).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from dexter.agent.context.budget import estimate_messages, estimate_request, estimate_tokens
from dexter.errors import DexterError
from dexter.models.base import Model, complete_by_streaming
from dexter.models.errors import ModelError
from dexter.models.types import (
    AssistantMessage,
    Message,
    ModelRequest,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)

SUMMARY_OUTPUT_TOKENS = 4_000
# Below this much room for material per call, chunking would take absurdly many calls.
MIN_MATERIAL_CHARS = 2_000
# Slack for the few characters that vary between calls (part numbers).
SAFETY_CHARS = 64

# Tags that frame the compacted user message; a later compaction parses them back, so that the
# question, follow-ups and earlier summary are carried forward instead of nested ever deeper.
CONTEXT_OPEN = "<compacted-context>"
CONTEXT_CLOSE = "</compacted-context>"


class CompactionFailed(DexterError):
    """The summary could not be produced; the caller falls back to truncation."""


@dataclass(frozen=True, slots=True)
class CompactionResult:
    messages: list[Message]
    summary: str
    usage: Usage
    tokens_before: int
    tokens_after: int
    # Index of the user message carrying the question in `messages`.
    query_index: int
    summary_calls: int


@dataclass(frozen=True, slots=True)
class CompactionEstimate:
    material_tokens: int
    cost: int
    saving: int


@dataclass(frozen=True, slots=True)
class _Split:
    head: list[Message]
    question: str
    earlier_summary: str | None
    follow_ups: list[str]
    material: list[str]
    kept: list[Message]


_SYSTEM = (
    "You condense a financial research session so the work can continue in a smaller context. "
    "Reply in plain text only; you cannot call tools. Never round, convert or drop a number: "
    "copy each figure exactly, with its period, unit and source id."
)

_SECTIONS = (
    "Write the summary under these headings:\n"
    "## Question and intent\n"
    "## Data gathered\n"
    "One bullet per figure: entity, metric, exact value and unit, period, source id such as "
    "[S3] when one is given, and the tool call (name and arguments) that produced it. Include "
    "every figure; leave nothing out because it seems minor.\n"
    "## Sources\n"
    "Each source id, filing, document or URL referred to, and where cleared or stored results "
    "can be read back (keep any file path exactly).\n"
    "## What remains\n"
    "Data still missing, errors and empty or failed calls.\n"
    "## Next steps"
)


def _task(merging: bool, part: tuple[int, int] | None) -> str:
    what = "partial summaries of one research session" if merging else "a research transcript"
    if part is None:
        return f"Below are {what}. Write one complete summary of the session."
    index, total = part
    return (
        f"Below is part {index} of {total} of {what}. Summarise this part only; later parts "
        "are summarised separately and merged."
    )


def _user_text(
    question: str,
    constraints: Sequence[str],
    material: str,
    *,
    merging: bool,
    part: tuple[int, int] | None,
) -> str:
    lines = [_task(merging, part), "", _SECTIONS, "", "Original question:", question]
    if constraints:
        lines += ["", "Standing constraints from the user:", *(f"- {c}" for c in constraints)]
    lines += ["", "--- material ---", material, "--- end of material ---", ""]
    lines.append("Now write the summary. Every figure above must appear in it, exactly.")
    return "\n".join(lines)


def _request(
    question: str,
    constraints: Sequence[str],
    material: str,
    *,
    merging: bool,
    part: tuple[int, int] | None,
    max_output: int,
) -> ModelRequest:
    text = _user_text(question, constraints, material, merging=merging, part=part)
    return ModelRequest(
        messages=[SystemMessage(_SYSTEM), UserMessage(text)], max_output_tokens=max_output
    )


# ---- the compacted message ----------------------------------------------------------------


def compose_user_message(
    question: str, summary: str, constraints: Sequence[str], follow_ups: Sequence[str]
) -> str:
    parts = [
        question,
        "",
        CONTEXT_OPEN,
        "Earlier research in this run was condensed to fit the context window. The summary "
        "keeps every figure gathered so far; continue from it toward the answer without "
        "recapping it and without re-fetching data it already holds.",
        "<summary>",
        summary,
        "</summary>",
    ]
    if constraints:
        parts += [
            "<standing-constraints>",
            *(f"- {c}" for c in constraints),
            "</standing-constraints>",
        ]
    if follow_ups:
        parts.append("<user-follow-ups>")
        for text in follow_ups:
            parts += ["<follow-up>", text, "</follow-up>"]
        parts.append("</user-follow-ups>")
    parts.append(CONTEXT_CLOSE)
    return "\n".join(parts)


_SUMMARY_RE = re.compile(r"<summary>\n(.*?)\n</summary>", re.DOTALL)
_FOLLOW_UP_RE = re.compile(r"<follow-up>\n(.*?)\n</follow-up>", re.DOTALL)


def parse_user_message(content: str) -> tuple[str, str | None, list[str]]:
    """(question, earlier summary, follow-ups) of a message built by `compose_user_message`."""
    marker = "\n\n" + CONTEXT_OPEN + "\n"
    if marker not in content:
        return content, None, []
    question, rest = content.split(marker, 1)
    summary = _SUMMARY_RE.search(rest)
    return question, summary.group(1) if summary else None, _FOLLOW_UP_RE.findall(rest)


# ---- splitting the conversation -----------------------------------------------------------


def _render(message: Message) -> str:
    if isinstance(message, AssistantMessage):
        lines = [f"[assistant] {message.content.strip()}".rstrip()]
        lines += [f"  -> called {c.name}({c.arguments}) id={c.id}" for c in message.tool_calls]
        return "\n".join(lines)
    if isinstance(message, ToolMessage):
        flag = " ERROR" if message.is_error else ""
        return (
            f"[tool result{flag}: {message.name}, call {message.tool_call_id}]\n{message.content}"
        )
    if isinstance(message, UserMessage):
        return f"[user] {message.content}"
    return f"[system] {message.content}"


def _split(messages: Sequence[Message], query_index: int, keep_rounds: int) -> _Split:
    if not 0 <= query_index < len(messages):
        raise CompactionFailed(f"query index {query_index} is outside the conversation")
    head: list[Message] = [m for m in messages[:query_index] if isinstance(m, SystemMessage)]
    history = [m for m in messages[:query_index] if not isinstance(m, SystemMessage)]
    question, earlier_summary, follow_ups = parse_user_message(messages[query_index].content)

    tail = list(messages[query_index + 1 :])
    # A round starts at an assistant turn and owns the tool results after it; rounds are kept or
    # summarised whole, because providers reject a tool result without its call.
    starts = [i for i, m in enumerate(tail) if isinstance(m, AssistantMessage)]
    keep_from = starts[-keep_rounds] if keep_rounds > 0 and len(starts) >= keep_rounds else None
    if keep_rounds > 0 and keep_from is None and starts:
        keep_from = starts[0]
    cut = len(tail) if keep_from is None else keep_from

    material: list[str] = []
    if history:
        material.append("Earlier conversation:\n" + "\n".join(_render(m) for m in history))
    if earlier_summary:
        material.append("Summary of research earlier in this run:\n" + earlier_summary)
    kept: list[Message] = []
    for index, message in enumerate(tail):
        if isinstance(message, UserMessage):
            # Follow-ups go verbatim into the new user message wherever they were sent.
            follow_ups.append(message.content)
            if index < cut:
                material.append(_render(message))
        elif index < cut:
            material.append(_render(message))
        else:
            kept.append(message)
    return _Split(head, question, earlier_summary, follow_ups, material, kept)


# ---- chunking -----------------------------------------------------------------------------


def _pieces(blocks: Sequence[str], room: int) -> list[str]:
    """Blocks no longer than `room` characters; an oversized block is cut into labelled slices."""
    out: list[str] = []
    label = "(continued) "
    for block in blocks:
        if len(block) <= room:
            out.append(block)
            continue
        step = room - len(label)
        for start in range(0, len(block), step):
            out.append((label if start else "") + block[start : start + step])
    return out


def _pack(pieces: Sequence[str], room: int) -> list[str]:
    groups: list[str] = []
    current = ""
    for piece in _pieces(pieces, room):
        if current and len(current) + 2 + len(piece) > room:
            groups.append(current)
            current = piece
        else:
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        groups.append(current)
    return groups


def _material_room(
    question: str, constraints: Sequence[str], max_input_tokens: int, max_output: int
) -> int:
    """Characters of material that fit in one summary request under `max_input_tokens`."""
    empty = max(
        estimate_request(
            _request(question, constraints, "", merging=merging, part=part, max_output=max_output)
        )
        for merging in (False, True)
        for part in (None, (999, 999))
    )
    # +1: the user message's token estimate rounds up once over the whole text.
    room_tokens = max_input_tokens - empty - 1
    return int(room_tokens * 3.5) - SAFETY_CHARS


_ANALYSIS_RE = re.compile(r"<analysis>.*?</analysis>", re.DOTALL)
_WRAPPED_RE = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)


def _clean(text: str) -> str:
    text = _ANALYSIS_RE.sub("", text, count=1)
    wrapped = _WRAPPED_RE.search(text)
    if wrapped:
        text = wrapped.group(1)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# ---- compaction ---------------------------------------------------------------------------


async def compact(
    messages: Sequence[Message],
    *,
    model: Model,
    query_index: int,
    constraints: Sequence[str],
    keep_rounds: int = 2,
    max_input_tokens: int,
) -> CompactionResult:
    """Summarise everything but the last `keep_rounds` rounds with `model` (the fast model).

    Raises CompactionFailed if the model fails, returns nothing, or the bound is too small.
    """
    split = _split(messages, query_index, keep_rounds)
    question = split.question
    # A pasted document as the question would otherwise eat the material room of every call; it
    # is carried verbatim in the rebuilt message regardless.
    prompt_question = question if len(question) <= 4_000 else question[:4_000] + " […]"
    max_output = min(SUMMARY_OUTPUT_TOKENS, max(256, max_input_tokens // 4))
    room = _material_room(prompt_question, constraints, max_input_tokens, max_output)
    if room < MIN_MATERIAL_CHARS:
        raise CompactionFailed(
            f"max_input_tokens={max_input_tokens} leaves no room for material to summarise"
        )

    usage = Usage()
    calls = 0

    async def summarise(material: str, *, merging: bool, part: tuple[int, int] | None) -> str:
        nonlocal usage, calls
        request = _request(
            prompt_question,
            constraints,
            material,
            merging=merging,
            part=part,
            max_output=max_output,
        )
        size = estimate_request(request)
        if size > max_input_tokens:  # a packing bug must never turn into an oversized request
            raise CompactionFailed(f"summary request of {size} tokens exceeds {max_input_tokens}")
        calls += 1
        try:
            response = await complete_by_streaming(model, request)
        except ModelError as error:
            raise CompactionFailed(f"summary call failed: {error}") from error
        usage = usage + response.usage
        text = _clean(response.message.content)
        if not text:
            raise CompactionFailed("summary call returned no text")
        return text

    pieces = split.material or ["(No tool calls were made yet.)"]
    merging = False
    previous_groups: int | None = None
    while True:
        groups = _pack(pieces, room)
        if len(groups) == 1:
            summary = await summarise(groups[0], merging=merging, part=None)
            break
        if previous_groups is not None and len(groups) >= previous_groups:
            raise CompactionFailed("partial summaries are too long to merge within the bound")
        previous_groups = len(groups)
        partials: list[str] = []
        for index, group in enumerate(groups, 1):
            partial = await summarise(group, merging=merging, part=(index, len(groups)))
            partials.append(f"Partial summary {index} of {len(groups)}:\n{partial}")
        pieces = partials
        merging = True

    user = UserMessage(compose_user_message(question, summary, constraints, split.follow_ups))
    new_messages: list[Message] = [*split.head, user, *split.kept]
    return CompactionResult(
        messages=new_messages,
        summary=summary,
        usage=usage,
        tokens_before=estimate_messages(messages),
        tokens_after=estimate_messages(new_messages),
        query_index=len(split.head),
        summary_calls=calls,
    )


def estimate_compaction(
    messages: Sequence[Message],
    *,
    query_index: int,
    keep_rounds: int = 2,
    remaining_calls: int = 1,
) -> CompactionEstimate:
    """Rough cost of compacting now and what it would save over the rest of the run.

    Cost: the material sent to the summariser plus the summary written. Saving: the tokens taken
    out of the context, minus the summary put back, on each of the `remaining_calls` requests.
    """
    try:
        split = _split(messages, query_index, keep_rounds)
    except CompactionFailed:
        return CompactionEstimate(0, 0, 0)
    material = sum(estimate_tokens(block) for block in split.material)
    summary = min(SUMMARY_OUTPUT_TOKENS, max(300, material // 5))
    removed = estimate_messages(messages) - estimate_messages([*split.head, *split.kept])
    per_call = max(0, removed - summary)
    return CompactionEstimate(
        material_tokens=material,
        cost=material + summary,
        saving=per_call * max(0, remaining_calls),
    )


def worth_compacting(
    tokens_before: int, estimated_summary_cost: int, estimated_saving: int
) -> bool:
    """Summarise only when that costs fewer tokens than it saves; otherwise drop old rounds."""
    if tokens_before <= 0 or estimated_saving <= 0:
        return False
    return estimated_summary_cost < estimated_saving
