"""Time to first token through OpenBB Workspace's `/query` vs the same question in `dexter ask`.

One process, one runtime, the same scripted model (zero latency, so every millisecond measured
is Dexter's own) and the same question, which fetches Apple's income statements from the recorded
SEC mirror on 127.0.0.1 before it answers:

- ask: `Runtime.agent(AgentSpec(channel=ASK))`, as `dexter ask` runs it; its first token is the
  first streamed text, its answer is the `done` event (what `dexter ask` prints);
- /query: a POST to the endpoint served by uvicorn on 127.0.0.1, read as Workspace reads it; its
  first event is the first SSE event received, its first token the first `copilotMessageChunk`.
  The endpoint sends the answer once it is checked (Workspace cannot take text back), so its
  first token is compared with ask's answer.

Target: /query adds <= 50 ms. Prints the figures; asserts nothing.
Run: DEXTER_FIXTURES=../shared/fixtures uv run python bench/openbb_first_token.py
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RUNS = 20
MAIN = "openai:bench-main"
ROUTER = "openai:bench-router"
KEY = "bench-openbb-key-0123456789"
QUESTION = "What was Apple's revenue in FY2025?"
FETCH = ("income_statements", {"company": "AAPL", "period": "annual", "limit": 2})
ANSWER = "Apple's revenue in FY2025 was $416,161 million [S1], up from $391,035 million."


def script(runs: int) -> list[object]:
    from dexter.models.scripted import Reply, calls

    steps: list[object] = []
    for _ in range(runs):
        steps += [calls(FETCH), Reply(text=ANSWER)]
    return steps


async def via_runtime(rt: object) -> tuple[float, float]:
    """(first text, done) in ms, as `dexter ask` runs the question."""
    from dexter.agent.events import Done, TextDelta
    from dexter.runtime import ASK, AgentSpec, Runtime

    assert isinstance(rt, Runtime)
    started = time.perf_counter()
    first = done = 0.0
    async for event in rt.agent(AgentSpec(model=MAIN, channel=ASK)).run(QUESTION):
        if isinstance(event, TextDelta) and not first:
            first = time.perf_counter() - started
        if isinstance(event, Done):
            done = time.perf_counter() - started
    return first * 1000, done * 1000


async def via_query(client: object, url: str) -> tuple[float, float, float]:
    """(first SSE event, first message chunk, stream end) in ms, as Workspace reads /query."""
    import httpx2

    assert isinstance(client, httpx2.AsyncClient)
    body = {"messages": [{"role": "human", "content": QUESTION}]}
    headers = {"Authorization": f"Bearer {KEY}"}
    started = time.perf_counter()
    first_event = first_chunk = 0.0
    async with client.stream("POST", url, json=body, headers=headers) as response:
        assert response.status_code == 200, response.status_code
        async for line in response.aiter_lines():
            now = time.perf_counter() - started
            if line.startswith("event:") and not first_event:
                first_event = now
            if line.startswith("event: copilotMessageChunk") and not first_chunk:
                first_chunk = now
    ended = time.perf_counter() - started
    return first_event * 1000, first_chunk * 1000, ended * 1000


async def main() -> None:
    import httpx2
    import uvicorn
    from tests.support.sec_mirror import Mirror, MirrorServer

    from dexter.cli.open_runtime import open_runtime
    from dexter.config import load_settings
    from dexter.models.scripted import Reply, ScriptedModel
    from dexter.web.openbb import OpenBBConfig, openbb_app

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
        rt = open_runtime(load_settings())
        rt._clients[rt.resolve(MAIN).spec] = ScriptedModel(script(2 * RUNS + 2))  # type: ignore[arg-type]
        rt._clients[rt.resolve(ROUTER).spec] = ScriptedModel([Reply(text="[]")] * 1000)  # type: ignore[arg-type]
        app = openbb_app(rt, OpenBBConfig(api_key=KEY, model=MAIN))
        # IPPROTO_TCP, not the default 0: asyncio turns Nagle off only for sockets that say TCP,
        # and with Nagle on every streamed event waits ~40 ms for the client's delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        )
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:  # noqa: ASYNC110 - uvicorn says so only by this flag
            await asyncio.sleep(0.01)
        url = f"http://127.0.0.1:{port}/query"
        async with rt, httpx2.AsyncClient(timeout=30) as client:
            await via_runtime(rt)  # warm-up: imports, the store, the mirror's first answers
            await via_query(client, url)
            ask, query = [], []
            for _ in range(RUNS):  # interleaved, so drift on a busy machine hits both alike
                ask.append(await via_runtime(rt))
                query.append(await via_query(client, url))
        server.should_exit = True
        await serving

    ask_first = statistics.median(a[0] for a in ask)
    ask_done = statistics.median(a[1] for a in ask)
    event = statistics.median(q[0] for q in query)
    chunk = statistics.median(q[1] for q in query)
    ended = statistics.median(q[2] for q in query)
    added = statistics.median(q[1] - a[1] for q, a in zip(query, ask, strict=True))
    print(f"question: {QUESTION!r} (one SEC data call, then the answer); {RUNS} runs each")
    print(f"ask     first streamed text {ask_first:7.1f} ms   answer (done) {ask_done:7.1f} ms")
    print(
        f"/query  first SSE event     {event:7.1f} ms   first message chunk {chunk:7.1f} ms"
        f"   stream end (tables, citations) {ended:7.1f} ms"
    )
    print(
        f"/query first token vs ask's answer: {chunk - ask_done:+.1f} ms "
        f"(median of pairs {added:+.1f})"
    )
    print(f"target <= 50 ms added: {'met' if chunk - ask_done <= 50 else 'NOT met'}")
    print(
        json.dumps(
            {
                "ask_first_ms": ask_first,
                "ask_done_ms": ask_done,
                "query_first_event_ms": event,
                "query_first_chunk_ms": chunk,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
