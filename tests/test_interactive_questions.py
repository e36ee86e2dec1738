"""Clarifying questions answered in the interactive session's input box."""

from __future__ import annotations

from pathlib import Path

from dexter.cli.interactive.questions import QuestionBridge, parse_answer, render_question
from dexter.tools.ask_user import Answer, Question, QuestionOption

QUESTION = Question(
    "Which fiscal year?",
    (QuestionOption("FY2024", "ended Sept 2024"), QuestionOption("FY2025")),
)


def test_numbers_pick_options_and_other_text_is_free_text() -> None:
    assert parse_answer(QUESTION, "2") == Answer(selected=("FY2025",))
    assert parse_answer(QUESTION, "1, 2") == Answer(selected=("FY2024",))  # single choice
    multi = Question("Which?", QUESTION.options, multi_select=True)
    assert parse_answer(multi, "1,2") == Answer(selected=("FY2024", "FY2025"))
    assert parse_answer(QUESTION, "the latest one") == Answer(text="the latest one")
    assert parse_answer(QUESTION, "7") == Answer(text="7")


def test_rendering_lists_numbered_options() -> None:
    text = render_question(QUESTION)
    assert "Which fiscal year?" in text and "1. FY2024 — ended Sept 2024" in text


async def test_bridge_declines_without_a_session_and_delegates_with_one() -> None:
    bridge = QuestionBridge()
    assert await bridge.ask(QUESTION) == Answer(declined=True)

    async def handler(question: Question) -> Answer:
        return Answer(selected=(question.options[0].label,))

    bridge.handler = handler
    assert await bridge.ask(QUESTION) == Answer(selected=("FY2024",))


def test_skills_command_lists_bundled_and_project_skills(tmp_path: Path) -> None:
    from dexter.cli.interactive.commands import parse_command, skills_text

    skill = tmp_path / "skills" / "peer-comps"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: peer-comps\ndescription: Compare peers.\n---\nSteps"
    )
    text = skills_text(tmp_path)
    assert "dcf (bundled)" in text and "peer-comps (project): Compare peers." in text
    assert parse_command("/skills") is not None
