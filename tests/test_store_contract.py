"""One contract for the store, run on SQLite (the file in DEXTER_HOME) and on a real Postgres
with pgvector (team mode): sessions, turns, the ledger, principals, jobs and leases, the outbox,
gateway chats, watches, eval runs and the response cache behave the same on both.

Postgres: one database per module, emptied before each test (much faster than one each)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from dexter.cron import jobs as job_api
from dexter.cron.model import Job
from dexter.cron.schedule import parse_every
from dexter.cron.store import CronStore, with_state
from dexter.evals.results import QuestionResult
from dexter.evals.storage import EvalStore
from dexter.gateway.dispatch import ChatTurn
from dexter.gateway.runs import ChatSessions
from dexter.gateway.types import InboundMessage
from dexter.models.types import Usage
from dexter.principal import Principal
from dexter.store import Ledger, SessionLookupError, SessionStore, Store, open_store
from dexter.store.postgres import open_postgres
from dexter.store.principals import PrincipalStore
from dexter.store.responses import ResponseCache
from dexter.watch.store import DetectedFiling, WatchStore
from tests.support.postgres import create_database, drop_database

START = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    url = create_database()
    # Two processes opening a new database at once: exactly one migrates it.
    applied: list[list[int]] = []
    gate = threading.Barrier(2)

    def open_one() -> None:
        gate.wait()
        with open_postgres(url) as store:
            applied.append(store.applied_now)

    threads = [threading.Thread(target=open_one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(applied) == [[], [1]]
    try:
        yield url
    finally:
        drop_database(url)


def _empty(url: str) -> None:
    # DELETE, not TRUNCATE: on tables this small it is several times faster.
    with open_postgres(url, migrate=False) as store:
        tables = [
            row[0]
            for row in store.query(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                "AND tablename != '_migrations'"
            )
        ]
        children = ("turns", "eval_results", "watch_cursors", "watch_filings")
        ordered = [t for t in children if t in tables] + [t for t in tables if t not in children]
        with store.transaction() as conn:
            for table in ordered:
                conn.execute(f"DELETE FROM {table}")
            conn.execute(
                "INSERT INTO principals (id, kind, display_name, created_at, last_seen_at) "
                "VALUES ('operator', 'operator', 'the operator', ?, ?)",
                ("2026-01-01T00:00:00.000000+00:00", "2026-01-01T00:00:00.000000+00:00"),
            )


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """A function opening a new handle on this test's (empty, migrated) database."""
    opened: list[Store] = []
    if request.param == "sqlite":

        def open_one() -> Store:
            opened.append(open_store(tmp_path / "home"))
            return opened[-1]
    else:
        url = request.getfixturevalue("pg_database")
        _empty(url)

        def open_one() -> Store:
            opened.append(open_store(tmp_path / "home", url=url))
            return opened[-1]

    yield open_one
    for store in opened:
        store.close()


@pytest.fixture
def store(opener: object) -> Store:
    return opener()  # type: ignore[operator,no-any-return]


