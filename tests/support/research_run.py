"""A long research session on the product's own tool set, measured by what was sent.

The session: `dexter ask` on the `ask` channel (the runtime binds the tools exactly as for a user)
reads forty 30,000-character filings from its workspace with `read_file`, four a round for ten
rounds, then answers. Each filing leads with one figure line ("FIGURE-7: revenue 1,007.25 USD bn
[S7]"); an answer that still has all forty in front of it has kept every figure.

The scripted model decides each reply from the request it was sent, as a model would: when
`read_file` is not among the offered tools it asks for it with `load_tools` first; when there is
nothing left to read it answers. The same decisions drive an in-process run (a ScriptedModel in
the runtime) and a whole-process one (a scripted OpenAI-compatible server), so the two can be
compared request by request.

Every request is measured with `estimate_request` (the estimate Dexter budgets with: characters
over 3.5 plus per-message overheads; tool schemas included). Three figures per request:
- sent: what Dexter sent;
- unmanaged: the same request with every cleared or previewed result back in full;
- original: the original Dexter's rule applied to the unmanaged requests. Before each model call
  it clears every compactable result but the newest 4 once more than 8 are live (or they hold
  more than 80,000 estimated tokens) and leaves its 33-character placeholder; cleared stays
  cleared. Its summarising tier (after a round whose request exceeded the window minus 33,000
  tokens) replaces everything but the system prompt and the question with a summary; that never
  fires in this session at 128k or 200k windows and is modelled as a 3,000-token summary.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dexter.agent.context.budget import estimate_request, estimate_tokens
from dexter.models.scripted import Reply, ScriptedModel
from dexter.models.types import (
    AssistantMessage,
    Message,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from tests.support.long_session import FIGURE, document
from tests.support.wire_server import Recorded, WireServer, sse
from tests.support.wire_server import Reply as WireReply

CALLS_PER_ROUND = 4
ROUNDS = 10
FILINGS = CALLS_PER_ROUND * ROUNDS
QUESTION = "Compile revenue for all forty filings in filings/ and rank them."
ANSWER = "Ranked list of forty revenues."
MODEL = "openai:bench"
# Ten rounds of reads and the answer: more steps than the default 10 allows.
MAX_ITERATIONS = ROUNDS + 2
READ = "read_file"
FINDER = "load_tools"

# The original Dexter's microcompact, as its reference describes it (constants only).
ORIGINAL_MARKER = "[Old tool result content cleared]"
ORIGINAL_COUNT_TRIGGER = 8
ORIGINAL_KEEP_RECENT = 4
ORIGINAL_TOKEN_TRIGGER = 80_000
ORIGINAL_THRESHOLD_MARGIN = 33_000
ORIGINAL_SUMMARY_TOKENS = 3_000
ORIGINAL_COMPACTABLE = frozenset(
    {
        "get_financials",
        "get_market_data",
        "read_filings",
        "stock_screener",
        "web_fetch",
        "web_search",
        "x_search",
        "browser",
        "read_file",
        "memory_search",
        "memory_get",
        "heartbeat",
        "cron",
    }
)


def filing_path(n: int) -> str:
    return f"filings/filing-{n:02d}.txt"


def write_filings(workspace: Path) -> None:
    folder = workspace / "filings"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(FILINGS):
        (folder / f"filing-{n:02d}.txt").write_text(document(n) + "\n")


def call_id(round_no: int, index: int) -> str:
    # As long as OpenAI's own ids ("call_" and 24 characters), since markers name them.
    digest = hashlib.sha1(f"{round_no}/{index}".encode(), usedforsecurity=False).hexdigest()
    return "call_" + digest[:24]


# -- the scripted model's decisions ---------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One reply: tool calls (id, name, args) or, with none, the answer text."""

    calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()
    text: str = ""


