"""Recovering from a context-overflow error by dropping the oldest material.

Order of sacrifice: earlier conversation turns first (oldest first), then the oldest tool rounds
of this run. The system prompt and the current question are never dropped, and an assistant turn
is never separated from its tool results (providers reject orphaned tool messages).
"""

from __future__ import annotations

from collections.abc import Sequence

from dexter.models.types import AssistantMessage, Message, SystemMessage, ToolMessage


def drop_for_overflow(
    messages: Sequence[Message], *, query_index: int, keep_rounds: int
) -> tuple[list[Message], int, int]:
    """Return (new messages, messages removed, new query index)."""
    head = [m for m in messages[:query_index] if isinstance(m, SystemMessage)]
    history_removed = query_index - len(head)
    query = messages[query_index]
    tail = list(messages[query_index + 1 :])

    rounds: list[list[Message]] = []
    loose: list[tuple[int, Message]] = []  # user follow-ups, kept in place relative to rounds
    for message in tail:
        if isinstance(message, AssistantMessage):
            rounds.append([message])
        elif isinstance(message, ToolMessage) and rounds:
            rounds[-1].append(message)
        else:
            loose.append((len(rounds), message))

    drop = max(0, len(rounds) - keep_rounds)
    rebuilt: list[Message] = []
    loose_iter = iter(loose)
    pending = next(loose_iter, None)
    for index, round_messages in enumerate(rounds):
        while pending is not None and pending[0] <= index:
            rebuilt.append(pending[1])
            pending = next(loose_iter, None)
        if index >= drop:
            rebuilt.extend(round_messages)
    while pending is not None:
        rebuilt.append(pending[1])
        pending = next(loose_iter, None)

    removed_rounds = sum(len(r) for r in rounds[:drop])
    new_messages: list[Message] = [*head, query, *rebuilt]
    return new_messages, history_removed + removed_rounds, len(head)
