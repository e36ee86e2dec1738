"""The queue engines compared for team mode: procrastinate (chosen), DBOS and pgqueuer.

Every engine runs the same job (record its start in a table, wait `--job-seconds`, record its
end) on one real PostgreSQL (pgserver), with worker processes of its own:

- idle pick-up: 20 jobs enqueued one at a time into an idle worker; enqueue -> start p50/p95
- throughput: 200 jobs over 10 conversations with 1, 2 and 4 worker processes (one job at a
  time each), jobs/s; and whether any conversation ran out of order or overlapped itself
- `kill -9`: a worker killed mid-job while a second worker runs; whether (and when) the job
  runs to the end on the second

DBOS and pgqueuer are not Dexter's dependencies; run with them added:

    uv run --with dbos --with pgqueuer python bench/queue_engines.py [--engines dbos,pgqueuer]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HERE = Path(__file__).resolve()
KEYS = 10


# --------------------------------------------------------------------------- inside a worker


def mark(url: str, key: str, seq: int, t0: float, event: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO marks (key, seq, t0, at, ev, pid) VALUES (%s, %s, %s, %s, %s, %s)",
            (key, seq, t0, time.time(), event, os.getpid()),
        )


async def job_body(url: str, key: str, seq: int, t0: float) -> None:
    await asyncio.to_thread(mark, url, key, seq, t0, "start")
    await asyncio.sleep(float(os.environ["BENCH_JOB_SECONDS"]))
    await asyncio.to_thread(mark, url, key, seq, t0, "end")


async def procrastinate_main(command: str, url: str, arg: int) -> None:
    import procrastinate

    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(conninfo=url),
        worker_defaults={"update_heartbeat_interval": 0.5, "stalled_worker_timeout": 2},
    )

    @app.task(name="run", queue="runs")
    async def run(key: str, seq: int, t0: float) -> None:
        await job_body(url, key, seq, t0)

    async def reap() -> None:  # what dexter.work.engine does
        while True:
            await asyncio.sleep(0.5)
            await app.job_manager.prune_stalled_workers(2)
            for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=2):
                await app.job_manager.retry_job(job)

    async with app.open_async():
        if command == "install":
            await app.schema_manager.apply_schema_async()
        elif command == "enqueue":
            for i in range(arg):
                key = f"k{i % KEYS}"
                await run.configure(lock=key).defer_async(key=key, seq=i, t0=time.time())
        else:
            reaper = asyncio.create_task(reap())
            await app.run_worker_async(queues=["runs"], concurrency=arg)
            reaper.cancel()


async def dbos_main(command: str, url: str, arg: int) -> None:
    from dbos import DBOS, DBOSClient

    if command == "enqueue":
        client = DBOSClient(system_database_url=url)
        for i in range(arg):
            key = f"k{i % KEYS}"
            options: Any = {
                "queue_name": "runs",
                "workflow_name": "run",
                "queue_partition_key": key,
            }
            client.enqueue(options, key, i, time.time())
        client.destroy()
        return
    DBOS(config={"name": "bench", "system_database_url": url, "executor_id": f"w{os.getpid()}"})

    @DBOS.workflow(name="run")
    async def run(key: str, seq: int, t0: float) -> None:
        await job_body(url, key, seq, t0)

    DBOS.launch()
    await DBOS.register_queue_async(
        "runs",
        worker_concurrency=arg if command == "worker" else None,
        partition_concurrency=1,
        polling_interval_sec=0.1,
    )
    if command == "install":
        DBOS.destroy()
        return
    await asyncio.Event().wait()


async def pgqueuer_main(command: str, url: str, arg: int) -> None:
    from datetime import timedelta

    import psycopg
    from pgqueuer import PgQueuer
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.queries import Queries

    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    driver = PsycopgDriver(conn)
    if command == "install":
        await Queries(driver).install()
        return
    if command == "enqueue":
        queries = Queries(driver)
        for i in range(arg):
            payload = {"key": f"k{i % KEYS}", "seq": i, "t0": time.time()}
            await queries.enqueue("run", json.dumps(payload).encode())
        return
    pgq = PgQueuer(driver)

    @pgq.entrypoint("run")
    async def run(job: Any) -> None:
        data = json.loads(job.payload)
        await job_body(url, data["key"], data["seq"], data["t0"])

    await pgq.qm.run(
        batch_size=1,
        max_concurrent_tasks=max(2, arg),
        heartbeat_timeout=timedelta(seconds=2),
        dequeue_timeout=timedelta(seconds=5),
    )


ENGINES = {"procrastinate": procrastinate_main, "dbos": dbos_main, "pgqueuer": pgqueuer_main}


def child(engine: str, command: str, url: str, arg: int) -> None:
    if command == "install":
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS marks"
                " (key text, seq int, t0 float8, at float8, ev text, pid int)"
            )
    asyncio.run(ENGINES[engine](command, url, arg))


# --------------------------------------------------------------------------- the driver


class Round:
    def __init__(self, engine: str, job_seconds: float) -> None:
        from tests.support.postgres import create_database

        self.engine = engine
        self.url = create_database()
        self.env = {**os.environ, "BENCH_JOB_SECONDS": str(job_seconds)}
        self.workers: list[subprocess.Popen[bytes]] = []
        self.call("install", 0)

    def call(self, command: str, arg: int) -> None:
        subprocess.run(self.argv(command, arg), env=self.env, check=True, capture_output=True)

    def argv(self, command: str, arg: int) -> list[str]:
        return [sys.executable, str(HERE), "--child", self.engine, command, self.url, str(arg)]

    def start_worker(self, concurrency: int = 1) -> subprocess.Popen[bytes]:
        worker = subprocess.Popen(
            self.argv("worker", concurrency),
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.workers.append(worker)
        return worker

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(sql).fetchall()  # type: ignore[arg-type]

    def count(self, event: str) -> int:
        return int(self.rows(f"SELECT count(*) FROM marks WHERE ev = '{event}'")[0][0])

    def close(self) -> None:
        from tests.support.postgres import drop_database

        for worker in self.workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        for worker in self.workers:
            try:
                worker.wait(15)
            except subprocess.TimeoutExpired:
                worker.kill()
        drop_database(self.url)


def p50_p95(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms"


def idle_pickup(engine: str, warm_up: float) -> str:
    bench = Round(engine, 0.01)
    try:
        bench.start_worker(4)
        time.sleep(warm_up)
        for _ in range(20):
            bench.call("enqueue", 1)
            time.sleep(0.3)
        time.sleep(1.0)
        waits = [at - t0 for t0, at in bench.rows("SELECT t0, at FROM marks WHERE ev = 'start'")]
        return f"idle enqueue -> start: {p50_p95(waits)} (n={len(waits)})"
    finally:
        bench.close()


def throughput(engine: str, workers: int, jobs: int, job_seconds: float, warm_up: float) -> str:
    bench = Round(engine, job_seconds)
    try:
        for _ in range(workers):
            bench.start_worker(1)
        time.sleep(warm_up)
        bench.call("enqueue", jobs)
        deadline = time.monotonic() + 180
        while bench.count("end") < jobs and time.monotonic() < deadline:
            time.sleep(0.1)
        done = bench.count("end")
        first, last = bench.rows("SELECT min(t0), max(at) FROM marks WHERE ev = 'end'")[0]
        starts = bench.rows("SELECT key, seq FROM marks WHERE ev = 'start' ORDER BY at")
        seen: dict[str, int] = {}
        out_of_order = 0
        for key, seq in starts:
            out_of_order += seen.get(key, -1) > seq
            seen[key] = seq
        spans = bench.rows(
            "SELECT s.key, s.at, e.at FROM marks s JOIN marks e ON s.key = e.key"
            " AND s.seq = e.seq AND e.ev = 'end' WHERE s.ev = 'start'"
        )
        overlaps = sum(
            1
            for key, start, end in spans
            for other, other_start, _ in spans
            if key == other and start < other_start < end
        )
        rate = done / (last - first) if done else 0.0
        return (
            f"{workers} worker(s): {rate:.1f} jobs/s ({done}/{jobs} done); out of order "
            f"{out_of_order}, same conversation overlapping {overlaps}"
        )
    finally:
        bench.close()


def kill_recovery(engine: str, warm_up: float) -> str:
    # Long enough to be still running when the second worker is up and the first is killed.
    bench = Round(engine, warm_up + 5.0)
    try:
        doomed = bench.start_worker(1)
        time.sleep(warm_up)
        bench.call("enqueue", 1)
        while bench.count("start") < 1:
            time.sleep(0.05)
        bench.start_worker(1)
        time.sleep(warm_up)
        doomed.kill()
        killed = time.time()
        while bench.count("end") < 1 and time.time() - killed < 60:
            time.sleep(0.1)
        again = bench.rows(f"SELECT at FROM marks WHERE ev = 'start' AND pid <> {doomed.pid}")
        if bench.count("end") and again:
            return (
                f"kill -9 mid-job: started again on the other worker {again[0][0] - killed:.1f}s"
                " after the kill, and finished there"
            )
        return "kill -9 mid-job: not run again within 60 s"
    finally:
        bench.close()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        engine, command, url, arg = sys.argv[2:6]
        child(engine, command, url, int(arg))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="procrastinate,dbos,pgqueuer")
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--job-seconds", type=float, default=0.05)
    parser.add_argument("--warm-up", type=float, default=3.0, help="seconds for workers to start")
    parser.add_argument("--parts", default="idle,throughput,kill")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPU cores; {args.jobs} jobs of {args.job_seconds}s, {KEYS} keys")
    parts = args.parts.split(",")
    for engine in args.engines.split(","):
        if "idle" in parts:
            print(f"{engine}: {idle_pickup(engine, args.warm_up)}", flush=True)
        for workers in (1, 2, 4) if "throughput" in parts else ():
            line = throughput(engine, workers, args.jobs, args.job_seconds, args.warm_up)
            print(f"{engine}: {line}", flush=True)
        if "kill" in parts:
            print(f"{engine}: {kill_recovery(engine, args.warm_up)}", flush=True)


if __name__ == "__main__":
    main()
