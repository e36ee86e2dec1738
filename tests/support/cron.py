"""A clock the test moves by hand, and an executor that answers from a script."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta

from dexter.cron.delivery import Alert, DeliveryError
from dexter.cron.executor import Outcome
from dexter.cron.model import Job


class FakeClock:
    def __init__(self, start: datetime) -> None:
        self.current = start
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self.current

    def advance(self, **kwargs: float) -> None:
        self.current += timedelta(**kwargs)

    def set(self, moment: datetime) -> None:
        self.current = moment

    async def sleep(self, seconds: float) -> None:
        # Time passes instantly, and the loop gets a turn so other tasks progress.
        self.sleeps.append(seconds)
        self.current += timedelta(seconds=seconds)
        await asyncio.sleep(0)


class StoppingClock(FakeClock):
    """A FakeClock that sets `stop` once the loop has slept `sleeps` times."""

    def __init__(self, start: datetime, stop: asyncio.Event, *, sleeps: int) -> None:
        super().__init__(start)
        self.stop = stop
        self.limit = sleeps

    async def sleep(self, seconds: float) -> None:
        await super().sleep(seconds)
        if len(self.sleeps) >= self.limit:
            self.stop.set()


Answer = str | Exception | Callable[[Job, str], "str | Outcome"]


class ScriptedExecutor:
    """Answers each run with the next scripted item (text, an Outcome, or an exception)."""

    def __init__(self, *answers: Answer | Outcome, default: str | None = None) -> None:
        self.answers: list[Answer | Outcome] = list(answers)
        self.default = default
        self.prompts: list[tuple[str, str]] = []

    async def execute(self, job: Job, prompt: str) -> Outcome:
        self.prompts.append((job.id, prompt))
        await asyncio.sleep(0)
        if self.answers:
            item = self.answers.pop(0)
        elif self.default is not None:
            item = self.default
        else:
            raise AssertionError(f"unexpected run of {job.name}")
        if isinstance(item, Exception):
            raise item
        if callable(item):
            item = item(job, prompt)
        return item if isinstance(item, Outcome) else Outcome(answer=item)

    @property
    def runs(self) -> int:
        return len(self.prompts)


class RecordingDeliverer:
    """Delivers into a list; fails the first `failures` attempts."""

    def __init__(self, scheme: str, failures: int = 0) -> None:
        self.scheme = scheme
        self.failures = failures
        self.delivered: list[Alert] = []
        self.attempts = 0

    async def deliver(self, alert: Alert) -> None:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise DeliveryError("chat service unavailable (HTTP 502)")
        self.delivered.append(alert)
