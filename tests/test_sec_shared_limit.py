"""Team mode: the SEC's 10 requests per second hold across processes, counted at the server.

Three real processes share one Postgres database and one SEC mirror; each fires its requests at
once through the SEC provider's own client. The mirror notes when each request arrives, and no
one-second window may hold more than ten of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from dexter.data.settings import DataSettings
from dexter.data.shared_ratelimit import SharedRateLimiter
from dexter.store.pg_rate_limit import IN_FLIGHT_POLL
from tests.support.sec_mirror import Mirror, MirrorServer

PROCESSES = 3
REQUESTS_EACH = 8
PING = "www.sec.gov/files/ping.json"

# Each process builds the SEC provider exactly as Dexter does from its settings, connects its
# limiter, says "ready", and waits for "go" so that all three hammer the mirror at once.
WORKER = """
import asyncio, sys
from dexter.config import load_settings
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings

async def main(count: int) -> None:
    provider = SecEdgarProvider(DataSettings.from_settings(load_settings()))
    http = provider.http
    await asyncio.to_thread(http._limiter._connection)
    print("ready", type(http._limiter).__name__, flush=True)
    sys.stdin.readline()
    url = provider.www_url + "/files/ping.json"
    await asyncio.gather(*(http.get_bytes(url) for _ in range(count)))
    await provider.aclose()
    print("done", http.requests_sent, flush=True)

