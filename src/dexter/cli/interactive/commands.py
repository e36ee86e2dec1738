"""Slash commands typed into the session's input box."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

COMMANDS: dict[str, str] = {
    "/help": "Show commands and keys",
    "/model": "Show the current model",
    "/model provider:name": "Switch model for the next questions (e.g. /model openai:gpt-5.6-sol)",
    "/clear": "Forget the conversation and start a new session",
    "/skills": "List the skills Dexter can use",
    "/resume": "List saved sessions",
    "/resume ID": "Continue a saved session: its history and standing constraints",
    "/export [FORMAT] [PATH]": "Save the last answer as html (default), md, pdf or xlsx",
    "/verify [off|flag|repair]": "Show or switch how answers' figures are checked",
    "/exit": "Quit (also /quit)",
}

KEYS: dict[str, str] = {
    "Enter": "Ask; while Dexter is working, queue a follow-up for its next step",
    "Up / Down": "Recall earlier messages from this session",
    "PageUp / PageDown": "Scroll the conversation",
    "Ctrl+C": "Cancel the running answer; when idle, clear the line, then quit",
    "Ctrl+D": "Quit (on an empty line)",
    "Approval": "↑/↓ + Enter, or 1/y allow once · 2/a allow for this session · 3/n/Esc deny",
}

_ALIASES = {"/quit": "/exit", "/q": "/exit", "/?": "/help"}
_NAMES = {"/help", "/model", "/clear", "/exit", "/resume", "/skills", "/export", "/verify"}
VERIFY_MEANING = {
    "off": "answers are not checked",
    "flag": "figures not found in the data are marked",
    "repair": "the model is asked once to fix unsupported figures; what is left is marked",
}


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    arg: str = ""


@dataclass(frozen=True, slots=True)
class UnknownCommand:
    name: str


def parse_command(text: str) -> Command | UnknownCommand | None:
    """A command when the line starts with `/word`; None for an ordinary question."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped == "/":
        return None
    head, _, rest = stripped.partition(" ")
    name = _ALIASES.get(head.lower(), head.lower())
    if name not in _NAMES:
        return UnknownCommand(head)
    return Command(name, rest.strip())


def help_text() -> str:
    width = max(len(name) for name in [*COMMANDS, *KEYS]) + 2
    lines = ["Commands"]
    lines += [f"  {name.ljust(width)}{what}" for name, what in COMMANDS.items()]
    lines.append("Keys")
    lines += [f"  {name.ljust(width)}{what}" for name, what in KEYS.items()]
    return "\n".join(lines)


def skills_text(home: Path) -> str:
    from dexter.skills import load_skills

    catalog = load_skills(home)
    if not catalog.skills:
        return f"No skills found. Add one as {home / 'skills' / '<name>' / 'SKILL.md'}."
    lines = ["Skills"]
    lines += [f"  {s.name} ({s.source}): {s.description}" for s in catalog.skills]
    lines += [f"  ! {warning}" for warning in catalog.warnings]
    return "\n".join(lines)