def decide(request: ModelRequest) -> Step:
    """What a model reading this request does next."""
    if not request.tools:
        return Step(text="[]")  # a side call (standing instructions): nothing to add
    if request.tool_choice == "none":
        return Step(text=ANSWER)
    made = [c for m in request.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    reads = sum(1 for c in made if c.name == READ)
    round_no = len([m for m in request.messages if isinstance(m, AssistantMessage)])
    if reads >= FILINGS:
        return Step(text=ANSWER)
    offered = {spec.name for spec in request.tools}
    if READ not in offered:
        if FINDER in offered and not any(c.name == FINDER for c in made):
            return Step(calls=((call_id(round_no, 0), FINDER, {"names": [READ]}),))
        raise AssertionError(f"{READ} is neither offered nor offered on request: {offered}")
    return Step(
        calls=tuple(
            (call_id(round_no, k), READ, {"path": filing_path(reads + k)})
            for k in range(CALLS_PER_ROUND)
        )
    )


def scripted_model(requests: list[ModelRequest]) -> ScriptedModel:
    def reply(request: ModelRequest) -> Reply:
        requests.append(request)
        step = decide(request)
        usage = Usage(input_tokens=estimate_request(request), output_tokens=60)
        return Reply(
            text=step.text,
            tool_calls=[(name, args) for _, name, args in step.calls],
            call_ids=[cid for cid, _, _ in step.calls],
            usage=usage,
        )

    return ScriptedModel([reply] * 200, name="bench")


# -- the wire ---------------------------------------------------------------------------------


def request_from_wire(body: Mapping[str, Any]) -> ModelRequest:
    """The ModelRequest an OpenAI chat-completions body carries (what was really sent)."""
    names: dict[str, str] = {}
    messages: list[Message] = []
    for raw in body.get("messages") or []:
        role, content = raw.get("role"), raw.get("content") or ""
        if role == "system":
            messages.append(SystemMessage(content))
        elif role == "user":
            messages.append(UserMessage(content))
        elif role == "assistant":
            calls = tuple(
                ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in raw.get("tool_calls") or []
            )
            names |= {c.id: c.name for c in calls}
            messages.append(AssistantMessage(content=content, tool_calls=calls))
        elif role == "tool":
            cid = raw["tool_call_id"]
            messages.append(ToolMessage(cid, names.get(cid, ""), content))
    tools = [
        ToolSpec(t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
        for t in body.get("tools") or []
    ]
    choice = body.get("tool_choice")
    return ModelRequest(messages=messages, tools=tools, tool_choice=choice or "auto")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def wire_reply(request: ModelRequest) -> WireReply:
    step = decide(request)
    usage = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "bench",
        "choices": [],
        "usage": {"prompt_tokens": estimate_request(request), "completion_tokens": 60},
    }
    if not step.calls:
        return sse([_chunk({"content": step.text}), _chunk({}, "stop"), usage])
    deltas = [
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ]
            }
        )
        for i, (cid, name, args) in enumerate(step.calls)
    ]
    return sse([*deltas, _chunk({}, "tool_calls"), usage])


# -- measuring --------------------------------------------------------------------------------


@dataclass
class Figures:
    window: int
    sent: list[int] = field(default_factory=list)
    unmanaged: list[int] = field(default_factory=list)
    original: list[int] = field(default_factory=list)
    figures_kept: int = 0
    original_figures_kept: int = 0
    tool_chars: int = 0
    tools_offered: int = 0
    system_chars: int = 0
    # Whole process only: the request bodies' bytes, and what they would be unmanaged.
    wire_bytes: list[int] = field(default_factory=list)
    wire_unmanaged_bytes: list[int] = field(default_factory=list)

    @property
    def total_pct(self) -> float:
        return 100 * sum(self.sent) / sum(self.unmanaged)

    @property
    def peak_pct(self) -> float:
        return 100 * max(self.sent) / self.window

    @property
    def original_total_pct(self) -> float:
        return 100 * sum(self.original) / sum(self.unmanaged)

    @property
    def original_peak_pct(self) -> float:
        return 100 * max(self.original) / self.window


def _text(request: ModelRequest) -> str:
    return "\n".join(m.content for m in request.messages)


def _figures(request: ModelRequest) -> int:
    return len(set(FIGURE.findall(_text(request))))


def _with_results(request: ModelRequest, results: Mapping[str, str]) -> ModelRequest:
    messages = [
        replace(m, content=results.get(m.tool_call_id, m.content))
        if isinstance(m, ToolMessage)
        else m
        for m in request.messages
    ]
    return replace(request, messages=messages)


class OriginalRules:
    """The original's clearing, applied to a sequence of unmanaged requests (see the module)."""

    def __init__(self, window: int) -> None:
        self.threshold = window - ORIGINAL_THRESHOLD_MARGIN
        self.cleared: set[str] = set()
        # After a summary the original's messages restart from the system prompt and question.
        self.summarised_before = 0
        self.last_input = 0

    def request(self, unmanaged: ModelRequest) -> ModelRequest:
        if self.last_input > self.threshold:
            self.summarised_before = len(unmanaged.messages)
            self.cleared.clear()
        messages = list(unmanaged.messages)
        if self.summarised_before:
            summary = UserMessage(QUESTION + "\n\n" + "x" * int(ORIGINAL_SUMMARY_TOKENS * 3.5))
            messages = [messages[0], summary, *messages[self.summarised_before :]]
        live = [
            m
            for m in messages
            if isinstance(m, ToolMessage)
            and m.name in ORIGINAL_COMPACTABLE
            and m.tool_call_id not in self.cleared
        ]
        if len(live) > ORIGINAL_COUNT_TRIGGER or (
            sum(estimate_tokens(m.content) for m in live) > ORIGINAL_TOKEN_TRIGGER
        ):
            self.cleared |= {m.tool_call_id for m in live[:-ORIGINAL_KEEP_RECENT]}
        messages = [
            replace(m, content=ORIGINAL_MARKER)
            if isinstance(m, ToolMessage) and m.tool_call_id in self.cleared
            else m
            for m in messages
        ]
        result = replace(unmanaged, messages=messages)
        self.last_input = estimate_request(result)
        return result


