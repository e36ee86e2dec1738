"""Wiring the runner and the tools to a Runtime: settings, deliverers, executor.

cron:  {"tickSeconds": 30, "missedGraceMinutes": 15, "maxConcurrentRuns": 2,
        "runTimeoutMinutes": 15}   (settings.json; env DEXTER_CRON_TICK_SECONDS wins)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from dexter.config import ConfigError, Settings
from dexter.cron.delivery import Deliverer
from dexter.cron.policy import MISSED_GRACE
from dexter.cron.runner import DEFAULT_RUN_TIMEOUT, DEFAULT_TICK, Runner
from dexter.cron.store import CronStore

if TYPE_CHECKING:
    from dexter.cron.clock import Clock
    from dexter.cron.executor import JobExecutor
    from dexter.cron.owners import PrincipalResolver
    from dexter.runtime import Runtime
    from dexter.work.engine import PgQueue


@dataclass(frozen=True)
class CronSettings:
    tick_seconds: float = DEFAULT_TICK
    grace: timedelta = MISSED_GRACE
    max_concurrency: int = 2
    run_timeout: timedelta = DEFAULT_RUN_TIMEOUT


def _number(raw: object, where: str, *, minimum: float) -> float:
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = float("nan")
    if not value >= minimum:
        raise ConfigError(f"{where} must be a number of at least {minimum:g}, got {raw!r}.")
    return value


def cron_settings(settings: Settings) -> CronSettings:
    section = settings.file_data.get("cron") or {}
    if not isinstance(section, dict):
        raise ConfigError(f'"cron" in {settings.settings_path} must be an object.')
    where = f"in {settings.settings_path}"
    tick_raw: object = settings.env.get("DEXTER_CRON_TICK_SECONDS") or section.get("tickSeconds")
    tick = (
        DEFAULT_TICK if tick_raw in (None, "") else _number(tick_raw, "the cron tick", minimum=0.05)
    )
    grace = section.get("missedGraceMinutes")
    concurrency = section.get("maxConcurrentRuns")
    timeout = section.get("runTimeoutMinutes")
    return CronSettings(
        tick_seconds=tick,
        grace=MISSED_GRACE
        if grace is None
        else timedelta(minutes=_number(grace, f'"cron.missedGraceMinutes" {where}', minimum=0)),
        max_concurrency=2
        if concurrency is None
        else int(_number(concurrency, f'"cron.maxConcurrentRuns" {where}', minimum=1)),
        run_timeout=DEFAULT_RUN_TIMEOUT
        if timeout is None
        else timedelta(minutes=_number(timeout, f'"cron.runTimeoutMinutes" {where}', minimum=1)),
    )


def make_runner(
    runtime: Runtime,
    *,
    deliverers: Mapping[str, Deliverer] | None = None,
    clock: Clock | None = None,
    log: Callable[[str], None] | None = None,
    principal_for: PrincipalResolver | None = None,
    queue: PgQueue | None = None,
) -> Runner:
    """The runner over `runtime`'s store, with agent runs built by it. `deliverers` default to
    the local ones (desktop, file); the gateway passes its channels' deliverers in addition.
    `principal_for` says who a job's owner is when it runs (default: the principals table,
    with no grants beyond the default; a front door that knows grants passes its own).
    With a team `queue` (open while the runner runs), agent runs go to `dexter worker`s."""
    from dexter.cron.agent_executor import AgentExecutor
    from dexter.cron.clock import SystemClock
    from dexter.cron.local import local_deliverers
    from dexter.data.sec.provider import SecEdgarProvider
    from dexter.watch.service import WatchExecutor
    from dexter.watch.store import WatchStore

    config = cron_settings(runtime.settings)
    chosen: dict[str, Deliverer] = local_deliverers(runtime.settings.home)
    chosen.update(deliverers or {})
    timer = clock or SystemClock()
    by_kind: dict[str, JobExecutor] = {}
    try:
        sec = runtime.data_router.provider_of_type(SecEdgarProvider)
    except ConfigError:
        sec = None  # bad data settings: agent jobs report it when they run; no watches polled
    if sec is not None:
        # The filing watches' poll job (dexter.watch) runs without the agent.
        by_kind["watch"] = WatchExecutor(WatchStore(runtime.store), sec, timer, log)
    agents: JobExecutor = AgentExecutor(runtime, principal_for)
    if queue is not None:
        from dexter.cron.queued import QueuedExecutor

        agents = QueuedExecutor(queue, queue.url)
    return Runner(
        CronStore(runtime.store),
        agents,
        home=runtime.settings.home,
        deliverers=chosen,
        clock=timer,
        tick_seconds=config.tick_seconds,
        max_concurrency=config.max_concurrency,
        run_timeout=config.run_timeout,
        grace=config.grace,
        log=log,
        kind_executors=by_kind,
    )
