"""One agent's model choice, handed out per phase: retried under one policy, then recorded.

Every phase model (main loop, router, compaction, constraints, memory flush, sub-agents) is
`RecordingModel(with_retry(client, policy), sink, phase=…)`: the retry policy from settings is
applied once, here, and each attempt a retry gave up on still reaches the ledger as a failed call
(through the retrying model's `on_retry`).
Call sites just call `stream` / `complete`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dexter.models.base import Model
from dexter.models.recording import RecordingModel, Sink
from dexter.models.retry import RetryPolicy, with_retry
from dexter.models.tuning import Sampling
from dexter.models.types import RetryNotice


@dataclass(frozen=True)
class PhaseModels:
    """The clients one agent calls: `main`, and `fast` for the cheap phases (None when the
    fast model could not be built; those phases then use the main model or fail as tools)."""

    main: Model
    fast: Model | None
    fast_spec: str
    fast_window: int | None
    sink: Sink
    retry: RetryPolicy
    # How `main` and `fast` were tuned (an evaluation's temperature and seed, its response
    # cache), so a mid-session model switch tunes the new clients the same way.
    sampling: Sampling = field(default_factory=Sampling)
    cached: bool = False

    def wrap(self, client: Model, phase: str) -> Model:
        return retried_and_recorded(client, self.retry, self.sink, phase)

    def phase(self, name: str) -> Model:
        return self.wrap(self.main, name)

    def fast_phase(self, name: str) -> Model | None:
        return self.wrap(self.fast, name) if self.fast is not None else None

    def fast_or_main(self, name: str) -> Model:
        return self.fast_phase(name) or self.phase(name)


def retried_and_recorded(client: Model, policy: RetryPolicy, sink: Sink, phase: str) -> Model:
    """`client` retried under `policy`, each call and each retried attempt recorded to `sink`."""
    recorded: RecordingModel | None = None

    def note(notice: RetryNotice) -> None:
        if recorded is not None:
            recorded.note_retry(notice)

    recorded = RecordingModel(with_retry(client, policy, on_retry=note), sink, phase=phase)
    return recorded


__all__ = ["PhaseModels", "retried_and_recorded"]