def measure(requests: Sequence[ModelRequest], window: int) -> Figures:
    """Sent, unmanaged and original sizes of the main loop's requests (those offering tools)."""
    main = [r for r in requests if r.tools]
    full: dict[str, str] = {}
    figures = Figures(window)
    original = OriginalRules(window)
    final_original: ModelRequest | None = None
    for request in main:
        for message in request.messages:
            if isinstance(message, ToolMessage):
                # A result's first appearance is the full text (none here exceeds the caps).
                full.setdefault(message.tool_call_id, message.content)
        unmanaged = _with_results(request, full)
        final_original = original.request(unmanaged)
        figures.sent.append(estimate_request(request))
        figures.unmanaged.append(estimate_request(unmanaged))
        figures.original.append(estimate_request(final_original))
    figures.figures_kept = _figures(main[-1])
    figures.original_figures_kept = _figures(final_original) if final_original else 0
    first = main[0]
    figures.tools_offered = len(first.tools)
    figures.tool_chars = sum(
        len(json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}))
        for t in first.tools
    )
    figures.system_chars = len(first.messages[0].content)
    return figures


# -- running ----------------------------------------------------------------------------------


@contextmanager
def session_places(window: int) -> Iterator[tuple[Path, Path]]:
    """(workspace, home) in a fresh temporary folder; the home's settings state the window."""
    with tempfile.TemporaryDirectory() as tmp:
        workspace, home = Path(tmp) / "work", Path(tmp) / "home"
        write_filings(workspace)
        home.mkdir()
        settings = {"providers": {"openai": {"contextWindow": window}}}
        (home / "settings.json").write_text(json.dumps(settings))
        yield workspace, home


def environment(home: Path, server: WireServer) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DEXTER_") and k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")
    }
    env |= {
        "DEXTER_HOME": str(home),
        "OPENAI_API_KEY": "sk-bench-000000",
        "OPENAI_BASE_URL": server.url + "/v1",
    }
    return env


async def _run_in_process(workspace: Path, env: dict[str, str]) -> list[ModelRequest]:
    from dexter.agent.events import Done
    from dexter.cli.open_runtime import open_runtime
    from dexter.config import load_settings
    from dexter.runtime import ASK, AgentSpec

    requests: list[ModelRequest] = []
    runtime = open_runtime(load_settings(cwd=workspace, environ=env))
    runtime._clients[runtime.resolve(MODEL).spec] = scripted_model(requests)
    async with runtime:
        spec = AgentSpec(model=MODEL, channel=ASK, max_iterations=MAX_ITERATIONS)
        session = runtime.agent(spec)
        done = None
        async for event in session.run(QUESTION):
            if isinstance(event, Done):
                done = event
        assert done is not None and done.status == "answered", done
    return requests


def run_in_process(window: int) -> Figures:
    """The session inside this process: the runtime's agent with a scripted model injected."""
    with session_places(window) as (workspace, home):
        server = WireServer().start()  # answers the runtime's server probe (404), nothing else
        try:
            requests = asyncio.run(_run_in_process(workspace, environment(home, server)))
        finally:
            server.stop()
        return measure(requests, window)


def run_whole_process(window: int) -> Figures:
    """`dexter ask` as a user runs it, against a scripted OpenAI-compatible server."""
    with session_places(window) as (workspace, home):
        server = WireServer().start()
        server.respond_with(lambda recorded: wire_reply(_parsed(recorded)))
        try:
            command = [
                *(sys.executable, "-m", "dexter", "ask", "--model", MODEL),
                *("--max-iterations", str(MAX_ITERATIONS), QUESTION),
            ]
            done = subprocess.run(
                command,
                env=environment(home, server),
                cwd=workspace,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode != 0 or ANSWER not in done.stdout:
                raise RuntimeError(f"dexter ask failed ({done.returncode}): {done.stderr[-2000:]}")
            recorded = list(server.requests)
        finally:
            server.stop()
        figures = measure([_parsed(r) for r in recorded], window)
        figures.wire_bytes, figures.wire_unmanaged_bytes = _body_sizes(recorded)
        return figures


def _body_sizes(recorded: Sequence[Recorded]) -> tuple[list[int], list[int]]:
    """Bytes of each main-loop request body, and of the same body with every result in full."""
    full: dict[str, str] = {}
    sent: list[int] = []
    unmanaged: list[int] = []
    for request in recorded:
        body = request.json()
        if not body.get("tools"):
            continue
        grown = 0
        for message in body["messages"]:
            if message.get("role") == "tool":
                content = message.get("content") or ""
                whole = full.setdefault(message["tool_call_id"], content)
                grown += len(json.dumps(whole)) - len(json.dumps(content))
        sent.append(len(request.body))
        unmanaged.append(len(request.body) + grown)
    return sent, unmanaged


def _parsed(recorded: Recorded) -> ModelRequest:
    return request_from_wire(recorded.json())
