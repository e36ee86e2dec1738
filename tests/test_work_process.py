"""Team mode as real processes: `dexter gateway run` enqueues chat turns on the Postgres queue,
`dexter worker` processes answer them through the reply outbox, over the fake Telegram Bot API
and a scripted model on a local wire server. Per-chat order holds across workers; a worker
killed with `kill -9` mid-run loses nothing and sends nothing twice; a scheduled job fires once
with two schedulers running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.gateway.config import config_path
from dexter.store import open_store
from tests.support.fake_telegram import FakeTelegram, serve_telegram
from tests.support.wire_server import Recorded, Reply, WireServer, sse

pytestmark = pytest.mark.slow

BASE = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}


def text_reply(text: str, *, stall: bool = False) -> Reply:
    reply = sse(
        [
            {**BASE, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
            {**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
    )
    reply.stall = stall
    return reply


def last_question(request: Recorded) -> str:
    messages = request.json().get("messages") or []
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(str(part.get("text", "")) for part in content)
            return str(content)
    return ""


class EchoModel:
    """Answers each research call with "re: <question>"; can hold one question's first call
    open forever (the worker running it is then killed)."""

    def __init__(self, hold: str | None = None) -> None:
        self.hold = hold
        self.held = threading.Event()
        self.questions: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: Recorded) -> Reply:
        if not request.json().get("tools"):
            return text_reply("[]")  # side calls (standing instructions …) find nothing
        question = last_question(request).strip()
        with self._lock:
            self.questions.append(question)
            first = self.questions.count(question) == 1
        if self.hold is not None and question.endswith(self.hold) and first:
            self.held.set()
            return text_reply("partial", stall=True)
        return text_reply(f"re: {question.splitlines()[-1]}")


@pytest.fixture
def team_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire_server: WireServer, postgres_url: str
) -> dict[str, str]:
    values = {
        "DEXTER_HOME": str(tmp_path / "home"),
        "DEXTER_DATABASE_URL": postgres_url,
        "DEXTER_MODEL": "openai:gpt-test",
        "OPENAI_API_KEY": "sk-test-123456",
        "OPENAI_BASE_URL": wire_server.url + "/v1",
        "DEXTER_SEC_USER_AGENT": "Dexter tests tests@example.com",
        "DEXTER_SEC_DATA_URL": "http://127.0.0.1:9",
        "DEXTER_SEC_WWW_URL": "http://127.0.0.1:9",
        "DEXTER_MEMORY": "off",
        "DEXTER_VERIFY": "off",
        "DEXTER_CRON_TICK_SECONDS": "0.2",
        "DEXTER_WORKER_STALLED_SECONDS": "3",
        "TZ": "UTC",
    }
    monkeypatch.chdir(tmp_path)
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_ROUTER_MODEL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "home").mkdir()
    return values


class Processes:
    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = {**os.environ, **env}
        self.cwd = cwd
        self.running: list[subprocess.Popen[str]] = []

    def start(self, *args: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "dexter.cli.main", *args],
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.running.append(process)
        return process

    def stop(self, process: subprocess.Popen[str]) -> str:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=40)
        assert process.returncode == 0, err
        assert "Traceback" not in err, err
        return err

    def close(self) -> None:
        for process in self.running:
            if process.poll() is None:
                process.kill()
                process.communicate()


@pytest.fixture
def procs(team_env: dict[str, str], tmp_path: Path) -> Iterator[Processes]:
    processes = Processes(team_env, tmp_path)
    try:
        yield processes
    finally:
        processes.close()


def wait_started(process: subprocess.Popen[str], words: str = "started") -> None:
    """Until the worker says it takes runs (its signal handlers are in place by then)."""
    assert process.stderr is not None
    line = process.stderr.readline()
    assert words in line, line + (process.stderr.read() if process.poll() is not None else "")


def telegram_config(home: Path, fake: FakeTelegram) -> None:
    config_path(home).parent.mkdir(parents=True, exist_ok=True)
    config_path(home).write_text(
        json.dumps(
            {
                "channels": {
                    "telegram": {
                        "dm_policy": "open",
                        "accounts": {"default": {"token": fake.token, "api_base": fake.url}},
                    }
                }
            }
        )
    )


class Lines:
    """A process's stderr lines as they come (read by a thread, so nothing blocks on a pipe)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            self.lines.append(line)

    def has(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))


def message_id(fake: FakeTelegram, text: str) -> int:
    return next(u["message"]["message_id"] for u in fake.updates if u["message"]["text"] == text)


