"""The runner with a fake clock and a scripted executor: what fires, what is said, what waits."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from dexter.cron import jobs as job_api
from dexter.cron.executor import Outcome
from dexter.cron.model import Job
from dexter.cron.prompts import HEARTBEAT_FILE
from dexter.cron.runner import Runner
from dexter.cron.schedule import parse_at, parse_cron, parse_every
from dexter.cron.store import CronStore
from dexter.store import open_store
from tests.support.cron import FakeClock, RecordingDeliverer, ScriptedExecutor, StoppingClock

START = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)  # Tuesday 10:00 in New York


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def cron(home: Path) -> CronStore:
    return CronStore(open_store(home))


def runner(
    cron: CronStore, home: Path, clock: FakeClock, executor: ScriptedExecutor, **kwargs: object
) -> Runner:
    return Runner(cron, executor, home=home, clock=clock, user_zone="UTC", **kwargs)  # type: ignore[arg-type]


def every_job(
    cron: CronStore,
    *,
    every: str = "1h",
    target: str | None = None,
    fulfillment: str | None = None,
    name: str = "NVDA watch",
) -> Job:
    return job_api.create_job(
        cron,
        name=name,
        message="Tell me when NVDA files its 10-Q.",
        schedule=parse_every(every, anchor=START),
        now=START,
        target=target,
        fulfillment=fulfillment,
    )


async def pass_(r: Runner) -> None:
    await r.tick()
    await r.drain()


async def test_a_due_job_runs_once_and_its_alert_lands_in_the_outbox(
    cron: CronStore, home: Path
) -> None:
    clock = FakeClock(START)
    job = every_job(cron)
    executor = ScriptedExecutor("NVDA filed its 10-Q at 16:05 ET: revenue $57.0B [S1].")
    r = runner(cron, home, clock, executor)
    await pass_(r)
    assert executor.runs == 0  # not due yet
    clock.advance(hours=1)
    await pass_(r)
    await pass_(r)  # a second tick at the same time does not re-run it
    assert executor.runs == 1
    assert executor.prompts[0][1].startswith("[SCHEDULED JOB: NVDA watch]")
    [alert] = cron.outbox()
    assert alert.text.startswith("NVDA filed its 10-Q")
    assert (alert.status, alert.target) == ("delivered", "outbox")
    stored = cron.get(job.id)
    assert stored is not None
    assert stored.state.last_status == "ok"
    assert stored.state.next_run_at == START + timedelta(hours=2)


async def test_heartbeat_ok_is_never_delivered_and_duplicates_stay_quiet_across_restarts(
    cron: CronStore, home: Path
) -> None:
    clock = FakeClock(START)
    job = every_job(cron)
    first = runner(cron, home, clock, ScriptedExecutor("HEARTBEAT_OK", "S&P 500 fell 2.4%."))
    for _ in range(2):
        clock.advance(hours=1)
        await pass_(first)
    assert [i.text for i in cron.outbox()] == ["S&P 500 fell 2.4%."]
    # A new process (fresh runner, same database) remembers what it last said.
    again = runner(cron, home, clock, ScriptedExecutor("S&P 500 fell 2.4%.", "No action needed."))
    for _ in range(2):
        clock.advance(hours=1)
        await pass_(again)
    assert len(cron.outbox()) == 1
    statuses = [(r.status, r.reason) for r in reversed(cron.runs(job.id))]
    assert statuses == [
        ("suppressed", "ok-token"),
        ("ok", ""),
        ("suppressed", "duplicate"),
        ("suppressed", "no-action"),
    ]


async def test_two_runners_on_one_database_fire_a_job_once(home: Path) -> None:
    clock = FakeClock(START)
    first_store = CronStore(open_store(home))
    second_store = CronStore(open_store(home))  # a second connection, as a second daemon has
    every_job(first_store)
    slow_a = ScriptedExecutor("Alert A")
    slow_b = ScriptedExecutor("Alert B")
    a = runner(first_store, home, clock, slow_a, owner="daemon-a")
    b = runner(second_store, home, clock, slow_b, owner="daemon-b")
    clock.advance(hours=1)
    await asyncio.gather(a.tick(), b.tick())
    await asyncio.gather(a.drain(), b.drain())
    assert slow_a.runs + slow_b.runs == 1
    assert len(first_store.outbox()) == 1


async def test_a_held_lease_blocks_the_other_runner_until_it_expires(
    cron: CronStore, home: Path
) -> None:
    clock = FakeClock(START + timedelta(hours=1))
    job = every_job(cron)
    # Another runner took the job and died without releasing it.
    assert cron.claim(job.id, "crashed", clock.now(), clock.now() + timedelta(minutes=5))
    executor = ScriptedExecutor("late alert")
    r = runner(cron, home, clock, executor, grace=timedelta(hours=1))
    await pass_(r)
    assert executor.runs == 0
    clock.advance(minutes=6)
    await pass_(r)
    assert executor.runs == 1


async def test_delivery_failure_is_retried_with_backoff_and_never_reruns_the_job(
    cron: CronStore, home: Path
) -> None:
    clock = FakeClock(START)
    job = every_job(cron, target="telegram:42")
    chat = RecordingDeliverer("telegram", failures=2)
    executor = ScriptedExecutor("NVDA filed its 10-Q.")
    r = runner(cron, home, clock, executor, deliverers={"telegram": chat})
    clock.advance(hours=1)
    await pass_(r)
    [item] = cron.outbox()
    assert (item.status, item.attempts) == ("pending", 1)
    assert item.last_error is not None and "502" in item.last_error
    assert item.next_attempt_at == clock.now() + timedelta(seconds=30)
    clock.advance(seconds=29)
    await pass_(r)
    assert chat.attempts == 1  # not before the backoff
    clock.advance(seconds=1)
    await pass_(r)
    assert chat.attempts == 2
    assert cron.outbox()[0].next_attempt_at == clock.now() + timedelta(minutes=1)
    clock.advance(minutes=1)
    await pass_(r)
    assert [a.text for a in chat.delivered] == ["NVDA filed its 10-Q."]
    assert cron.outbox()[0].status == "delivered"
    assert executor.runs == 1  # the research ran once
    stored = cron.get(job.id)
    assert stored is not None and stored.state.last_status == "ok"


async def test_alerts_for_a_channel_this_runner_lacks_wait_for_one_that_has_it(
    cron: CronStore, home: Path
) -> None:
    clock = FakeClock(START + timedelta(hours=1))
    every_job(cron, target="slack:C123")
    daemon = runner(cron, home, clock, ScriptedExecutor("Fed raised rates 25 bp."))
    await pass_(daemon)
    assert cron.outbox()[0].status == "pending"
    slack = RecordingDeliverer("slack")
    gateway = runner(cron, home, clock, ScriptedExecutor(), deliverers={"slack": slack})
    await gateway.tick(jobs=False)
    await gateway.drain()
    assert [a.target for a in slack.delivered] == ["slack:C123"]
    assert cron.outbox()[0].status == "delivered"


async def test_errors_back_off_and_one_shots_give_up_after_three(
    cron: CronStore, home: Path
) -> None:
    clock = FakeClock(START)
    job = job_api.create_job(
        cron,
        name="Reminder",
        message="Summarise NVDA's earnings call.",
        schedule=parse_at("+10m", "UTC", now=START),
        now=START,
    )
    failing = ScriptedExecutor(*(RuntimeError("model unreachable") for _ in range(3)))
    r = runner(cron, home, clock, failing)
    clock.advance(minutes=10)
    await pass_(r)
    stored = cron.get(job.id)
    assert stored is not None
    assert stored.state.consecutive_errors == 1
    assert stored.state.next_run_at == clock.now() + timedelta(seconds=30)
    assert stored.state.last_error == "model unreachable"
    clock.advance(seconds=30)
    await pass_(r)
    clock.advance(minutes=1)
    await pass_(r)
    stored = cron.get(job.id)
    assert stored is not None
    assert failing.runs == 3
    assert not stored.enabled and stored.state.consecutive_errors == 3


async def test_recurring_error_then_success_resets_the_count(cron: CronStore, home: Path) -> None:
    clock = FakeClock(START)
    job = every_job(cron, every="1m")
    r = runner(
        cron,
        home,
        clock,
        ScriptedExecutor(RuntimeError("429"), RuntimeError("429"), "AAPL halted."),
    )
    waits = []
    for _ in range(3):
        stored = cron.get(job.id)
        assert stored is not None and stored.state.next_run_at is not None
        clock.set(stored.state.next_run_at)
        await pass_(r)
        after = cron.get(job.id)
        assert after is not None and after.state.next_run_at is not None
        waits.append(after.state.next_run_at - clock.now())
    # 1st error: max(1 m schedule, 30 s) = 1 m; 2nd: max(1 m, 1 m); then a normal minute.
    assert waits == [timedelta(minutes=1)] * 3
    final = cron.get(job.id)
    assert final is not None and final.state.consecutive_errors == 0


async def test_once_fulfillment_stops_after_the_first_alert(cron: CronStore, home: Path) -> None:
    clock = FakeClock(START)
    job = every_job(cron, fulfillment="once")
    r = runner(cron, home, clock, ScriptedExecutor("HEARTBEAT_OK", "NVDA crossed $200."))
    clock.advance(hours=1)
    await pass_(r)
    stored = cron.get(job.id)
    assert stored is not None and stored.enabled
    clock.advance(hours=1)
    await pass_(r)
    stored = cron.get(job.id)
    assert stored is not None and not stored.enabled


async def test_missed_runs_after_sleep_run_once_and_never_burst(
    cron: CronStore, home: Path
) -> None:
    clock = FakeClock(START)
    job = every_job(cron, every="30m")
    executor = ScriptedExecutor(default="HEARTBEAT_OK")
    r = runner(cron, home, clock, executor)
    # The laptop sleeps five hours; it wakes 10 minutes after a due time.
    clock.advance(hours=5, minutes=10)
    await pass_(r)
    await pass_(r)
    assert executor.runs == 1
    stored = cron.get(job.id)
    assert stored is not None
    assert stored.state.next_run_at == START + timedelta(hours=5, minutes=30)
    [run] = cron.runs(job.id)
    assert run.due_at == START + timedelta(hours=5)


async def test_a_daily_run_missed_by_hours_is_skipped_not_run_late(
    cron: CronStore, home: Path
) -> None:
    clock = FakeClock(START)
    job = job_api.create_job(
        cron,
        name="Open",
        message="Check the watchlist.",
        schedule=parse_cron("35 9 * * 1-5", "America/New_York", now=START),
        now=START,
    )
    executor = ScriptedExecutor()
    r = runner(cron, home, clock, executor)
    clock.set(datetime(2026, 12, 2, 18, 0, tzinfo=UTC))  # Wednesday 13:00 ET, 3.5 h late
    await pass_(r)
    assert executor.runs == 0
    [run] = cron.runs(job.id)
    assert run.status == "missed" and "3h25m" in run.reason
    stored = cron.get(job.id)
    assert stored is not None and stored.state.next_run_at == datetime(
        2026, 12, 3, 14, 35, tzinfo=UTC
    )


async def test_active_hours_across_midnight_in_the_runner(cron: CronStore, home: Path) -> None:
    start = datetime(2026, 12, 1, 23, 0, tzinfo=UTC)  # Tuesday 18:00 ET
    clock = FakeClock(start)
    job = job_api.create_job(
        cron,
        name="Overnight futures",
        message="Watch ES futures.",
        schedule=parse_every("1h", anchor=start),
        now=start,
        active=job_api.build_active("22:00-02:00", "America/New_York", "mon-fri"),
    )
    assert job.state.next_run_at == datetime(2026, 12, 2, 3, 0, tzinfo=UTC)  # 22:00 ET
    executor = ScriptedExecutor(default="HEARTBEAT_OK")
    r = runner(cron, home, clock, executor)
    fired = []
    for _ in range(6):
        stored = cron.get(job.id)
        assert stored is not None and stored.state.next_run_at is not None
        clock.set(stored.state.next_run_at)
        await pass_(r)
        fired.append(clock.now().astimezone().astimezone(UTC).strftime("%d %H:%M"))
    # 22:00, 23:00, 00:00, 01:00, 02:00 ET, then the next evening at 22:00 ET.
    assert fired == ["02 03:00", "02 04:00", "02 05:00", "02 06:00", "02 07:00", "03 03:00"]
    assert executor.runs == 6


async def test_empty_heartbeat_file_skips_without_a_model_call(cron: CronStore, home: Path) -> None:
    clock = FakeClock(START)
    job = job_api.set_heartbeat(cron, every="30m", now=START, active=None, target=None, model=None)
    executor = ScriptedExecutor("HEARTBEAT_OK")
    r = runner(cron, home, clock, executor)
    (home / HEARTBEAT_FILE).write_text("# Heartbeat\n\n-\n", encoding="utf-8")
    clock.advance(minutes=30)
    await pass_(r)
    assert executor.runs == 0
    assert cron.runs(job.id)[0].status == "skipped"
    (home / HEARTBEAT_FILE).write_text("- NVDA below $100\n", encoding="utf-8")
    clock.advance(minutes=30)
    await pass_(r)
    assert executor.runs == 1
    prompt = executor.prompts[0][1]
    assert prompt.startswith("[HEARTBEAT CHECK]") and "- NVDA below $100" in prompt
    assert "[SCHEDULED JOB" not in prompt  # wrapped once


async def test_refused_approvals_are_reported_in_the_alert(cron: CronStore, home: Path) -> None:
    clock = FakeClock(START + timedelta(hours=1))
    every_job(cron)
    outcome = Outcome("HEARTBEAT_OK", refused=('write_file {"path": "notes/nvda.md"}',))
    r = runner(cron, home, clock, ScriptedExecutor(outcome))
    await pass_(r)
    [alert] = cron.outbox()
    assert "need approval" in alert.text and "write_file" in alert.text


async def test_run_loop_sleeps_until_the_next_job_and_stops_cleanly(
    cron: CronStore, home: Path
) -> None:
    clock = FakeClock(START)
    every_job(cron, every="5m")
    stop = asyncio.Event()

    def third(_job: Job, _prompt: str) -> str:
        stop.set()
        return "HEARTBEAT_OK"

    executor = ScriptedExecutor("HEARTBEAT_OK", "HEARTBEAT_OK", third)
    r = runner(cron, home, clock, executor, tick_seconds=60)
    await asyncio.wait_for(r.run_forever(stop), timeout=10)
    assert executor.runs == 3
    # It never slept past a due job, and never longer than the tick.
    assert max(clock.sleeps) <= 60
    assert clock.now() >= START + timedelta(minutes=15)


class HangingExecutor:
    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def execute(self, job: Job, prompt: str) -> Outcome:
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_stopping_mid_run_records_it_and_frees_the_lease(cron: CronStore, home: Path) -> None:
    clock = FakeClock(START + timedelta(hours=1))
    job = every_job(cron)
    executor = HangingExecutor()
    r = Runner(cron, executor, home=home, clock=clock)
    await r.tick()
    await executor.started.wait()
    await r.stop_runs(grace=0.01)
    stored = cron.get(job.id)
    assert stored is not None
    assert stored.state.last_status == "error"
    assert stored.state.last_error == "the runner stopped before the run finished"
    # Recurring: the later of the normal next run and the first backoff.
    assert stored.state.next_run_at == clock.now() + timedelta(hours=1)
    assert cron.runs(job.id)[0].status == "error"
    # The lease is free: another runner can take the next run when it is due.
    clock.advance(hours=1)
    assert cron.claim(job.id, "other", clock.now(), clock.now() + timedelta(minutes=1))


async def test_the_loop_does_not_spin_while_a_run_is_in_flight(cron: CronStore, home: Path) -> None:
    stop = asyncio.Event()
    clock = StoppingClock(START + timedelta(hours=1), stop, sleeps=4)
    every_job(cron)
    executor = HangingExecutor()
    r = Runner(cron, executor, home=home, clock=clock, tick_seconds=30)
    r.stop_grace = 0.01
    await asyncio.wait_for(r.run_forever(stop), timeout=10)
    assert executor.started.is_set()
    # The job is due but leased by this runner: the loop waits a full tick, never zero.
    assert clock.sleeps[:4] == [30, 30, 30, 30]
