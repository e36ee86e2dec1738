"""ask_user_question: with and without someone to answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from dexter.agent.events import Done, ToolError
from dexter.agent.loop import Agent, AgentConfig
from dexter.models.scripted import ScriptedModel, calls, text
from dexter.models.types import ToolMessage
from dexter.tools.ask_user import (
    DECLINED,
    NO_ANSWER,
    NO_ONE_TO_ASK,
    Answer,
    AskUserArgs,
    AskUserTool,
    Question,
)
from dexter.tools.base import ToolContext, ToolFailure
from dexter.tools.registry import ToolRegistry

ARGS = {
    "question": "Which fiscal year?",
    "options": [
        {"label": "FY2024", "description": "latest annual report"},
        {"label": "FY2023"},
    ],
}


def answering(answer: Answer, seen: list[Question]) -> AskUserTool:
    async def ask(question: Question) -> Answer:
        seen.append(question)
        return answer

    return AskUserTool(ask)


async def test_no_answerer_is_a_tool_failure() -> None:
    with pytest.raises(ToolFailure) as info:
        await AskUserTool(None).run(AskUserArgs.model_validate(ARGS), ToolContext())
    assert str(info.value) == NO_ONE_TO_ASK


async def test_chosen_option_is_returned_and_question_is_passed_through() -> None:
    seen: list[Question] = []
    tool = answering(Answer(selected=("fy2024",)), seen)
    result = await tool.run(AskUserArgs.model_validate(ARGS), ToolContext(call_id="c1"))
    assert "The user chose: FY2024" in result.content  # canonical label from the options
    assert "Which fiscal year?" in result.content
    (question,) = seen
    assert question.call_id == "c1" and not question.multi_select
    assert [o.label for o in question.options] == ["FY2024", "FY2023"]
    assert question.options[0].description == "latest annual report"
    assert result.data["selected"] == ["fy2024"] and result.data["declined"] is False


async def test_multi_select_and_note() -> None:
    args = AskUserArgs.model_validate({**ARGS, "multi_select": True})
    tool = answering(Answer(selected=("FY2024", "FY2023"), text="use GAAP figures"), [])
    result = await tool.run(args, ToolContext())
    assert "The user chose: FY2024, FY2023" in result.content
    assert "They added: use GAAP figures" in result.content


async def test_single_select_keeps_one_choice() -> None:
    tool = answering(Answer(selected=("FY2024", "FY2023")), [])
    result = await tool.run(AskUserArgs.model_validate(ARGS), ToolContext())
    assert (
        "The user chose: FY2024" in result.content
        and "FY2023" not in result.content.split("chose:")[1]
    )


async def test_free_text_answer() -> None:
    args = AskUserArgs(question="Which company did you mean?")
    result = await answering(Answer(text="Alphabet, class A"), []).run(args, ToolContext())
    assert "The user answered: Alphabet, class A" in result.content


async def test_declined_and_empty_answers() -> None:
    args = AskUserArgs.model_validate(ARGS)
    declined = await answering(Answer(declined=True), []).run(args, ToolContext())
    assert declined.content == DECLINED and "declined" in declined.content
    empty = await answering(Answer(), []).run(args, ToolContext())
    assert empty.content == NO_ANSWER


@pytest.mark.parametrize(
    "bad",
    [
        {"question": ""},
        {"question": "q?", "options": [{"label": "only one"}]},
        {"question": "q?", "options": [{"label": "A"}, {"label": "a"}]},
        {"question": "q?", "options": [{"label": str(i)} for i in range(7)]},
        {"question": "q?", "header": "unknown field"},
    ],
)
def test_schema_rejects_bad_questions(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        AskUserArgs.model_validate(bad)


async def test_in_the_loop_without_an_answerer(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("ask_user_question", ARGS)), text("assuming FY2024")])
    agent = Agent(
        model, ToolRegistry([AskUserTool(None)]), config=AgentConfig(home=tmp_path / ".dexter")
    )
    events = [e async for e in agent.run("margins?")]
    assert isinstance(events[-1], Done) and events[-1].answer == "assuming FY2024"
    assert any(isinstance(e, ToolError) for e in events)
    (message,) = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert message.is_error and NO_ONE_TO_ASK in message.content


async def test_in_the_loop_with_an_answerer(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("ask_user_question", ARGS)), text("FY2023 it is")])
    tool = answering(Answer(selected=("FY2023",)), [])
    agent = Agent(model, ToolRegistry([tool]), config=AgentConfig(home=tmp_path / ".dexter"))
    events = [e async for e in agent.run("margins?")]
    assert isinstance(events[-1], Done) and events[-1].answer == "FY2023 it is"
    (message,) = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert not message.is_error and "The user chose: FY2023" in message.content
