"""Compaction: a bounded, structured summary that keeps figures, the question and follow-ups."""

from __future__ import annotations

import json

import pytest

from dexter.agent.context.budget import estimate_messages, estimate_request
from dexter.agent.context.compaction import (
    CompactionFailed,
    compact,
    estimate_compaction,
    worth_compacting,
)
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.scripted import Reply, ScriptedModel, text
from dexter.models.types import (
    AssistantMessage,
    Message,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)

QUESTION = "Compare Apple's and Microsoft's FY2024 operating margins."
FOLLOW_UP = "Also include Alphabet, please — same basis."
CONSTRAINTS = ["Use GAAP figures only", "Report in USD"]
SUMMARY = (
    "## Question and intent\nFY2024 operating margins, AAPL vs MSFT (+GOOGL).\n"
    "## Data gathered\n"
    "- AAPL FY2024 revenue: $391,035M [S1] (get_financials ticker=AAPL)\n"
    "- AAPL FY2024 operating income: $123,216M [S1]\n"
    "- MSFT FY2024 revenue: $245,122M [S2] (get_financials ticker=MSFT)\n"
    "## Sources\n[S1] AAPL 10-K 2024; [S2] MSFT 10-K 2024\n"
    "## What remains\nGOOGL figures\n## Next steps\nFetch GOOGL income statement"
)


def round_of(i: int, result: str) -> list[Message]:
    call = ToolCall(f"call_{i}", "get_financials", json.dumps({"ticker": f"T{i}"}))
    return [
        AssistantMessage(content=f"Fetching round {i}.", tool_calls=(call,)),
        ToolMessage(f"call_{i}", "get_financials", result),
    ]


def run_messages(rounds: int, result_chars: int = 2_000) -> list[Message]:
    messages: list[Message] = [
        SystemMessage("You are Dexter."),
        UserMessage("What was NVDA's FY2023 revenue?"),
        AssistantMessage(content="NVDA FY2023 revenue was $26,974M."),
        UserMessage(QUESTION),
    ]
    for i in range(rounds):
        messages += round_of(i, f"[S{i}] revenue {i * 1000}M " + "x" * result_chars)
        if i == 1:
            messages.append(UserMessage(FOLLOW_UP))
    return messages


async def test_compaction_rebuilds_question_summary_constraints_follow_ups_and_last_rounds() -> (
    None
):
    messages = run_messages(5)
    model = ScriptedModel([text(SUMMARY, usage=Usage(input_tokens=900, output_tokens=120))])
    result = await compact(
        messages,
        model=model,
        query_index=3,
        constraints=CONSTRAINTS,
        keep_rounds=2,
        max_input_tokens=50_000,
    )
    new = result.messages
    assert isinstance(new[0], SystemMessage) and new[0].content == "You are Dexter."
    assert result.query_index == 1
    user = new[1]
    assert isinstance(user, UserMessage)
    assert user.content.startswith(QUESTION)
    for figure in ("$391,035M", "$123,216M", "$245,122M", "[S1]", "[S2]"):
        assert figure in user.content
    for constraint in CONSTRAINTS:
        assert constraint in user.content
    assert FOLLOW_UP in user.content
    # The last two rounds follow verbatim, each assistant turn with its tool result.
    assert new[2:] == messages[-4:]
    assert isinstance(new[2], AssistantMessage) and isinstance(new[3], ToolMessage)
    assert new[3].tool_call_id == new[2].tool_calls[0].id
    assert result.summary == SUMMARY
    assert result.usage == Usage(input_tokens=900, output_tokens=120)
    assert result.tokens_after < result.tokens_before
    # The summariser saw the earlier rounds, the history turn and the follow-up.
    sent = model.requests[0].messages[-1].content
    assert "revenue 0M" in sent and "$26,974M" in sent and FOLLOW_UP in sent
    assert "revenue 4000M" not in sent  # kept verbatim, not re-summarised
    assert QUESTION in sent and "Use GAAP figures only" in sent
    assert model.requests[0].tools == ()


async def test_markers_and_previews_are_passed_on_as_they_are() -> None:
    messages = run_messages(3)
    marker = (
        "[Result of get_financials(ticker=AAPL) cleared; "
        "full text in .dexter/tool-results/r1/c9.txt]"
    )
    messages.insert(5, ToolMessage("call_x", "get_financials", marker))
    model = ScriptedModel([text(SUMMARY)])
    await compact(messages, model=model, query_index=3, constraints=[], max_input_tokens=20_000)
    assert marker in model.requests[0].messages[-1].content


