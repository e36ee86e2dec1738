"""A realistic research run end to end: `dexter ask` against a local OpenAI-compatible server that
scripts the models, with SEC data served from the recorded mirror on 127.0.0.1.

The main model calls two meta-tools in parallel, each planned by the router model, then
`calculate`, then answers citing sources; we check what the user sees and what was recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from tests.support.sec_mirror import Mirror, MirrorServer
from tests.support.wire_server import Recorded, Reply, WireServer, sse

BASE = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        **BASE,
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
    }


def tool_calls_reply(*calls: tuple[str, str, dict[str, Any]]) -> Reply:
    deltas = [
        chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ]
            }
        )
        for i, (call_id, name, args) in enumerate(calls)
    ]
    return sse([*deltas, chunk({}, "tool_calls"), usage(900, 60)])


def text_reply(text: str) -> Reply:
    return sse([chunk({"content": text}), chunk({}, "stop"), usage(2400, 120)])


def offers_tool(name: str) -> Any:
    def matches(request: Recorded) -> bool:
        tools = request.json().get("tools") or []
        return any(t["function"]["name"] == name for t in tools)

    return matches


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire_server: WireServer) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    for name in (
        "FINANCIAL_DATASETS_API_KEY",
        "DEXTER_HOME",
        "DEXTER_MODEL",
        "DEXTER_ROUTER_MODEL",
        "DEXTER_FINANCE_TOOLS",
        "ANTHROPIC_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    (tmp_path / ".dexter").mkdir()  # a project home, found from the working directory
    with MirrorServer(Mirror()) as sec:
        for key, value in sec.env().items():
            monkeypatch.setenv(key, value)
        yield tmp_path


def test_research_run_with_parallel_meta_tools_calculation_and_citations(
    env: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    question = (
        "How much did Apple's revenue grow in FY2025, and what supply-chain risks does it flag?"
    )
    # 1. The main model asks for fundamentals and a filing section at once.
    wire_server.push(
        tool_calls_reply(
            ("call_fin", "get_financials", {"query": "Apple revenue, last 2 fiscal years"}),
            (
                "call_fil",
                "read_filings",
                {"query": "Apple FY2024 10-K risk factors about supply chain"},
            ),
        )
    )
    # 2. Each meta-tool's router plan (they run concurrently, so they are routed by content).
    wire_server.route(
        offers_tool("income_statements"),
        tool_calls_reply(
            ("r1", "income_statements", {"company": "Apple", "period": "annual", "limit": 2})
        ),
    )
    wire_server.route(
        offers_tool("filing_section"),
        tool_calls_reply(
            (
                "r2",
                "filing_section",
                {
                    "company": "AAPL",
                    "form": "10-K",
                    "item": "1A",
                    "year": 2024,
                    "focus": "supply chain",
                },
            ),
        ),
    )
    # 3. The main model computes the growth exactly, then answers with citations.
    wire_server.push(
        tool_calls_reply(
            (
                "call_calc",
                "calculate",
                {"operation": "percent_change", "start": 391035000000, "end": 416161000000},
            ),
        ),
        text_reply(
            "Apple's revenue grew 6.43% in FY2025, to $416.2B from $391.0B [S1]. Its 10-K flags "
            "reliance on outsourcing partners in Asia and single-source components [S2] [S3]."
        ),
    )

    code = main(["ask", "--model", "openai:gpt-test", question])
    out = capsys.readouterr().out
    assert code == 0
    assert "Apple's revenue grew 6.43% in FY2025" in out
    sources = out.split("Sources", 1)[1]
    assert "[S1]" in sources and "[S2]" in sources
    assert "0000320193-25-000079" in sources  # the FY2025 10-K behind the revenue figures
    assert "0000320193-24-000123" in sources  # the FY2024 10-K behind the risk factors

    # What the tools returned reached the model, with source ids to cite.
    after_tools = next(
        r.json()
        for r in wire_server.requests
        if any(m.get("tool_call_id") == "call_fin" for m in r.json()["messages"])
    )
    tool_messages = {
        m["tool_call_id"]: m["content"] for m in after_tools["messages"] if m["role"] == "tool"
    }
    assert "416,161" in tool_messages["call_fin"] and "[S" in tool_messages["call_fin"]
    assert "supply" in tool_messages["call_fil"].lower()
    # OPENAI_BASE_URL points at a server that may serve one model: the router used the main one.
    routers = [
        r.json()
        for r in wire_server.requests
        if r.json().get("tools")
        and r.json()["tools"][0]["function"]["name"] in ("income_statements", "filing_section")
    ]
    assert len(routers) == 2 and all(r["model"] == "gpt-test" for r in routers)

    pad = next((env / ".dexter" / "scratchpad").glob("*.jsonl"))
    records = [json.loads(line) for line in pad.read_text().splitlines()]
    tools_called = [r["tool"] for r in records if r["type"] == "tool_call"]
    assert sorted(tools_called) == ["calculate", "get_financials", "read_filings"]
    answer = records[-1]
    assert answer["type"] == "answer" and answer["status"] == "answered"
    # Tools ran in parallel, so which filing is S1 varies; what is cited is recorded either way.
    cited = {s["id"] for s in answer["sources"]}
    assert {"S1", "S2"} <= cited <= {"S1", "S2", "S3"}
