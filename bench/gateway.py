"""Messages per second through the gateway, and latency to the first "typing…" and the reply.

A fake Telegram Bot API on 127.0.0.1 (real HTTP), the real Telegram channel, pipeline,
dispatcher and runtime-built agents, and a zero-latency scripted model; 100 chats each send one
message at once. Target: p95 inbound -> first typing <= 200 ms.

    uv run python bench/gateway.py [--chats 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.fake_telegram import FakeTelegram, serve_telegram

from dexter.models.scripted import Reply, ScriptedModel


class TimedTelegram(FakeTelegram):
    def __init__(self) -> None:
        super().__init__()
        self.pushed: dict[str, float] = {}
        self.first_typing: dict[str, float] = {}
        self.replied: dict[str, float] = {}

    def handle(self, method: str, payload: dict[str, Any]) -> dict[str, Any]:
        now = time.perf_counter()
        chat = str(payload.get("chat_id", ""))
        if method == "sendChatAction":
            self.first_typing.setdefault(chat, now)
        elif method == "sendMessage":
            self.replied.setdefault(chat, now)
        return super().handle(method, payload)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) >= 20 else max(values)


async def main(chats: int) -> None:
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

    with serve_telegram(TimedTelegram()) as fake:
        assert isinstance(fake, TimedTelegram)
        home.mkdir(parents=True)
        config_path(home).write_text(
            json.dumps(
                {
                    "model": "openai:main-bench",
                    "channels": {
                        "telegram": {
                            "dm_policy": "open",
                            "accounts": {"default": {"token": fake.token, "api_base": fake.url}},
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
            await asyncio.to_thread(fake.wait_for, lambda: fake.count("getUpdates") >= 1)
            started = time.perf_counter()
            for i in range(chats):
                chat = 10_000 + i
                fake.pushed[str(chat)] = time.perf_counter()
                fake.push(f"question {i}", user=chat)
            await asyncio.to_thread(fake.wait_for, lambda: len(fake.replied) >= chats, 120.0)
            elapsed = time.perf_counter() - started
            await service.dispatcher.join()  # the last replies' responses read, then stop
            await service.stop()

    # A run that answers before its indicator task first runs sends no "typing…": the reply
    # itself is then the first thing the person sees.
    typing = [
        (min(fake.first_typing.get(c, fake.replied[c]), fake.replied[c]) - t) * 1000
        for c, t in fake.pushed.items()
    ]
    reply = [(fake.replied[c] - t) * 1000 for c, t in fake.pushed.items()]
    print(f"gateway: {chats} chats, one message each, zero-latency scripted model")
    print(f"  throughput: {chats / elapsed:.1f} messages/s ({elapsed:.2f} s total)")
    print(
        f"  inbound -> first typing (or reply): p50 {statistics.median(typing):.0f} ms, "
        f"p95 {p95(typing):.0f} ms (target <= 200 ms; "
        f"{len(fake.first_typing)} of {chats} chats saw typing before the reply)"
    )
    print(
        f"  inbound -> reply:        p50 {statistics.median(reply):.0f} ms, p95 {p95(reply):.0f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chats", type=int, default=100)
    asyncio.run(main(parser.parse_args().chats))
