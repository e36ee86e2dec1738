"""Meta-tools driven by a scripted router model: planning, parallel execution, merging, failures."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from dexter.models.errors import ErrorKind, ModelError
from dexter.models.scripted import Reply, ScriptedModel, calls, text
from dexter.models.types import SystemMessage
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.finance.routed import GetFinancials, RoutedArgs, routed_tools


class StatementArgs(BaseModel):
    company: str
    period: str = "annual"
    report_period_gte: str | None = None


class FakeStatements(Tool[StatementArgs]):
    """Stands in for a data call: records what it was asked, sleeps, answers with a source id."""

    name: ClassVar[str] = "income_statements"
    description: ClassVar[str] = "Income statements."
    Args = StatementArgs
    concurrency_safe: ClassVar[bool] = True

    def __init__(self, delay: float = 0.2, fail_for: str | None = None) -> None:
        self.delay = delay
        self.fail_for = fail_for
        self.seen: list[StatementArgs] = []
        self.cancelled = 0
        self.running = 0
        self.most_at_once = 0

    async def run(self, args: StatementArgs, ctx: ToolContext) -> ToolResult:
        self.seen.append(args)
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.running -= 1
        if args.company == self.fail_for:
            raise ToolFailure(f"No SEC filer matches {args.company!r}.")
        source = ctx.sources.add(f"10-K of {args.company}", None)
        return ToolResult(f"{args.company} {args.period} revenue 100 [{source}]")


def tool(model: ScriptedModel, inner: Tool[Any], **kw: Any) -> GetFinancials:
    return GetFinancials([inner], lambda: model, today=lambda: date(2026, 11, 30), **kw)


async def run(meta: GetFinancials, query: str = "q") -> ToolResult:
    return await meta.run(RoutedArgs(query=query), ToolContext())


async def test_calls_run_in_parallel_and_keep_every_result() -> None:
    inner = FakeStatements(delay=0.3)
    router = ScriptedModel(
        [
            calls(
                ("income_statements", {"company": "Apple", "period": "annual"}),
                ("income_statements", {"company": "Apple", "period": "quarterly"}),
                ("income_statements", {"company": "nvidia corp"}),
            )
        ]
    )
    result = await run(tool(router, inner), "Apple annual and quarterly revenue vs Nvidia")
    # Measured, not timed: all three were in flight at once (a loaded machine cannot fail this).
    assert inner.most_at_once == 3, "three calls overlap"
    # Same tool, same company, different periods: both survive (the original overwrote one).
    assert "Apple annual revenue 100" in result.content
    assert "Apple quarterly revenue 100" in result.content
    assert "nvidia corp annual revenue 100" in result.content
    assert result.content.index("period=annual") < result.content.index("period=quarterly")
    assert [c["ok"] for c in result.data["calls"]] == [True, True, True]


async def test_router_prompt_carries_the_date_and_only_available_calls() -> None:
    router = ScriptedModel([calls(("income_statements", {"company": "AAPL"}))])
    await run(tool(router, FakeStatements(delay=0)), "Apple revenue since 2022")
    request = router.requests[0]
    system = request.messages[0]
    assert isinstance(system, SystemMessage) and "2026-11-30" in system.content
    assert [spec.name for spec in request.tools] == ["income_statements"]
    assert request.messages[1].content == "Apple revenue since 2022"


async def test_date_inference_reaches_the_data_call() -> None:
    inner = FakeStatements(delay=0)
    router = ScriptedModel(
        [calls(("income_statements", {"company": "AAPL", "report_period_gte": "2022-01-01"}))]
    )
    await run(tool(router, inner), "Apple revenue since 2022")
    assert inner.seen[0].report_period_gte == "2022-01-01"


async def test_unknown_call_malformed_and_invalid_arguments_are_reported() -> None:
    router = ScriptedModel(
        [
            calls(
                ("income_statements", {"company": "AAPL"}),
                ("get_key_ratios", {"ticker": "AAPL"}),  # a name the original's prompt invented
                ("income_statements", '{"company": "MSFT", '),
                ("income_statements", {"period": "annual"}),
            )
        ]
    )
    result = await run(tool(router, FakeStatements(delay=0)))
    assert "AAPL annual revenue 100" in result.content
    assert "unknown data call `get_key_ratios`" in result.content
    assert "not a JSON object" in result.content
    assert "company: Field required" in result.content
    assert [c["ok"] for c in result.data["calls"]] == [True, False, False, False]


async def test_a_slow_call_times_out_and_is_really_cancelled() -> None:
    inner = FakeStatements(delay=3600)
    router = ScriptedModel([calls(("income_statements", {"company": "AAPL"}))])
    with pytest.raises(ToolFailure, match=r"timed out after 0\.2 s"):
        await run(tool(router, inner, timeout=0.2))
    # Really cancelled (an hour-long call would otherwise still be running, or have held the
    # test for an hour): counted by the call itself, not by a wall clock.
    assert inner.cancelled == 1 and inner.running == 0


async def test_partial_failure_keeps_the_rest() -> None:
    router = ScriptedModel(
        [
            calls(
                ("income_statements", {"company": "AAPL"}),
                ("income_statements", {"company": "ZZZ"}),
            )
        ]
    )
    result = await run(tool(router, FakeStatements(delay=0, fail_for="ZZZ")))
    assert "AAPL annual revenue 100" in result.content
    assert "Not available: No SEC filer matches 'ZZZ'." in result.content


async def test_nothing_the_sources_can_answer() -> None:
    router = ScriptedModel([text("Stock options data is not offered by these calls.")])
    with pytest.raises(ToolFailure) as info:
        await run(tool(router, FakeStatements()))
    message = str(info.value)
    assert message.startswith("not available from the configured data sources")
    assert "Stock options data" in message and "income_statements" in message


async def test_router_model_failure_is_a_tool_failure() -> None:
    router = ScriptedModel([ModelError(ErrorKind.AUTH, "bad key", provider="OpenAI")])
    with pytest.raises(ToolFailure, match="data router model failed"):
        await run(tool(router, FakeStatements()))


async def test_missing_router_model_key_is_reported_when_used() -> None:
    def no_model() -> ScriptedModel:
        raise RuntimeError("OPENAI_API_KEY is not set")

    meta = GetFinancials([FakeStatements()], no_model)
    with pytest.raises(ToolFailure, match="OPENAI_API_KEY is not set"):
        await run(meta)


def test_meta_tools_exist_only_for_available_calls() -> None:
    model = ScriptedModel([Reply()])
    tools = routed_tools([FakeStatements()], lambda: model)
    assert [t.name for t in tools] == ["get_financials"]
    assert tools[0].concurrency_safe
    assert set(tools[0].spec().parameters["properties"]) == {"query"}