def test_two_workers_answer_fifty_messages_in_order_and_a_killed_one_loses_nothing(
    team_env: dict[str, str], procs: Processes, wire_server: WireServer
) -> None:
    held = "chat 1003 message 1"
    model = EchoModel(hold=held)
    wire_server.respond_with(model)
    home = Path(team_env["DEXTER_HOME"])
    with serve_telegram(FakeTelegram(max_poll_wait=120.0)) as fake:
        telegram_config(home, fake)
        # All three start at once (each takes a second or two of imports and set-up).
        workers = [procs.start("worker", "--concurrency", "4") for _ in range(2)]
        gateway = procs.start("gateway", "run")
        for worker in workers:
            wait_started(worker)
        logs = [Lines(worker) for worker in workers]
        fake.wait_for(lambda: fake.count("getUpdates") >= 1, 60.0)
        chats = [1000 + c for c in range(10)]
        for i in range(5):
            for chat in chats:
                fake.push(f"chat {chat} message {i}", user=chat)

        # The worker running the held message dies with it (SIGKILL: no clean-up at all).
        assert model.held.wait(60.0)
        run_id = f"telegram:default:1003:{message_id(fake, held)}"
        fake.wait_for(lambda: any(log.has(run_id) for log in logs), 30.0)
        [doomed] = [w for w, log in zip(workers, logs, strict=True) if log.has(run_id)]
        doomed.kill()
        doomed.communicate()

        fake.wait_for(lambda: sum(len(fake.texts(c)) for c in chats) >= 50, 120.0)
        for chat in chats:
            # Every message answered once, in the order it was sent.
            assert fake.texts(chat) == [f"re: chat {chat} message {i}" for i in range(5)]
        # The held message was run twice (once by each worker) and answered once.
        assert model.questions.count(held) == 2
        procs.stop(gateway)
        [survivor] = [w for w in workers if w is not doomed]
        procs.stop(survivor)

    # Nothing lost from the sessions: each chat's one session holds its questions, answered,
    # in order, whichever worker ran them (in the team's shared Postgres store).
    store = open_store(home, url=team_env["DEXTER_DATABASE_URL"])
    for chat in chats:
        [row] = store.query("SELECT session_id FROM gateway_chats WHERE chat_id = ?", (str(chat),))
        turns = store.query(
            "SELECT query, answer FROM turns WHERE session_id = ? AND answer != '' ORDER BY id",
            (row["session_id"],),
        )
        assert [t["query"] for t in turns] == [f"chat {chat} message {i}" for i in range(5)]

    assert main(["status", "--json"]) == 0


def test_a_scheduled_job_fires_once_with_two_schedulers(
    team_env: dict[str, str], wire_server: WireServer, postgres_url: str
) -> None:
    """Two schedulers (as two `dexter daemon`s run them) over one store and one queue, and a
    worker: the job's research runs once and one alert is delivered."""
    import asyncio
    from datetime import UTC, datetime, timedelta

    from dexter.cli.open_runtime import open_runtime
    from dexter.config import load_settings
    from dexter.cron.queued import schedule_handler
    from dexter.cron.service import make_runner
    from dexter.cron.store import CronStore
    from dexter.store import open_store
    from dexter.work.engine import PgQueue
    from dexter.work.queue import SCHEDULE, Limits
    from tests.support.cron import FakeClock

    model = EchoModel()
    wire_server.respond_with(model)
    assert main(["cron", "add", "Filing watch", "--at", "+1m", "--message", "NVDA 10-Q?"]) == 0
    # The schedulers' clocks are past the job's time; the worker has none.
    later = datetime.now(UTC) + timedelta(minutes=2)

    async def scenario() -> list[int]:
        settings = load_settings()
        async with (
            open_runtime(settings) as worker_rt,
            open_runtime(settings) as rt_a,
            open_runtime(settings) as rt_b,
            PgQueue(postgres_url) as worker_queue,
            PgQueue(postgres_url) as queue_a,
            PgQueue(postgres_url) as queue_b,
        ):
            stop = asyncio.Event()
            handlers = {SCHEDULE: schedule_handler(worker_rt, postgres_url)}
            worker = asyncio.create_task(worker_queue.work(handlers, Limits(), stop))
            runners = [
                make_runner(rt, queue=queue, clock=FakeClock(later))
                for rt, queue in ((rt_a, queue_a), (rt_b, queue_b))
            ]
            done = await asyncio.gather(*(runner.run_due() for runner in runners))
            stop.set()
            await worker
            return [len(results) for results in done]

    ran = asyncio.run(scenario())
    assert sorted(ran) == [0, 1]
    cron = CronStore(open_store(Path(team_env["DEXTER_HOME"]), url=postgres_url))
    [alert] = cron.outbox()
    assert alert.text.startswith("re: ") and alert.status == "delivered"
    [job] = cron.all()
    assert len(cron.runs(job.id)) == 1
    assert sum("NVDA 10-Q?" in q for q in model.questions) == 1
