"""The agent's clarifying questions (`ask_user_question`), answered in the input box.

The tool is built before the app exists, so it holds a bridge; the app plugs its handler in
when it starts. Without a handler (the app is gone) a question counts as declined.
"""

from __future__ import annotations

from dexter.tools.ask_user import Answer, Ask, Question


class QuestionBridge:
    def __init__(self) -> None:
        self.handler: Ask | None = None

    async def ask(self, question: Question) -> Answer:
        if self.handler is None:
            return Answer(declined=True)
        return await self.handler(question)


def render_question(question: Question) -> str:
    lines = [f"? {question.question}"]
    for number, option in enumerate(question.options, 1):
        detail = f" — {option.description}" if option.description else ""
        lines.append(f"  {number}. {option.label}{detail}")
    if question.options:
        several = " (several: 1,3)" if question.multi_select else ""
        lines.append(f"Type a number{several}, or write your own answer.")
    else:
        lines.append("Type your answer.")
    return "\n".join(lines)


def parse_answer(question: Question, text: str) -> Answer:
    """Numbers pick options; anything else is a free-text answer."""
    labels = [option.label for option in question.options]
    picks = [part.strip() for part in text.replace(" ", ",").split(",") if part.strip()]
    if labels and picks and all(p.isdigit() and 1 <= int(p) <= len(labels) for p in picks):
        chosen = tuple(dict.fromkeys(labels[int(p) - 1] for p in picks))
        if not question.multi_select:
            chosen = chosen[:1]
        return Answer(selected=chosen)
    return Answer(text=text)
