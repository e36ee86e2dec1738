"""Schedules survive what goes wrong around them: a damaged job row, a daemon that crashed
mid-run, a clock set back, more due jobs than run slots."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.cron import jobs as job_api
from dexter.cron.executor import Outcome
from dexter.cron.model import DamagedJob, Job
from dexter.cron.runner import ABANDONED, Runner
from dexter.cron.schedule import parse_every
from dexter.cron.store import CronStore
from dexter.store import open_store
from tests.support.cron import FakeClock, ScriptedExecutor, StoppingClock

START = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TZ", "UTC")
    return Path(os.environ["DEXTER_HOME"])  # the test's own (see conftest)


@pytest.fixture
def cron(home: Path) -> CronStore:
    return CronStore(open_store(home))


def add_job(cron: CronStore, name: str, *, every: str = "1h", at: datetime = START) -> Job:
    return job_api.create_job(
        cron,
        name=name,
        message=f"{name}: anything new?",
        schedule=parse_every(every, anchor=at),
        now=at,
    )


def damage(cron: CronStore, job: Job) -> None:
    with cron.store.transaction() as conn:
        conn.execute("UPDATE cron_jobs SET schedule_json = '{\"kind\": ' WHERE id = ?", (job.id,))


def runner(cron: CronStore, home: Path, clock: FakeClock, executor: object, **kw: object) -> Runner:
    return Runner(cron, executor, home=home, clock=clock, user_zone="UTC", **kw)  # type: ignore[arg-type]


# --- a damaged row -------------------------------------------------------------------------------


def test_a_damaged_job_is_listed_and_removable(
    home: Path, cron: CronStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    good = add_job(cron, "Filing watch")
    broken = add_job(cron, "Price watch")
    damage(cron, broken)

    assert main(["cron", "list"]) == 0
    table = capsys.readouterr().out
    assert "Filing watch" in table
    [row, note] = [line for line in table.splitlines() if broken.id in line]
    assert "Price watch" in row and "damaged" in row.split()
    # What is wrong is said in full below the table, with how to get rid of it.
    assert note.startswith(f"{broken.id} is damaged: schedule_json is unreadable")
    assert f"dexter cron rm {broken.id}" in note
    assert main(["cron", "list", "--json"]) == 0
    listed = {item["id"]: item for item in json.loads(capsys.readouterr().out)}
    assert listed[good.id]["schedule"]["kind"] == "every"
    assert listed[broken.id]["damaged"].startswith("schedule_json is unreadable")
    # Anything that needs the schedule says what is wrong and how to get rid of it.
    assert main(["cron", "enable", broken.id]) == 1
    err = capsys.readouterr().err
    assert f"`dexter cron rm {broken.id}`" in err and "Traceback" not in err

    assert main(["cron", "rm", broken.id]) == 0
    assert f"Removed Price watch ({broken.id})" in capsys.readouterr().out
    assert [job.id for job in cron.entries()] == [good.id]


async def test_the_daemon_sets_a_damaged_job_aside_and_keeps_running(
    home: Path, cron: CronStore
) -> None:
    broken = add_job(cron, "Price watch")
    good = add_job(cron, "Filing watch")
    damage(cron, broken)
    stop = asyncio.Event()
    clock = StoppingClock(START + timedelta(hours=1), stop, sleeps=2)
    executor = ScriptedExecutor("NVDA filed its 10-Q.")
    lines: list[str] = []
    r = runner(cron, home, clock, executor, log=lines.append, tick_seconds=30)
    await asyncio.wait_for(r.run_forever(stop), timeout=10)

    assert [job_id for job_id, _ in executor.prompts] == [good.id]
    assert len(clock.sleeps) >= 2  # a second pass happened after the damaged row was met
    assert [line for line in lines if "damaged" in line] == [
        f"job {broken.id} (Price watch) is damaged in the database: "
        f"{cron.entries()[0].problem}; disabled. `dexter cron rm {broken.id}` removes it."
    ]
    [aside] = [e for e in cron.entries() if isinstance(e, DamagedJob)]
    assert aside.id == broken.id
    assert cron.store.query("SELECT enabled FROM cron_jobs WHERE id = ?", (broken.id,))[0][0] == 0


def test_daemon_once_with_a_damaged_job_exits_cleanly(
    home: Path, cron: CronStore, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = add_job(cron, "Price watch", at=datetime.now(UTC) - timedelta(hours=2))
    damage(cron, broken)
    assert main(["daemon", "--once"]) == 0
    err = capsys.readouterr().err
    assert f"job {broken.id} (Price watch) is damaged" in err and "Traceback" not in err


# --- a daemon that crashed mid-run ---------------------------------------------------------------


def dead_pid() -> int:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(child.stdout)


async def test_a_run_a_crashed_daemon_left_running_is_marked_failed_on_the_next_start(
    home: Path, cron: CronStore
) -> None:
    now = START + timedelta(hours=1)
    crashed = add_job(cron, "Filing watch")
    elsewhere = add_job(cron, "Price watch")
    live = add_job(cron, "Rates watch")
    # This machine's daemon died mid-run (its lease has not even expired yet) …
    dead = f"{socket.gethostname()}:{dead_pid()}:abc123"
    assert cron.claim_now(crashed.id, dead, now, now + timedelta(minutes=16))
    crashed_run = cron.start_run(crashed.id, now, now, dead)
    # … one on another machine stopped so long ago that its lease ran out …
    other = "other-host:4242:def456"
    assert cron.claim_now(elsewhere.id, other, now - timedelta(hours=1), now - timedelta(minutes=5))
    other_run = cron.start_run(elsewhere.id, now - timedelta(hours=1), now, other)
    # … and one on another machine is still at work.
    busy = "other-host:4343:0a0b0c"
    assert cron.claim_now(live.id, busy, now, now + timedelta(minutes=16))
    live_run = cron.start_run(live.id, now, now, busy)

    lines: list[str] = []
    clock = FakeClock(now)
    r = runner(cron, home, clock, ScriptedExecutor(default="HEARTBEAT_OK"), log=lines.append)
    await r.run_due()

    def run_of(job: Job, run_id: int) -> tuple[str, str | None]:
        [run] = [x for x in cron.runs(job.id) if x.id == run_id]
        return run.status, run.error

    assert run_of(crashed, crashed_run) == ("error", ABANDONED)
    assert run_of(elsewhere, other_run) == ("error", ABANDONED)
    assert run_of(live, live_run) == ("running", None)
    assert f"Filing watch: run #{crashed_run} failed: {ABANDONED}" in lines
    # The dead daemon's lease is free: the job ran again in this pass.
    assert cron.runs(crashed.id)[0].status == "suppressed"
    assert ABANDONED.startswith("the daemon stopped during this run")


# --- a clock set back ----------------------------------------------------------------------------


async def test_a_clock_set_back_a_day_does_not_stall_interval_jobs(
    home: Path, cron: CronStore
) -> None:
    made_today = add_job(cron, "Made today", at=START)
    made_last_week = add_job(cron, "Made last week", at=START - timedelta(days=7))
    clock = FakeClock(START + timedelta(hours=1))
    executor = ScriptedExecutor(default="HEARTBEAT_OK")
    r = runner(cron, home, clock, executor)
    await r.tick()
    await r.drain()
    assert executor.runs == 2

    clock.set(START - timedelta(days=1))  # someone set the clock back a day
    for _ in range(3):
        clock.advance(minutes=30)
        await r.tick()
        await r.drain()
    ran = [job_id for job_id, _ in executor.prompts[2:]]
    assert sorted(ran) == sorted([made_today.id, made_last_week.id])
    for job in (made_today, made_last_week):
        stored = cron.get(job.id)
        assert stored is not None and stored.state.next_run_at is not None
        assert stored.state.next_run_at - clock.now() <= timedelta(hours=1)


async def test_a_clock_set_back_while_the_daemon_was_stopped_is_noticed_at_start(
    home: Path, cron: CronStore
) -> None:
    job = add_job(cron, "Filing watch")
    first = runner(cron, home, FakeClock(START + timedelta(hours=1)), ScriptedExecutor("x"))
    await first.tick()
    await first.drain()
    clock = FakeClock(START - timedelta(days=1) + timedelta(minutes=5))
    again = runner(cron, home, clock, ScriptedExecutor(default="HEARTBEAT_OK"))
    await again.run_due()
    stored = cron.get(job.id)
    assert stored is not None and stored.state.next_run_at == START - timedelta(days=1, hours=-1)


# --- daemon --once ------------------------------------------------------------------------------


async def test_once_runs_every_due_job_never_more_than_the_limit_at_a_time(
    home: Path, cron: CronStore
) -> None:
    jobs = [add_job(cron, f"Watch {n}") for n in range(5)]

    class CountingExecutor:
        """The first run waits until a second one has started, so the slots are really shared."""

        def __init__(self) -> None:
            self.runs: list[str] = []
            self.running = 0
            self.most = 0
            self.second = asyncio.Event()

        async def execute(self, job: Job, prompt: str) -> Outcome:
            self.running += 1
            self.most = max(self.most, self.running)
            if self.running == 2:
                self.second.set()
            if not self.runs and self.running == 1:
                await self.second.wait()
            self.running -= 1
            self.runs.append(job.id)
            return Outcome(answer="HEARTBEAT_OK")

    executor = CountingExecutor()
    r = runner(cron, home, FakeClock(START + timedelta(hours=1)), executor, max_concurrency=2)
    results = await asyncio.wait_for(r.run_due(), timeout=10)
    assert sorted(executor.runs) == sorted(job.id for job in jobs)
    assert len(results) == 5 and executor.most == 2