async def test_huge_material_is_summarised_in_chunks_under_the_bound() -> None:
    messages = run_messages(10, result_chars=30_000)  # 300k chars of tool results
    bound = 20_000

    def reply(request: ModelRequest) -> Reply:
        return text(f"- chunk figure: {len(model.requests)}M [S{len(model.requests)}]")

    model = ScriptedModel([reply] * 20)
    result = await compact(
        messages, model=model, query_index=3, constraints=CONSTRAINTS, max_input_tokens=bound
    )
    assert len(model.requests) >= 3  # several chunks, then a merge
    for request in model.requests:
        assert estimate_request(request) <= bound
        assert estimate_messages(request.messages) <= bound
    # The merge call saw every partial summary.
    merge_input = model.requests[-1].messages[-1].content
    for n in range(1, len(model.requests)):
        assert f"chunk figure: {n}M" in merge_input
    assert result.summary_calls == len(model.requests)
    assert result.usage.input_tokens == 10 * len(model.requests)


async def test_oversized_single_result_is_split_not_sent_whole() -> None:
    messages = run_messages(3, result_chars=150_000)
    model = ScriptedModel([text("- part summary 1.5M [S1]")] * 40)
    await compact(messages, model=model, query_index=3, constraints=[], max_input_tokens=10_000)
    assert all(estimate_request(r) <= 10_000 for r in model.requests)


async def test_second_compaction_carries_question_and_follow_ups_forward() -> None:
    messages = run_messages(5)
    first = await compact(
        messages,
        model=ScriptedModel([text(SUMMARY)]),
        query_index=3,
        constraints=CONSTRAINTS,
        max_input_tokens=50_000,
    )
    later = [*first.messages, *round_of(8, "late 8"), *round_of(9, "late 9"), *round_of(10, "x")]
    later.insert(4, UserMessage("And show per-share figures."))
    model = ScriptedModel([text("## Data gathered\n- merged")])
    second = await compact(
        later, model=model, query_index=1, constraints=CONSTRAINTS, max_input_tokens=50_000
    )
    content = second.messages[1].content
    assert content.startswith(QUESTION + "\n\n")
    assert content.count(QUESTION) == 1  # not nested inside itself
    assert FOLLOW_UP in content and "And show per-share figures." in content
    assert "$391,035M" in model.requests[0].messages[-1].content  # old summary was merged


async def test_model_error_raises_compaction_failed() -> None:
    error = ModelError(ErrorKind.AUTH, "bad key", provider="Scripted")
    model = ScriptedModel([error])
    with pytest.raises(CompactionFailed):
        await compact(
            run_messages(4), model=model, query_index=3, constraints=[], max_input_tokens=20_000
        )


async def test_empty_summary_raises_compaction_failed() -> None:
    model = ScriptedModel([text("   \n")])
    with pytest.raises(CompactionFailed):
        await compact(
            run_messages(4), model=model, query_index=3, constraints=[], max_input_tokens=20_000
        )


async def test_bound_too_small_for_any_material_fails_without_calling() -> None:
    model = ScriptedModel([])
    with pytest.raises(CompactionFailed):
        await compact(
            run_messages(4), model=model, query_index=3, constraints=[], max_input_tokens=500
        )
    assert model.requests == []


def test_worth_compacting_compares_cost_and_saving() -> None:
    assert worth_compacting(150_000, estimated_summary_cost=40_000, estimated_saving=200_000)
    assert not worth_compacting(150_000, estimated_summary_cost=40_000, estimated_saving=30_000)
    assert not worth_compacting(150_000, estimated_summary_cost=0, estimated_saving=0)


def test_estimate_compaction_worth_it_early_not_on_the_last_call() -> None:
    messages = run_messages(8, result_chars=30_000)
    early = estimate_compaction(messages, query_index=3, keep_rounds=2, remaining_calls=20)
    last = estimate_compaction(messages, query_index=3, keep_rounds=2, remaining_calls=1)
    tokens = estimate_messages(messages)
    assert worth_compacting(tokens, early.cost, early.saving)
    assert not worth_compacting(tokens, last.cost, last.saving)
    # Nothing to summarise when only the kept rounds exist.
    tiny = estimate_compaction(run_messages(2)[2:], query_index=1, keep_rounds=2)
    assert not worth_compacting(tokens, tiny.cost, tiny.saving)
