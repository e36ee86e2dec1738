"""The small interface front doors and workers share: enqueue a run of a kind, for a principal,
in a conversation; handlers by kind; limits.

`key` is the conversation: runs with the same key run one at a time, in the order they were
enqueued (one chat's messages are answered in order); different keys run in parallel up to
each worker's concurrency. `run_id` names the run for good: enqueueing the same id twice is
one run, and what the run leaves (a reply, a result) is recorded under it once, so a run
repeated after its worker died never answers twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

# Queues by kind of work: chat turns, scheduled jobs and web questions do not wait behind each
# other's backlog in `dexter status`, and a worker may serve only some of them.
CHAT = "chat"
SCHEDULE = "schedule"
# Questions asked in `dexter web`, streamed back to the page through `work.runlog`.
WEB = "web"
KINDS = (CHAT, SCHEDULE, WEB)

DEFAULT_CONCURRENCY = 4


@dataclass(frozen=True, slots=True)
class RunRequest:
    kind: str
    run_id: str
    # Whose data the run touches (a principal id); shown by `dexter status`, checked again by
    # the handler, which resolves the principal itself.
    principal_id: str
    key: str
    payload: Mapping[str, Any]
    # 0 the first time; more when the run is tried again (its worker died, or it failed).
    attempt: int = 0


Handler = Callable[[RunRequest], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Limits:
    """How much one worker does at once. The whole team does at most the sum over its workers,
    and at most DEXTER_QUEUE_MAX_RUNNING when that is set (`limits`); runs of one conversation
    never overlap whatever the limits."""

    concurrency: int = DEFAULT_CONCURRENCY
    # Which kinds this worker takes (default: all).
    kinds: tuple[str, ...] = KINDS


class WorkQueue(Protocol):
    async def enqueue(self, request: RunRequest) -> None:
        """Durably accept `request`; returns once it is stored, not when it has run."""
        ...


class UnknownKind(ValueError):
    pass


def handler_for(handlers: Mapping[str, Handler], kind: str) -> Handler:
    try:
        return handlers[kind]
    except KeyError:
        raise UnknownKind(f"no handler for runs of kind {kind!r} in this worker") from None
