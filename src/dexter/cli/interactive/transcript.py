"""What the session leaves in the terminal when it ends: the conversation as it was shown.

The live region is cleared on exit, so the log's widgets are copied here as plain entries while
they are on screen (after each answer and command, and before /clear or /resume empties the log)
and printed to the normal screen afterwards, where the scrollback keeps them: questions, tool
rows with their approvals, answers, notes and errors, in the order they were shown.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.padding import Padding
from rich.text import Text
from textual.widget import Widget
from textual.widgets import Markdown

from dexter.cli.interactive.widgets import Note, ToolRow

# (kind, text); kind is "question", "command", "answer", "tool", "thinking", "error", "warning"
# or "note".
Entry = tuple[str, str]

_NOTE_KINDS = {
    "thinking": "thinking",
    "error": "error",
    "stopped": "warning",
    "cancelled": "warning",
    "dropped": "warning",
}
_INDENT = (0, 0, 0, 2)


def entries_of(widgets: Iterable[Widget]) -> list[Entry]:
    """The log's widgets as transcript entries, in order; one that shows nothing is left out."""
    entries: list[Entry] = []
    for widget in widgets:
        entry = _entry(widget)
        if entry is not None and entry[1].strip():
            entries.append(entry)
    return entries


def _entry(widget: Widget) -> Entry | None:
    if isinstance(widget, ToolRow):
        return ("tool", widget.text)
    if isinstance(widget, Markdown):
        # A model turn's text that turned out not to be the answer is shown dim, like a note.
        return ("answer" if widget.has_class("answer") else "note", widget.source)
    if isinstance(widget, Note):
        if widget.has_class("question"):
            return ("question", widget.text.removeprefix("› "))
        if widget.has_class("command"):
            return ("command", widget.text)
        kind = next((k for c, k in _NOTE_KINDS.items() if widget.has_class(c)), "note")
        return (kind, widget.text)
    return None


def print_transcript(transcript: Iterable[Entry], console: Console) -> None:
    """Each question in bold, each answer rendered as Markdown, tool rows, thinking rows (one
    line each) and notes dimmed, errors in red; everything but the questions indented as in the
    session."""
    from rich.markdown import Markdown as RichMarkdown

    for kind, text in transcript:
        if kind == "question":
            console.print()
            console.print(Text(f"› {text}", style="bold"))
        elif kind == "command":
            console.print()
            console.print(Text(text, style="dim"))
        elif kind == "answer":
            console.print(Padding(RichMarkdown(text, hyperlinks=False), _INDENT))
        elif kind == "thinking":
            # Folded to one row, as the session showed it.
            row = Padding(Text(text, style="dim", no_wrap=True, overflow="ellipsis"), _INDENT)
            console.print(row, no_wrap=True, overflow="ellipsis", soft_wrap=False)
        elif kind == "tool":
            mark, _, rest = text.partition(" ")
            colour = {"✓": "green", "✗": "red"}.get(mark, "dim")
            line = Text.assemble((mark, colour), " ", (rest, "dim"))
            console.print(Padding(line, _INDENT))
        else:
            style = {"error": "red", "warning": "yellow"}.get(kind, "dim")
            console.print(Padding(Text(text, style=style), _INDENT))


def resume_hint(session_id: str) -> Text:
    return Text(f"To continue this conversation: dexter --resume {session_id}", style="dim")


__all__ = ["Entry", "entries_of", "print_transcript", "resume_hint"]
