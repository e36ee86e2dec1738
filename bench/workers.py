"""Throughput of 1, 2 and 4 `dexter worker` processes on 200 scripted chat messages, and the
time from enqueue to the run's first model request (p50/p95).

Real pieces: a real PostgreSQL (pgserver, as the tests use), the procrastinate queue, `dexter
worker` subprocesses building agents through the runtime and recording sessions, the reply
outbox. The model is a local OpenAI-compatible server answering every call after `--latency`
seconds (a hosted model's time to answer; the run's CPU cost is Dexter's own). Messages are
enqueued straight onto the queue (as `dexter gateway run` does), 40 chats of 5 messages, so
per-chat order is kept while runs of different chats spread over the workers.

    uv run python bench/workers.py [--messages 200] [--latency 0.5] [--concurrency 4]

The 4:1 ratio is the figure; it can only approach 4 where the machine has the cores for four
workers' CPU work (say how many cores it had).
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
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.postgres import create_database, drop_database
from tests.support.wire_server import Recorded, Reply, WireServer, sse

from dexter.gateway.dispatch import ChatTurn
from dexter.gateway.queued import turn_payload
from dexter.gateway.routing import session_key
from dexter.gateway.types import InboundMessage
from dexter.principal import Principal
from dexter.work.engine import PgQueue
from dexter.work.queue import CHAT, RunRequest

CHATS = 40
IDLE_MESSAGES = 20
WORKER = (sys.executable, "-m", "dexter.cli.main", "worker")
BASE = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}


class SlowEcho:
    """Answers after `latency` seconds; remembers when each question's first call arrived."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.first_call: dict[str, float] = {}
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        question = ""
        for message in body.get("messages") or []:
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                question = message["content"]
        key = question.strip().splitlines()[-1] if question.strip() else ""
        with self.lock:
            self.calls += 1
            if body.get("tools"):
                self.first_call.setdefault(key, time.monotonic())
        text = f"re: {key}" if body.get("tools") else "[]"
        reply = sse(
            [
                {**BASE, "choices": [{"index": 0, "delta": {"content": text}}]},
                {**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
        )
        # The wait is spent between chunks, outside the server's lock, so calls overlap.
        reply.chunk_delay = self.latency / len(reply.chunks)
        return reply


def request_for(i: int) -> RunRequest:
    chat = 5000 + i % CHATS
    message = InboundMessage(
        "telegram", "default", str(10_000 + i), str(chat), "direct", str(chat), f"question {i}"
    )
    principal = Principal(f"telegram:{chat}", "user", "Bench")
    turn = ChatTurn(session_key(message), message.text, message, principal=principal)
    return RunRequest(CHAT, message.dedupe_key, principal.id, turn.session_key, turn_payload(turn))


def replies(url: str) -> int:
    from dexter.store.pg import connect

    with connect(url) as conn:
        row = conn.execute("SELECT count(*) AS n FROM dexter_work_replies").fetchone()
    return int(row["n"]) if row else 0


async def enqueue_all(url: str, indices: range, spacing: float = 0.0) -> dict[str, float]:
    enqueued: dict[str, float] = {}
    async with PgQueue(url) as queue:
        for i in indices:
            enqueued[f"question {i}"] = time.monotonic()
            await queue.enqueue(request_for(i))
            if spacing:
                await asyncio.sleep(spacing)
    return enqueued


def wait_for_replies(url: str, count: int, timeout: float) -> None:
    started = time.monotonic()
    while replies(url) < count:
        if time.monotonic() - started > timeout:
            raise SystemExit(f"only {replies(url)} of {count} answered in time")
        time.sleep(0.02)


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def one_round(workers: int, args: argparse.Namespace, model: SlowEcho, base_env: dict[str, str]):
    url = create_database()
    home = Path(tempfile.mkdtemp(prefix="dexter-bench-workers-"))
    env = {**base_env, "DEXTER_HOME": str(home), "DEXTER_DATABASE_URL": url}
    model.first_call.clear()
    model.calls = 0
    procs = []
    try:
        asyncio.run(PgQueue(url).__aenter__())  # the schema, before workers race for it
        for _ in range(workers):
            procs.append(
                subprocess.Popen(
                    [*WORKER, "--concurrency", str(args.concurrency)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for proc in procs:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            if "started" not in line:
                raise SystemExit(f"a worker did not start: {line}{proc.stderr.read()}")
        started = time.monotonic()
        enqueued = asyncio.run(enqueue_all(url, range(args.messages)))
        wait_for_replies(url, args.messages, args.timeout)
        elapsed = time.monotonic() - started
        calls = model.calls / args.messages
        busy = [model.first_call[q] - at for q, at in enqueued.items()]
        # Then one message at a time, spaced out: the pick-up latency of an idle team.
        idle_range = range(args.messages, args.messages + IDLE_MESSAGES)
        idle = asyncio.run(enqueue_all(url, idle_range, spacing=args.latency + 0.3))
        wait_for_replies(url, args.messages + IDLE_MESSAGES, args.timeout)
        waits = [model.first_call[q] - at for q, at in idle.items()]
        return args.messages / elapsed, calls, busy, waits
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        drop_database(url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.5, help="model seconds per call")
    parser.add_argument("--concurrency", type=int, default=4, help="runs at once per worker")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()

    model = SlowEcho(args.latency)
    server = WireServer()
    server.respond_with(model)
    server.start()
    base_env = {
        **os.environ,
        "DEXTER_MODEL": "openai:gpt-test",
        "OPENAI_API_KEY": "sk-bench-123456",
        "OPENAI_BASE_URL": server.url + "/v1",
        "DEXTER_SEC_USER_AGENT": "Dexter bench bench@example.com",
        "DEXTER_SEC_DATA_URL": "http://127.0.0.1:9",
        "DEXTER_SEC_WWW_URL": "http://127.0.0.1:9",
        "DEXTER_MEMORY": "off",
        "DEXTER_VERIFY": "off",
    }
    print(
        f"{args.messages} messages in {CHATS} chats, model latency {args.latency}s, "
        f"{args.concurrency} runs at once per worker, {os.cpu_count()} CPU cores",
        flush=True,
    )
    results: dict[int, float] = {}
    try:
        for workers in (int(w) for w in args.workers.split(",")):
            rate, calls, busy, idle = one_round(workers, args, model, base_env)
            results[workers] = rate
            print(
                f"{workers} worker(s): {rate:6.1f} messages/s ({calls:.1f} model calls each); "
                "enqueue -> first model call: one at a time p50 %.3fs p95 %.3fs; "
                "all %d at once p50 %.1fs p95 %.1fs"
                % (*percentiles(idle), args.messages, *percentiles(busy)),
                flush=True,
            )
    finally:
        server.stop()
    if 1 in results and 4 in results:
        print(f"4:1 ratio {results[4] / results[1]:.2f}x")
    print(json.dumps({"messages_per_second": results}))


if __name__ == "__main__":
    main()