asyncio.run(main(int(sys.argv[1])))
"""


class TimedMirror(Mirror):
    """The mirror, noting the arrival time of every request (before it is answered)."""

    def __init__(self) -> None:
        super().__init__(extra={PING: b'{"ok": true}'})
        self.arrivals: list[float] = []
        self._lock = threading.Lock()

    def failure(self, host: str, path: str) -> int | str | None:
        with self._lock:
            self.arrivals.append(time.monotonic())
        return super().failure(host, path)


def most_in_any_second(times: Sequence[float]) -> int:
    ordered = sorted(times)
    best, left = 0, 0
    for right, at in enumerate(ordered):
        while at - ordered[left] >= 1.0:
            left += 1
        best = max(best, right - left + 1)
    return best


@pytest.mark.slow  # ~3 s of wall time (24 requests at 10 a second), ~1.5 s of CPU
def test_three_processes_never_exceed_ten_requests_in_any_second(
    postgres_url: str, tmp_path: Path
) -> None:
    mirror = TimedMirror()
    with MirrorServer(mirror) as server:
        env = {
            **os.environ,
            **server.env(),
            "DEXTER_DATABASE_URL": postgres_url,
            # The most the SEC allows, so that any excess across processes shows.
            "DEXTER_SEC_RATE_LIMIT": "10",
        }
        workers = []
        for number in range(PROCESSES):
            home = tmp_path / f"machine-{number}"
            workers.append(
                subprocess.Popen(
                    [sys.executable, "-c", WORKER, str(REQUESTS_EACH)],
                    env={**env, "DEXTER_HOME": str(home)},
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        try:
            for worker in workers:
                assert worker.stdout is not None
                assert worker.stdout.readline().split() == ["ready", "SharedRateLimiter"]
            for worker in workers:
                assert worker.stdin is not None
                worker.stdin.write("go\n")
                worker.stdin.flush()
            outputs = [worker.communicate(timeout=60) for worker in workers]
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
                    worker.wait()
    for worker, (out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
        assert out.split() == ["done", str(REQUESTS_EACH)]
    assert len(mirror.arrivals) == PROCESSES * REQUESTS_EACH
    assert most_in_any_second(mirror.arrivals) <= 10


def test_single_user_mode_keeps_the_per_process_limiter(tmp_path: Path) -> None:
    from dexter.config import load_settings
    from dexter.data.ratelimit import RateLimiter
    from dexter.data.sec.provider import SecEdgarProvider

    settings = load_settings(
        cwd=tmp_path,
        environ={"DEXTER_HOME": str(tmp_path), "DEXTER_SEC_USER_AGENT": "Team Test t@example.com"},
    )
    data = DataSettings.from_settings(settings)
    assert data.team_database_url is None
    assert isinstance(SecEdgarProvider(data).http._limiter, RateLimiter)


async def test_the_shared_limit_survives_a_dropped_connection(postgres_url: str) -> None:
    from dexter.store.pg import PostgresUnavailable, connect

    limiter = SharedRateLimiter(postgres_url, "sec", 10)
    await limiter.answered(await limiter.acquire())
    conn = limiter._conn
    assert conn is not None
    # A database restart or failover closes the connection under the limiter.
    with connect(postgres_url) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
    with pytest.raises(PostgresUnavailable, match="no request was sent"):
        await limiter.acquire()
    # The next request reconnects; the places already taken still count.
    await limiter.answered(await limiter.acquire())
    with connect(postgres_url) as admin:
        row = admin.execute(
            "SELECT count(*) AS n, count(answered_at) AS answered FROM dexter_rate_limit_request"
        ).fetchone()
    assert row == {"n": 2, "answered": 2}
    await limiter.aclose()


async def test_a_request_in_flight_holds_its_place_until_answered(postgres_url: str) -> None:
    """Two places: while both requests are out, a third waits however long they take."""
    slept: list[float] = []

    class Enough(Exception):
        pass

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            await limiter.answered(first)
        if len(slept) == 4:
            raise Enough

    limiter = SharedRateLimiter(postgres_url, "sec", 2, sleep=sleep)
    first = await limiter.acquire()
    await limiter.acquire()
    with pytest.raises(Enough):
        await limiter.acquire()
    # Polls while both were in flight, then, once one was answered, a wait for the rest of the
    # window from that answer (a window is 1.02 s: the second plus a margin for two clocks).
    assert slept[:3] == [IN_FLIGHT_POLL] * 3
    assert IN_FLIGHT_POLL < slept[3] <= 1.02
    await limiter.aclose()


def test_the_database_url_stays_out_of_data_settings_repr(tmp_path: Path) -> None:
    data = DataSettings(cache_dir=tmp_path, team_database_url="postgresql://u:pw-x@db/team")
    assert "pw-x" not in repr(data)


async def test_a_document_one_machine_fetched_is_not_fetched_again_by_the_next(
    postgres_url: str, tmp_path: Path
) -> None:
    """Two machines (two disk caches) on one team database: the SEC sees each document once."""
    from dexter.data.sec.provider import SecEdgarProvider
    from tests.support.sec_mirror import mirror_transport

    mirror = Mirror()
    machines = [
        SecEdgarProvider(
            DataSettings(
                cache_dir=tmp_path / f"machine-{n}" / "cache",
                sec_user_agent="Team Test team@example.com",
                team_database_url=postgres_url,
            ),
            transport=mirror_transport(mirror),
        )
        for n in range(2)
    ]
    try:
        first = await machines[0].filings("AAPL", limit=3)
        fetched = list(mirror.requests)
        assert fetched, "the first machine fetched from the SEC"
        second = await machines[1].filings("AAPL", limit=3)
        assert mirror.requests == fetched, "the second machine asked the SEC again"
        assert second == first
        shared = machines[1].http.shared_cache
        assert shared is not None and shared.hits >= 1
        # It keeps its own disk copies too: its next reads do not even ask the database.
        assert any((tmp_path / "machine-1" / "cache" / "sec").rglob("*.body"))
    finally:
        for machine in machines:
            await machine.aclose()


async def test_without_a_team_database_the_cache_stays_on_disk(tmp_path: Path) -> None:
    from dexter.data.sec.provider import SecEdgarProvider

    provider = SecEdgarProvider(
        DataSettings(cache_dir=tmp_path, sec_user_agent="Team Test team@example.com")
    )
    assert provider.http.shared_cache is None


async def test_a_cancelled_request_gives_its_place_back(postgres_url: str) -> None:
    """A run stopped while its request was taking a place does not hold that place for the
    in-flight limit (two minutes) with no answer to come."""
    import asyncio

    from dexter.store.pg import connect

    limiter = SharedRateLimiter(postgres_url, "sec", 10)
    await asyncio.to_thread(limiter._connection)
    waiting = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0)  # it is now taking a place, in a worker thread
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    def places() -> dict[str, int]:
        with connect(postgres_url) as admin:
            row = admin.execute(
                "SELECT count(*) AS taken, count(answered_at) AS answered "
                "FROM dexter_rate_limit_request"
            ).fetchone()
        assert row is not None
        return dict(row)

    for _ in range(200):
        if places() == {"taken": 1, "answered": 1}:
            break
        await asyncio.sleep(0.01)
    assert places() == {"taken": 1, "answered": 1}
    await limiter.aclose()


async def test_a_role_without_create_rights_uses_tables_a_migration_made(
    postgres_url: str,
) -> None:
    """Least privilege: the tables made once by an owner (a migration), the workers' role may
    only read and write rows, and the limit and the cache still work."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    from dexter.data.shared_cache import SharedBodyCache
    from dexter.store import pg_http_cache, pg_rate_limit
    from dexter.store.pg import connect

    role = f"dexter_worker_{uuid.uuid4().hex[:8]}"
    with connect(postgres_url) as owner:
        owner.execute(pg_rate_limit.SCHEMA)
        owner.execute(pg_http_cache.SCHEMA)
        owner.execute(f"CREATE ROLE {role} LOGIN")
        owner.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}")
    parts = urlsplit(postgres_url)
    as_role = urlunsplit(
        (parts.scheme, f"{role}:@{parts.netloc.rpartition('@')[2]}", parts.path, parts.query, "")
    )
    try:
        from dexter.store.pg import PostgresUnavailable

        # Before the grants: one clear sentence saying what the role lacks, no traceback.
        denied = SharedRateLimiter(as_role, "sec", 10)
        with pytest.raises(PostgresUnavailable, match="needs to read and write the tables"):
            await denied.acquire()
        with connect(postgres_url) as owner:
            owner.execute(
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
            )
            owner.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
        limiter = SharedRateLimiter(as_role, "sec", 10)
        await limiter.answered(await limiter.acquire())
        await limiter.aclose()
        cache = SharedBodyCache(as_role, "sec")
        await cache.put("k", "https://www.sec.gov/x", b"body")
        found = await cache.get("k", 60)
        await cache.aclose()
        assert found is not None and found.body == b"body"
    finally:
        from tests.support.postgres import server_url

        with connect(server_url()) as admin:
            admin.execute(f"REASSIGN OWNED BY {role} TO CURRENT_USER")
        with connect(postgres_url) as owner:
            owner.execute(f"DROP OWNED BY {role}")
        with connect(server_url()) as admin:
            admin.execute(f"DROP ROLE {role}")