def test_sessions_turns_constraints_and_search(store: Store) -> None:
    sessions = SessionStore(store)
    first = sessions.create("openai:gpt-4.1", session_id="abcd1234")
    second = sessions.create("openai:gpt-4.1", session_id="abce5678")
    assert sessions.create("anthropic:claude") not in (first, second)
    turn = sessions.add_turn(
        first,
        "run-1",
        "What was NVDA's 100% revenue_growth?",
        "12%",
        "answered",
        3,
        1.5,
        Usage(10, 5),
    )
    later = sessions.add_turn(first, "run-2", "And AAPL?", "", "error", 1, 0.5)
    assert later > turn > 0
    assert [t.query for t in sessions.turns(first)] == [
        "What was NVDA's 100% revenue_growth?",
        "And AAPL?",
    ]
    assert sessions.history(first) == [("What was NVDA's 100% revenue_growth?", "12%")]
    info = sessions.get("abcd")
    assert info.id == first and info.turns == 2 and info.input_tokens == 10
    assert info.title == "What was NVDA's 100% revenue_growth?"
    with pytest.raises(SessionLookupError, match="ambiguous"):
        sessions.get("abc")
    # Newest first; sessions without turns can be left out.
    assert sessions.list()[0].id == first
    assert [s.id for s in sessions.list(include_empty=False)] == [first]
    # Case-insensitive, and % and _ are literal characters.
    assert [s.id for s, _ in sessions.search("100% REVENUE_")] == [first]
    assert sessions.search("100x") == []
    assert sessions.short_ids()[first] == "abcd"
    # Constraints merge with what another run stored meanwhile.
    sessions.set_constraints(first, ["in USD"])
    assert sessions.set_constraints(first, ["in USD", "GAAP only"], base=["in USD"]) == [
        "in USD",
        "GAAP only",
    ]
    assert sessions.constraints(first) == ["in USD", "GAAP only"]
    assert sessions.delete_if_empty(second) and not sessions.delete_if_empty(first)
    sessions.delete(first)
    with pytest.raises(SessionLookupError):
        sessions.get(first)


def test_ledger_totals_and_reports(store: Store) -> None:
    sessions = SessionStore(store)
    session = sessions.create("openai:gpt-4.1")
    ledger = Ledger(store)
    first = ledger.record_model_call(session, "r1", "openai", "gpt-4.1", "main", Usage(100, 20, 10))
    second = ledger.record_model_call(
        session, "r1", "openai", "gpt-4.1", "main", None, estimated_input_tokens=7, ok=False
    )
    assert second > first > 0
    ledger.record_model_call(
        None,
        "r2",
        "acme",
        "x-1",
        "router",
        Usage(5, 5, estimated=True),
        tool="financial_search",
    )
    ledger.record_tool_call(session, "r1", "get_filings", {"ticker": "NVDA"}, ok=True)
    ledger.record_tool_call(session, "r1", "get_filings", "{}", ok=False, error="timeout")
    totals = ledger.totals(session_id=session)
    assert (totals.input_tokens, totals.output_tokens, totals.cached_tokens) == (100, 20, 10)
    assert (totals.calls, totals.failed_calls, totals.estimated_calls) == (2, 1, 1)
    assert totals.estimated_input_tokens == 7
    assert (totals.tool_calls, totals.failed_tool_calls) == (2, 1)
    assert totals.cost_usd is not None and totals.unpriced_calls == 0
    everything = ledger.totals()
    assert everything.calls == 3 and everything.estimated_output_tokens == 5
    assert everything.unpriced_calls == 1
    by_model = {row.key: row for row in ledger.report("model")}
    assert set(by_model) == {"openai:gpt-4.1", "acme:x-1"}
    by_tool = {row.key: row for row in ledger.report("tool")}
    assert by_tool["get_filings"].tool_calls == 2 and by_tool["financial_search"].calls == 1
    assert [row.key for row in ledger.report("day")] == [datetime.now(UTC).date().isoformat()]
    sessions.delete(session)
    principals = {row.key: row.calls for row in ledger.report("principal")}
    assert principals == {"(removed sessions)": 2, "operator": 1}


def test_principals_are_recorded_listed_and_removed_with_their_rows(store: Store) -> None:
    principals = PrincipalStore(store)
    sessions = SessionStore(store)
    sessions.create(
        "m", session_id="00aa00aa", principal_id="telegram:222", principal=("user", "Ann")
    )
    principals.touch(Principal("telegram:333", "user", "Bob"))
    principals.touch(Principal("telegram:333", "user", ""))  # an empty name keeps the old one
    sessions.add_turn("00aa00aa", "r", "q", "a", "answered", 1, 1.0)
    rows = principals.list()
    assert rows[0].id == "operator"
    bob = principals.get("telegram:333")
    assert bob is not None and bob.display_name == "Bob"
    ann = principals.get("telegram:222")
    assert ann is not None and ann.sessions == 1 and ann.display_name == "Ann"
    assert principals.remove("telegram:222") == {"principal": 1, "sessions": 1, "jobs": 0}
    assert principals.get("telegram:222") is None and sessions.list() == []


