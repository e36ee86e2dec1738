"""Messages per second through the gateway, and latency to the first "typing…" and the reply.

A fake Telegram Bot API on 127.0.0.1 (real HTTP), the real Telegram channel, pipeline,
dispatcher and runtime-built agents, and a zero-latency scripted model; 100 chats each send one
message at once. Target: p95 inbound -> first typing <= 200 ms.

The fake runs in a process of its own by default, as Telegram does: in-process, its request
handling (Python threads) takes the GIL from the gateway's event loop for every call, a cost no
real deployment pays. `--fake-in-process` measures that setting too.

    uv run python bench/gateway.py [--chats 100] [--rounds 3] [--fake-in-process]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.fake_telegram import FakeTelegram, serve_telegram

from dexter.models.scripted import Reply, ScriptedModel

FIRST_CHAT = 10_000


class TimedTelegram(FakeTelegram):
    """Records when each chat's message was pushed, saw "typing…" and got its reply, and takes
    the bench's orders over the same HTTP (`benchPush`, `benchWait`). Times are
    `time.perf_counter()`, the system-wide monotonic clock on Linux, so they compare across the
    bench's two processes."""

    def __init__(self) -> None:
        super().__init__()
        self.pushed: dict[str, float] = {}
        self.first_typing: dict[str, float] = {}
        self.replied: dict[str, float] = {}

    def handle(self, method: str, payload: dict[str, Any]) -> dict[str, Any]:
        now = time.perf_counter()
        chat = str(payload.get("chat_id", ""))
        if method == "benchPush":
            for i, user in enumerate(payload["users"]):
                self.pushed[str(user)] = time.perf_counter()
                self.push(f"question {i}", user=user)
            return {"ok": True, "result": True}
        if method == "benchWait":
            self.wait_for(self._reached(payload), 120.0)
            return {"ok": True, "result": self._stats()}
        if method == "sendChatAction":
            self.first_typing.setdefault(chat, now)
        elif method == "sendMessage":
            self.replied.setdefault(chat, now)
        return super().handle(method, payload)

    def _reached(self, payload: dict[str, Any]) -> Any:
        until, count = payload["until"], int(payload["count"])
        if until == "polling":
            return lambda: self.count("getUpdates") >= count
        return lambda: len(self.replied) >= count

    def _stats(self) -> dict[str, Any]:
        return {"pushed": self.pushed, "typing": self.first_typing, "replied": self.replied}


def serve_forever() -> None:
    """The fake in this process, until stdin closes (`--serve-fake`)."""
    with serve_telegram(TimedTelegram()) as fake:
        print(json.dumps({"url": fake.url, "token": fake.token}), flush=True)
        sys.stdin.read()


@contextlib.contextmanager
def fake_telegram(in_process: bool) -> Iterator[tuple[str, str]]:
    if in_process:
        with serve_telegram(TimedTelegram()) as fake:
            yield fake.url, fake.token
        return
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-fake"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        yield info["url"], info["token"]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)


def order(url: str, token: str, method: str, **payload: Any) -> Any:
    """One bench order to the fake (blocking; run it off the event loop)."""
    request = urllib.request.Request(
        f"{url}/bot{token}/{method}",
        data=json.dumps(payload).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=130) as response:
        return json.loads(response.read())["result"]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) >= 20 else max(values)


async def one_round(chats: int, in_process: bool) -> dict[str, float]:
    home = Path(tempfile.mkdtemp()) / "home"
    os.environ.update(
        DEXTER_HOME=str(home),
        OPENAI_API_KEY="sk-bench",
        DEXTER_MEMORY="off",
        DEXTER_ROUTER_MODEL="openai:router-bench",
        DEXTER_SEC_USER_AGENT="Bench b@example.com",
    )
    from dexter.config import load_settings
    from dexter.gateway.config import ConfigSource, config_path
    from dexter.gateway.service import build_service
    from dexter.runtime import Runtime

    with fake_telegram(in_process) as (url, token):
        home.mkdir(parents=True)
        config_path(home).write_text(
            json.dumps(
                {
                    "model": "openai:main-bench",
                    "channels": {
                        "telegram": {
                            "dm_policy": "open",
                            "accounts": {"default": {"token": token, "api_base": url}},
                        }
                    },
                }
            )
        )
        async with Runtime(load_settings()) as rt:
            rt._clients[rt.resolve("openai:main-bench").spec] = ScriptedModel(
                [Reply(text="Done: revenue grew 12%.")] * (chats + 10)
            )
            rt._clients[rt.resolve("openai:router-bench").spec] = ScriptedModel([])
            service = build_service(rt, ConfigSource(config_path(home)))
            await service.start()
            await asyncio.to_thread(order, url, token, "benchWait", until="polling", count=1)
            users = [FIRST_CHAT + i for i in range(chats)]
            await asyncio.to_thread(order, url, token, "benchPush", users=users)
            stats = await asyncio.to_thread(
                order, url, token, "benchWait", until="replies", count=chats
            )
            await service.dispatcher.join()  # the last replies' responses read, then stop
            await service.stop()

    pushed, typing_at, replied = stats["pushed"], stats["typing"], stats["replied"]
    # A run that answers before its indicator is sent shows no "typing…": the reply itself is
    # then the first thing the person sees.
    typing = [(min(typing_at.get(c, replied[c]), replied[c]) - t) * 1000 for c, t in pushed.items()]
    reply = [(replied[c] - t) * 1000 for c, t in pushed.items()]
    elapsed = max(replied.values()) - min(pushed.values())
    return {
        "throughput": chats / elapsed,
        "typing_p50": statistics.median(typing),
        "typing_p95": p95(typing),
        "reply_p50": statistics.median(reply),
        "reply_p95": p95(reply),
        "saw_typing": sum(1 for c in pushed if c in typing_at and typing_at[c] <= replied[c]),
    }


async def main(chats: int, rounds: int, in_process: bool) -> None:
    where = "in the gateway's process" if in_process else "in its own process"
    print(
        f"gateway: {chats} chats, one message each, zero-latency scripted model, "
        f"fake Telegram {where}"
    )
    results = []
    for n in range(1, rounds + 1):
        r = await one_round(chats, in_process)
        results.append(r)
        print(
            f"  round {n}: {r['throughput']:.1f} messages/s; first typing p50 "
            f"{r['typing_p50']:.0f} ms, p95 {r['typing_p95']:.0f} ms; reply p50 "
            f"{r['reply_p50']:.0f} ms, p95 {r['reply_p95']:.0f} ms; "
            f"{r['saw_typing']:.0f}/{chats} saw typing before the reply"
        )

    def med(key: str) -> float:
        return statistics.median(r[key] for r in results)

    print(f"median of {rounds} round(s):")
    print(f"  throughput: {med('throughput'):.1f} messages/s")
    print(
        f"  inbound -> first typing: p50 {med('typing_p50'):.0f} ms, "
        f"p95 {med('typing_p95'):.0f} ms (target <= 200 ms)"
    )
    print(
        f"  inbound -> reply:        p50 {med('reply_p50'):.0f} ms, p95 {med('reply_p95'):.0f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chats", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fake-in-process", action="store_true")
    parser.add_argument("--serve-fake", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fake:
        serve_forever()
    else:
        asyncio.run(main(args.chats, args.rounds, args.fake_in_process))
