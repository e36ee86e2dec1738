"""Time to first token on the `dexter web` page vs the same question in `dexter ask`, and the
memory of `dexter web` idle and with 20 open sessions.

One process, one runtime, the same scripted model (zero latency, so every millisecond measured
is Dexter's own) and the same question, which fetches Apple's income statements from the recorded
SEC mirror on 127.0.0.1 before it answers:

- ask: `Runtime.agent(AgentSpec(channel=ASK))`, as `dexter ask` runs it; its first token is the
  first streamed text;
- web: what the page does, over HTTP to uvicorn on 127.0.0.1: POST /ask, then read
  /runs/ID/events; its first token is the first `answer` event with text in it.

Memory: resident set of this process (the server, its runtime and the client) once the app is up
and one question answered, then after 20 questions in 20 new sessions (their agents are kept
warm, as for 20 people with a session open).

Target: the web path adds <= 50 ms. Prints the figures; asserts nothing.
Run: DEXTER_FIXTURES=../shared/fixtures uv run python bench/web_first_token.py
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RUNS = 20
SESSIONS = 20
MAIN = "openai:bench-main"
ROUTER = "openai:bench-router"
QUESTION = "What was Apple's revenue in FY2025?"
FETCH = ("income_statements", {"company": "AAPL", "period": "annual", "limit": 2})
ANSWER = "Apple's revenue in FY2025 was $416,161 million [S1], up from $391,035 million."


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def via_runtime(rt: object) -> float:
    """First streamed text in ms, as `dexter ask` runs the question."""
    from dexter.agent.events import TextDelta
    from dexter.runtime import ASK, AgentSpec, Runtime

    assert isinstance(rt, Runtime)
    started = time.perf_counter()
    first = 0.0
    async for event in rt.agent(AgentSpec(model=MAIN, channel=ASK)).run(QUESTION):
        if isinstance(event, TextDelta) and not first:
            first = time.perf_counter() - started
    return first * 1000


async def via_page(client: object, csrf: str) -> tuple[float, float]:
    """(first answer text, done) in ms, as the page asks and reads the stream."""
    import httpx2

    assert isinstance(client, httpx2.AsyncClient)
    headers = {"x-csrf-token": csrf, "accept": "application/json"}
    started = time.perf_counter()
    run = (await client.post("/ask", data={"question": QUESTION}, headers=headers)).json()
    first = done = 0.0
    event = ""
    async with client.stream("GET", run["events"]) as response:
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event == "answer" and not first:
                if json.loads(line[5:])["html"]:
                    first = time.perf_counter() - started
            elif line.startswith("data:") and event == "done":
                done = time.perf_counter() - started
            if event == "end":
                break
    return first * 1000, done * 1000


async def main() -> None:
    import httpx2
    import uvicorn
    from tests.support.sec_mirror import Mirror, MirrorServer

    from dexter.cli.web_command import bind, build
    from dexter.config import load_settings
    from dexter.models.scripted import Reply, ScriptedModel, calls
    from dexter.web.accounts import Accounts

    steps: list[object] = []
    for _ in range(2 * RUNS + SESSIONS + 4):
        steps += [calls(FETCH), Reply(text=ANSWER)]
    with tempfile.TemporaryDirectory() as tmp, MirrorServer(Mirror()) as mirror:
        os.environ.update(mirror.env())
        os.environ.update(
            {
                "DEXTER_HOME": str(Path(tmp) / "home"),
                "OPENAI_API_KEY": "sk-bench-123456",
                "DEXTER_FINANCE_TOOLS": "direct",
                "DEXTER_MEMORY": "off",
                "DEXTER_VERIFY": "flag",
                "DEXTER_ROUTER_MODEL": ROUTER,
            }
        )
        os.chdir(tmp)
        sock = bind("127.0.0.1", 0)
        # What `dexter web -m MAIN` serves, with the scripted model in its runtime.
        served = build(load_settings(), Accounts({}), sock, model=MAIN)
        state = served.state
        rt = state.runtime
        rt._clients[rt.resolve(MAIN).spec] = ScriptedModel(steps)
        rt._clients[rt.resolve(ROUTER).spec] = ScriptedModel([Reply(text="[]")] * 1000)
        server = uvicorn.Server(
            uvicorn.Config(served.app, log_level="warning", lifespan="off", access_log=False)
        )
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:  # noqa: ASYNC110 - uvicorn says so only by this flag
            await asyncio.sleep(0.01)
        base = served.base
        async with httpx2.AsyncClient(base_url=base, timeout=30) as client:
            await client.get(f"/login?token={state.token.value}")
            page = await client.get("/", headers={"accept": "text/html"})
            found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
            assert found is not None
            csrf = found.group(1)
            await via_runtime(rt)  # warm-up: imports, the store, the mirror's first answers
            await via_page(client, csrf)
            idle = rss_mb()
            ask, web = [], []
            for _ in range(RUNS):  # interleaved, so drift on a busy machine hits both alike
                ask.append(await via_runtime(rt))
                web.append(await via_page(client, csrf))
            before = rss_mb()
            for _ in range(SESSIONS):
                await via_page(client, csrf)
            busy = rss_mb()
        server.should_exit = True
        await serving
        await state.hub.aclose()
        await rt.aclose()

    ask_first = statistics.median(ask)
    web_first = statistics.median(w[0] for w in web)
    web_done = statistics.median(w[1] for w in web)
    added = statistics.median(w[0] - a for w, a in zip(web, ask, strict=True))
    print(f"question: {QUESTION!r} (one SEC data call, then the answer); {RUNS} runs each")
    print(f"ask   first streamed text {ask_first:7.1f} ms")
    print(f"page  first answer text   {web_first:7.1f} ms   done {web_done:7.1f} ms")
    print(
        f"page vs ask, first token: {web_first - ask_first:+.1f} ms (median of pairs {added:+.1f})"
    )
    print(f"target <= 50 ms added: {'met' if web_first - ask_first <= 50 else 'NOT met'}")
    print(
        f"memory (RSS of this process): idle {idle:.0f} MB; after {SESSIONS} more sessions "
        f"{busy:.0f} MB ({(busy - before) / SESSIONS * 1024:.0f} KB per session)"
    )
    print(
        json.dumps(
            {
                "ask_first_ms": ask_first,
                "web_first_ms": web_first,
                "web_added_ms": web_first - ask_first,
                "rss_idle_mb": round(idle, 1),
                "rss_20_sessions_mb": round(busy, 1),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
