"""The context budget: what the next request will hold, and when it crosses 70% and 85%."""

from __future__ import annotations

import pytest

from dexter.agent.context.budget import (
    ContextBudget,
    estimate_messages,
    estimate_tokens,
    estimate_tools,
)
from dexter.models.types import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)

TOOLS = [
    ToolSpec(
        "get_financials",
        "Income statements, balance sheets and cash flows for a ticker.",
        {"type": "object", "properties": {"ticker": {"type": "string"}}},
    )
]


def test_estimate_tokens_is_chars_over_three_and_a_half_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a" * 7) == 2
    assert estimate_tokens("a" * 8) == 3


def test_message_estimate_counts_tool_call_arguments_and_reasoning() -> None:
    bare = AssistantMessage(content="Checking.")
    args = '{"ticker": "AAPL", "period": "annual", "limit": 5}' * 10
    with_call = AssistantMessage(
        content="Checking.",
        tool_calls=(ToolCall("call_1", "get_financials", args),),
        reasoning="r" * 350,
    )
    extra = estimate_messages([with_call]) - estimate_messages([bare])
    assert extra >= estimate_tokens(args) + 100
    assert estimate_tools(TOOLS) > 10


def conversation(result_chars: int, rounds: int) -> list[Message]:
    messages: list[Message] = [SystemMessage("system " * 100), UserMessage("AAPL margins?")]
    for i in range(rounds):
        messages.append(AssistantMessage(tool_calls=(ToolCall(f"c{i}", "get_financials", "{}"),)))
        messages.append(ToolMessage(f"c{i}", "get_financials", "x" * result_chars))
    return messages


def test_measure_adds_what_was_appended_since_the_last_report() -> None:
    budget = ContextBudget(100_000)
    messages = conversation(35_000, 1)  # one 10k-token result after the first call
    sent = 2  # the first call sent system + question
    measured = budget.measure(
        messages, TOOLS, last_reported_input=1_000, messages_at_last_report=sent
    )
    assert measured == 1_000 + estimate_messages(messages[sent:])
    assert measured > 11_000  # the original counted only the stale 1,000


def test_measure_without_report_estimates_everything_including_tool_schemas() -> None:
    budget = ContextBudget(100_000)
    messages = conversation(3_500, 2)
    expected = estimate_messages(messages) + estimate_tools(TOOLS)
    for report in (None, 0):  # a provider reporting 0 gave no usage at all
        assert (
            budget.measure(messages, TOOLS, last_reported_input=report, messages_at_last_report=2)
            == expected
        )
    # A report taken before the list was rewritten (it is now shorter) is ignored.
    assert (
        budget.measure(messages, TOOLS, last_reported_input=90_000, messages_at_last_report=50)
        == expected
    )


def test_levels_cross_at_seventy_and_eighty_five_percent() -> None:
    budget = ContextBudget(200_000)
    assert budget.level(139_999) == "ok"
    assert budget.level(140_000) == "clear"
    assert budget.level(169_999) == "clear"
    assert budget.level(170_000) == "compact"


def test_growing_run_goes_ok_then_clear_then_compact() -> None:
    budget = ContextBudget(100_000)
    levels = []
    for rounds in range(1, 10):
        messages = conversation(35_000, rounds)  # about 10k tokens per round
        levels.append(
            budget.measure(messages, TOOLS, last_reported_input=None, messages_at_last_report=0)
        )
    seen = [budget.level(t) for t in levels]
    assert seen[:6] == ["ok"] * 6
    assert seen[6] == "clear" and seen[7] == "clear"
    assert seen[8] == "compact"


def test_hard_limit_reserves_room_for_the_answer() -> None:
    assert ContextBudget(200_000).hard_limit == 192_000
    assert ContextBudget(8_192).hard_limit == 8_192 - 819
    assert ContextBudget(200_000).fits(192_000)
    assert not ContextBudget(200_000).fits(192_001)


def test_invalid_budgets_are_refused() -> None:
    with pytest.raises(ValueError):
        ContextBudget(0)
    with pytest.raises(ValueError):
        ContextBudget(1000, clear_at=0.9, compact_at=0.8)