def _job(cron: CronStore, name: str = "NVDA watch", target: str | None = None) -> Job:
    return job_api.create_job(
        cron,
        name=name,
        message="Tell me when NVDA files.",
        schedule=parse_every("1h", anchor=START),
        now=START,
        target=target,
    )


def test_jobs_are_found_due_claimed_once_and_rescheduled(opener: object) -> None:
    cron = CronStore(opener())  # type: ignore[operator]
    job = _job(cron)
    other = _job(cron, "AAPL earnings")
    assert cron.find(job.id[:4]).id == job.id
    assert cron.find("nvda WATCH").id == job.id
    assert cron.find("earn").id == other.id
    assert [j.id for j in cron.all()] == [job.id, other.id]
    due_at = job.state.next_run_at
    assert due_at is not None
    now = due_at + timedelta(seconds=1)
    assert {j.id for j in cron.due(now)} == {job.id, other.id}
    assert cron.next_wake([], START) == due_at
    # Two runners, each with its own connection, race for the same leases: one wins each.
    rivals = [CronStore(opener()) for _ in range(2)]  # type: ignore[operator]
    wins: list[tuple[int, str]] = []
    gate = threading.Barrier(2)

    def race(index: int) -> None:
        gate.wait()
        for target in (job.id, other.id):
            if rivals[index].claim(target, f"runner-{index}", now, now + timedelta(minutes=5)):
                wins.append((index, target))

    threads = [threading.Thread(target=race, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(target for _, target in wins) == sorted([job.id, other.id])
    assert cron.due(now) == []  # both leased
    holder = dict((t, i) for i, t in wins)[job.id]
    assert not cron.claim(job.id, "late", now, now + timedelta(minutes=5))
    cron.release(job.id, f"runner-{holder}")
    assert cron.claim(job.id, "late", now, now + timedelta(minutes=5))
    # Rescheduling only from the time it was read as.
    assert not cron.reschedule(job.id, None, now + timedelta(hours=1))
    assert cron.reschedule(job.id, due_at, now + timedelta(hours=1))
    run_id = cron.start_run(job.id, now, due_at, "late")
    assert run_id > 0
    cron.finish_run(run_id, finished_at=now, status="ok", answer="filed")
    cron.record_run(job.id, now, "skipped", "outside active hours", None)
    runs = cron.runs(job.id)
    assert [r.status for r in runs] == ["skipped", "ok"] and runs[1].answer == "filed"
    cron.remove(other.id)
    assert cron.get(other.id) is None


def test_outbox_delivery_is_leased_retried_and_seen(store: Store) -> None:
    cron = CronStore(store)
    job = _job(cron, target="telegram:42")
    first = cron.add_alert(
        job=job,
        run_id=None,
        text="10-Q filed",
        target="telegram:42",
        created_at=START,
        delivered=False,
    )
    second = cron.add_alert(
        job=job, run_id=7, text="local", target="outbox", created_at=START, delivered=True
    )
    assert second > first > 0
    later = START + timedelta(minutes=1)
    assert [i.id for i in cron.due_deliveries(later, ["telegram"])] == [first]
    assert cron.due_deliveries(later, ["slack"]) == []
    assert cron.due_deliveries(later, []) == []
    assert cron.claim_delivery(first, "a", later, later + timedelta(minutes=1))
    assert not cron.claim_delivery(first, "b", later, later + timedelta(minutes=1))
    cron.delivery_failed(first, "502", later + timedelta(minutes=2))
    item = cron.outbox(job.id)[1]
    assert (item.status, item.attempts, item.last_error) == ("pending", 1, "502")
    cron.delivered(first, later)
    assert [i.status for i in cron.outbox()] == ["delivered", "delivered"]
    assert {i.id for i in cron.unseen()} == {first, second}
    cron.mark_seen([first, second])
    assert cron.unseen() == []


def test_gateway_chats_map_to_their_session(store: Store) -> None:
    chats = ChatSessions(store)
    message = InboundMessage("telegram", "bot", "m1", "42", "private", "42", text="hi")
    turn = ChatTurn("telegram:bot:42", "hi", message)
    chats.put(turn, "s1", "telegram:42")
    assert chats.get("telegram:bot:42", "telegram:42") == "s1"
    assert chats.get("telegram:bot:42", "operator") is None
    chats.put(turn, "s2", "telegram:42")
    assert chats.get("telegram:bot:42", "telegram:42") == "s2"
    assert chats.chat_for_session("s2") == ("telegram", "42")


def test_watch_filings_are_detected_once_and_queued_once(store: Store) -> None:
    watches = WatchStore(store)
    watch = watches.add(
        owner="operator", tickers=["NVDA"], forms=["8-K"], items=[], target="outbox", now=START
    )
    filing = DetectedFiling(
        watch.id, "0001-26-000001", "NVDA", "1045810", "8-K", "2026-11-30", ("2.02",), "a.htm"
    )
    watches.record_detected(watch.id, "NVDA", filing.accession, [filing], START)
    watches.record_detected(watch.id, "NVDA", filing.accession, [filing], START)  # no duplicate
    assert watches.cursor(watch.id, "NVDA") == filing.accession
    assert [f.items for f in watches.detected(watch.id)] == [("2.02",)]
    outbox_id = watches.queue(watch, [filing], job_id=f"watch:{watch.id}", text="8-K", now=START)
    assert outbox_id is not None
    assert watches.queue(watch, [filing], job_id=f"watch:{watch.id}", text="8-K", now=START) is None
    assert [(f.state, f.delivery) for f in watches.history(watch.id)] == [("queued", "delivered")]
    watches.save_validators("https://sec/x.json", "etag-1", None)
    watches.save_validators("https://sec/x.json", "etag-2", "Tue")
    assert watches.validators("https://sec/x.json") == ("etag-2", "Tue")
    watches.set_paused(watch.id, True)
    assert watches.find("NVDA").paused
    watches.remove(watch.id)
    assert watches.all() == []


def _result(question: str, score: float, epoch: int = 1) -> QuestionResult:
    return QuestionResult(question, 0, "facts", "Q?", "ref", "scored", score, epoch=epoch)


def test_eval_runs_keep_one_result_per_question_and_epoch(store: Store) -> None:
    evals = EvalStore(store)
    run = evals.create_run(
        dataset="d",
        dataset_hash="h",
        model="m",
        judges=["j"],
        options={},
        question_ids=["q1", "q2"],
    )
    evals.save_result(run.id, _result("q1", 0.5))
    evals.save_result(run.id, _result("q1", 1.0))  # a retry replaces it
    evals.save_result(run.id, _result("q1", 0.0, epoch=2))
    assert [(r.question_id, r.epoch, r.score) for r in evals.results(run.id)] == [
        ("q1", 1, 1.0),
        ("q1", 2, 0.0),
    ]
    assert evals.finished_keys(run.id) == {("q1", 1), ("q1", 2)}
    found = evals.get(run.id[:10])
    assert found is not None and found.finished == 2 and found.status == "running"
    evals.set_status(run.id, "done")
    assert [r.status for r in evals.runs()] == ["done"]


def test_the_response_cache_counts_hits_and_replaces(store: Store) -> None:
    cache = ResponseCache(store)
    assert cache.get("k") is None
    cache.put("k", "m", {"text": "one"})
    assert cache.get("k") == {"text": "one"}
    cache.put("k", "m", {"text": "two"})
    assert cache.get("k") == {"text": "two"} and cache.count() == 1
    assert store.query("SELECT hits FROM model_responses WHERE key = ?", ("k",))[0]["hits"] == 1


def test_postgres_reaches_the_sqlite_schema(tmp_path: Path, pg_database: str) -> None:
    """Every SQLite table has a Postgres twin with the same columns (what `db copy` relies on)."""
    with open_store(tmp_path / "home") as lite:
        tables = [
            row[0]
            for row in lite.query(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' AND name != '_migrations'"
            )
        ]
        lite_columns = {
            table: {row["name"] for row in lite.query(f"PRAGMA table_info({table})")}
            for table in tables
        }
    with open_postgres(pg_database, migrate=False) as pg:
        pg_columns: dict[str, set[str]] = {}
        for row in pg.query(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND table_name != '_migrations'"
        ):
            pg_columns.setdefault(row[0], set()).add(row[1])
        # Text sorts and compares bytewise, as in SQLite, whatever the server's locale.
        collations = pg.query(
            "SELECT DISTINCT collation_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND table_name != '_migrations' "
            "AND data_type = 'text'"
        )
    assert [row[0] for row in collations] == ["C"]
    pg_columns["sessions"].discard("rowid")  # SQLite's is implicit
    assert pg_columns == lite_columns


def test_run_state_abandoned_runs_and_a_clock_set_back(store: Store) -> None:
    cron = CronStore(store)
    job = _job(cron)
    later = START + timedelta(hours=2)
    cron.save_state(job.id, with_state(job, last_status="ok", next_run_at=later), disable=True)
    saved = cron.get(job.id)
    assert saved is not None and not saved.enabled and saved.state.next_run_at == later
    cron.set_enabled(saved, True, next_run_at=later)
    assert cron.ahead_of(START) == []
    assert [j.id for j in cron.ahead_of(START - timedelta(days=1))] == [job.id]  # type: ignore[union-attr]
    # A run whose runner lost its lease is failed, and its lease freed.
    assert cron.claim_now(job.id, "gone", START, START + timedelta(minutes=1))
    run_id = cron.start_run(job.id, START, None, "gone")
    failed = cron.fail_abandoned(START + timedelta(minutes=5), "runner died", lambda _: False)
    assert [(a.run_id, a.job_name) for a in failed] == [(run_id, "NVDA watch")]
    assert cron.runs(job.id)[0].error == "runner died"
    assert cron.claim_now(job.id, "next", START + timedelta(minutes=5), later)


def test_eval_runs_of_a_dead_process_are_marked_crashed(store: Store) -> None:
    evals = EvalStore(store)
    run = evals.create_run(
        dataset="d", dataset_hash="h", model="m", judges=[], options={}, question_ids=[]
    )
    evals.heartbeat(run.id)
    assert evals.mark_crashed() == []
    assert evals.mark_crashed(now=datetime.now(UTC) + timedelta(hours=1)) == [run.id]
    assert evals.require(run.id).status == "crashed"


def test_session_listing_owners_and_usage_by_session(store: Store) -> None:
    sessions = SessionStore(store)
    mine = sessions.create("m", session_id="11111111")
    assert not sessions.shared()
    theirs = sessions.create("m", session_id="22222222", principal_id="slack:T1/U1")
    assert sessions.shared()
    assert sessions.latest() is not None
    sessions.touch(mine)
    latest = sessions.latest()
    assert latest is not None and latest.id == mine
    assert [s.id for s in sessions.list(principal_id="slack:T1/U1")] == [theirs]
    with pytest.raises(SessionLookupError):
        sessions.get(theirs, principal_id="operator")
    ledger = Ledger(store)
    ledger.record_model_call(mine, "r", "openai", "gpt-4.1", "main", Usage(3, 1))
    ledger.record_model_call(theirs, "r", "openai", "gpt-4.1", "router", Usage(2, 1))
    assert {r.key: r.input_tokens for r in ledger.report("session")} == {mine: 3, theirs: 2}
    assert {r.key for r in ledger.report("phase")} == {"main", "router"}
    assert {r.key: r.calls for r in ledger.report("principal")} == {
        "operator": 1,
        "slack:T1/U1": 1,
    }
    # One principal's own usage, as a web user's usage page reads it.
    theirs_only = ledger.report("phase", principal_id="slack:T1/U1")
    assert {r.key: r.input_tokens for r in theirs_only} == {"router": 2}
    assert ledger.totals(principal_id="operator").input_tokens == 3
    assert ledger.totals(principal_id="web:nobody").calls == 0
