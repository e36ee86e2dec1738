"""The `ask_user_question` tool: a clarifying question to the person at the terminal.

The tool does not talk to anyone itself: it is given an async `ask(Question) -> Answer` callback
by the interactive session. Where nobody can answer (`dexter ask`, channels, schedules,
sub-agents) it is built with `ask=None` and tells the model to proceed on a stated assumption.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dexter.principal import ToolScope
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolResult

NO_ONE_TO_ASK = "no one is available to answer; proceed with a stated assumption"
DECLINED = (
    "The user declined to answer. Do not ask again; proceed with a reasonable assumption and "
    "state it in your answer."
)
NO_ANSWER = "The user gave no answer. Proceed with a reasonable assumption and state it."

MAX_OPTIONS = 6


@dataclass(frozen=True)
class QuestionOption:
    label: str
    description: str = ""


@dataclass(frozen=True)
class Question:
    """What the UI shows. With no options, the person types a free-text answer."""

    question: str
    options: tuple[QuestionOption, ...] = ()
    multi_select: bool = False
    call_id: str = ""


@dataclass(frozen=True)
class Answer:
    """What the person chose: option labels, free text (typed instead of or next to a choice),
    or `declined=True` when they dismissed the question."""

    selected: tuple[str, ...] = ()
    text: str = ""
    declined: bool = False


Ask = Callable[[Question], Awaitable[Answer]]


class OptionArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, max_length=80, description="Short choice text.")
    description: str = Field("", max_length=300, description="What choosing it means.")


class AskUserArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1, max_length=1_000, description="One clear question, ending with '?'."
    )
    options: list[OptionArgs] = Field(
        default_factory=list,
        max_length=MAX_OPTIONS,
        description=(
            "2-4 distinct choices, the recommended one first. Leave empty for a free-text answer. "
            "Do not add an 'Other' option: the person can always type their own answer."
        ),
    )
    multi_select: bool = Field(False, description="True if several options may be chosen.")

    @model_validator(mode="after")
    def _distinct_labels(self) -> AskUserArgs:
        labels = [o.label.strip().casefold() for o in self.options]
        if len(set(labels)) != len(labels):
            raise ValueError("option labels must be distinct")
        if len(self.options) == 1:
            raise ValueError("give at least 2 options, or none for a free-text answer")
        return self


def format_answer(question: Question, answer: Answer) -> str:
    if answer.declined:
        return DECLINED
    offered = {o.label.casefold(): o.label for o in question.options}
    chosen = [offered.get(label.strip().casefold(), label.strip()) for label in answer.selected]
    chosen = [label for label in dict.fromkeys(chosen) if label]
    if not question.multi_select:
        chosen = chosen[:1]
    text = answer.text.strip()
    if not chosen and not text:
        return NO_ANSWER
    lines = [f"Question: {question.question}"]
    if chosen:
        lines.append("The user chose: " + ", ".join(chosen))
        if text:
            lines.append(f"They added: {text}")
    else:
        lines.append(f"The user answered: {text}")
    return "\n".join(lines)


class AskUserTool(Tool[AskUserArgs]):
    name: ClassVar[str] = "ask_user_question"
    brief: ClassVar[str] = "ask the user a clarifying question"
    scope: ClassVar[ToolScope] = "public"
    description: ClassVar[str] = (
        "Ask the user one clarifying question and wait for the answer. Use it only when the "
        "request is ambiguous in a way that changes the result (which company, which period, "
        "long or short) and no sensible default exists; otherwise proceed and state your "
        "assumption. Offer 2-4 concrete options when you can."
    )
    Args: ClassVar[type[BaseModel]] = AskUserArgs
    concurrency_safe: ClassVar[bool] = False

    def __init__(self, ask: Ask | None) -> None:
        self.ask = ask

    async def run(self, args: AskUserArgs, ctx: ToolContext) -> ToolResult:
        if self.ask is None:
            raise ToolFailure(NO_ONE_TO_ASK)
        question = Question(
            question=args.question.strip(),
            options=tuple(
                QuestionOption(o.label.strip(), o.description.strip()) for o in args.options
            ),
            multi_select=args.multi_select,
            call_id=ctx.call_id,
        )
        answer = await self.ask(question)
        content = format_answer(question, answer)
        data = {
            "question": question.question,
            "selected": list(answer.selected),
            "text": answer.text,
            "declined": answer.declined,
        }
        return ToolResult(content, data=data)


__all__ = [
    "DECLINED",
    "NO_ANSWER",
    "NO_ONE_TO_ASK",
    "Answer",
    "Ask",
    "AskUserArgs",
    "AskUserTool",
    "OptionArgs",
    "Question",
    "QuestionOption",
    "format_answer",
]
