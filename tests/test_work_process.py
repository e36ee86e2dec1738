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
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.gateway.config import config_path
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
        "DEXTER_WORKER_STALLED_SECONDS": "2",
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


def test_two_workers_answer_fifty_messages_from_ten_chats_each_in_order(
    team_env: dict[str, str], procs: Processes, wire_server: WireServer, tmp_path: Path
) -> None:
    wire_server.respond_with(EchoModel())
    home = Path(team_env["DEXTER_HOME"])
    with serve_telegram(FakeTelegram(max_poll_wait=120.0)) as fake:
        telegram_config(home, fake)
        workers = [procs.start("worker", "--concurrency", "4") for _ in range(2)]
        for worker in workers:
            wait_started(worker)
        gateway = procs.start("gateway", "run")
        fake.wait_for(lambda: fake.count("getUpdates") >= 1, 60.0)
        chats = [1000 + c for c in range(10)]
        for i in range(5):
            for chat in chats:
                fake.push(f"chat {chat} message {i}", user=chat)
        fake.wait_for(lambda: sum(len(fake.texts(c)) for c in chats) >= 50, 120.0)
        for chat in chats:
            assert fake.texts(chat) == [f"re: chat {chat} message {i}" for i in range(5)]
        procs.stop(gateway)
        for worker in workers:
            assert "stopped" in procs.stop(worker)

    assert main(["status", "--json"]) == 0


def test_a_worker_killed_mid_run_loses_nothing_and_sends_nothing_twice(
    team_env: dict[str, str], procs: Processes, wire_server: WireServer
) -> None:
    model = EchoModel(hold="message 1")
    wire_server.respond_with(model)
    home = Path(team_env["DEXTER_HOME"])
    with serve_telegram(FakeTelegram(max_poll_wait=120.0)) as fake:
        telegram_config(home, fake)
        doomed = procs.start("worker")
        wait_started(doomed)
        gateway = procs.start("gateway", "run")
        fake.wait_for(lambda: fake.count("getUpdates") >= 1, 60.0)
        chats = (2001, 2002, 2003)
        for i in range(3):
            for chat in chats:
                fake.push(f"chat {chat} message {i}", user=chat)
        assert model.held.wait(60.0)
        rescuer = procs.start("worker")
        wait_started(rescuer)
        doomed.kill()  # SIGKILL: no clean-up of any kind
        doomed.communicate()
        fake.wait_for(lambda: sum(len(fake.texts(c)) for c in chats) >= 9, 90.0)
        # Nothing else trickles in after the last expected answer.
        time.sleep(0.5)
        for chat in chats:
            assert fake.texts(chat) == [f"re: chat {chat} message {i}" for i in range(3)]
        procs.stop(gateway)
        procs.stop(rescuer)


def test_a_scheduled_job_fires_once_with_two_schedulers(
    team_env: dict[str, str], procs: Processes, wire_server: WireServer, tmp_path: Path
) -> None:
    from dexter.cron.store import CronStore
    from dexter.store import open_store

    model = EchoModel()
    wire_server.respond_with(model)
    assert main(["cron", "add", "Filing watch", "--at", "+1s", "--message", "NVDA 10-Q?"]) == 0
    worker = procs.start("worker")
    wait_started(worker)
    schedulers = [procs.start("daemon") for _ in range(2)]
    for scheduler in schedulers:
        wait_started(scheduler, "daemon started")
    cron = CronStore(open_store(Path(team_env["DEXTER_HOME"])))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not cron.outbox():
        time.sleep(0.1)
    [alert] = cron.outbox()
    assert alert.text.startswith("re: ") and alert.status == "delivered"
    for scheduler in schedulers:
        procs.stop(scheduler)
    procs.stop(worker)
    [job] = cron.all()
    assert len(cron.runs(job.id)) == 1
    assert sum("NVDA 10-Q?" in q for q in model.questions) == 1
