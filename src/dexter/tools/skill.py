"""The `skill` tool: hand the model a skill's instructions, once per run.

A second call for the same skill in the same run returns a short note instead of the body again:
the instructions are already in the conversation. "Run" is identified by `run_key(ctx)`; by
default that is the run's `SourceLedger` object (`ctx.sources`), which the agent loop creates once
per run and shares with every tool call of that run. The ledger is held through a weak reference
and compared by identity, so a later run whose ledger reuses a freed object's `id()` is never
mistaken for an earlier one. Pass `run_key` to key by something else (a session or run id).

Relative links in a skill body (`[table](sector-wacc.md)`) are rewritten to absolute paths under
the skill's directory so a file-reading tool can open them.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dexter.principal import ToolScope
from dexter.skills.discovery import Skill
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolResult

RunKey = Callable[[ToolContext], object]

MAX_ARGUMENTS_CHARS = 4_000
# Runs remembered at once when run keys are not weak-referenceable; oldest are forgotten first.
_MAX_REMEMBERED_RUNS = 256

_LINK = re.compile(r"(\[[^\]\n]*\]\()([^)\s]+)(\))")
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|/|#|~)")


class SkillArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description='e.g. "dcf"')
    arguments: str | None = Field(
        None, max_length=MAX_ARGUMENTS_CHARS, description='e.g. "AAPL, 5-year projection"'
    )


def skills_prompt(skills: Sequence[Skill]) -> str:
    """The system-prompt section listing skills; empty when there are none."""
    if not skills:
        return ""
    lines = [f"- `{s.name}`: {s.description}" for s in sorted(skills, key=lambda s: s.name)]
    return (
        "## Skills\n"
        "When a request matches one of these workflows, first call `skill` with its name (and "
        "what to apply it to), then follow what it returns; once per question.\n" + "\n".join(lines)
    )


def rewrite_links(skill: Skill) -> str:
    """The body with relative link targets made absolute under the skill's directory."""
    base = skill.directory.resolve()

    def replace(match: re.Match[str]) -> str:
        target = match.group(2)
        if _EXTERNAL.match(target):
            return match.group(0)
        path, hashmark, fragment = target.partition("#")
        absolute = (base / path).resolve()
        return f"{match.group(1)}{absolute}{hashmark}{fragment}{match.group(3)}"

    return _LINK.sub(replace, skill.body)


class _RunMemory:
    """Which skills each run has loaded, keyed by a run object held weakly where possible."""

    def __init__(self) -> None:
        self._runs: dict[int, tuple[Callable[[], object], set[str]]] = {}

    def loaded(self, key: object) -> set[str]:
        entry = self._runs.get(id(key))
        if entry is not None and entry[0]() is key:
            return entry[1]
        try:
            ref: Callable[[], object] = weakref.ref(key, self._forget(id(key)))
        except TypeError:  # not weak-referenceable (str, int, tuple …): hold it strongly
            ref = _Strong(key)
            while len(self._runs) >= _MAX_REMEMBERED_RUNS:
                self._runs.pop(next(iter(self._runs)))
        names: set[str] = set()
        self._runs[id(key)] = (ref, names)
        return names

    def _forget(self, key_id: int) -> Callable[[Any], None]:
        def forget(ref: Any) -> None:
            entry = self._runs.get(key_id)
            if entry is not None and entry[0] is ref:
                del self._runs[key_id]

        return forget


class _Strong:
    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __call__(self) -> object:
        return self.value


def _by_sources(ctx: ToolContext) -> object:
    return ctx.sources


class SkillTool(Tool[SkillArgs]):
    name: ClassVar[str] = "skill"
    scope: ClassVar[ToolScope] = "public"
    description: ClassVar[str] = (
        "Load a skill: step-by-step instructions for a larger task (e.g. a DCF valuation or an "
        "investment memo). The skills are listed in the system prompt."
    )
    Args: ClassVar[type[BaseModel]] = SkillArgs
    # Not concurrency-safe on purpose: the loop compacts old results of concurrency-safe tools,
    # and a skill's instructions must stay in the context for the whole run.
    concurrency_safe: ClassVar[bool] = False

    def __init__(self, skills: Iterable[Skill], *, run_key: RunKey | None = None) -> None:
        self.skills: dict[str, Skill] = {}
        for skill in skills:
            self.skills[skill.name] = skill  # later wins, matching discovery precedence
        self._run_key = run_key or _by_sources
        self._memory = _RunMemory()

    def _find(self, requested: str) -> Skill | None:
        wanted = requested.strip()
        if wanted in self.skills:
            return self.skills[wanted]
        folded = {name.casefold(): skill for name, skill in self.skills.items()}
        return folded.get(wanted.casefold())

    async def run(self, args: SkillArgs, ctx: ToolContext) -> ToolResult:
        skill = self._find(args.name)
        if skill is None:
            available = ", ".join(sorted(self.skills)) or "none"
            raise ToolFailure(f"no skill named {args.name!r}. Available skills: {available}.")
        loaded = self._memory.loaded(self._run_key(ctx))
        arguments = (args.arguments or "").strip()
        data = {"skill": skill.name, "source": skill.source, "path": str(skill.path)}
        if skill.name in loaded:
            note = (
                f"Skill `{skill.name}` is already loaded: its instructions are earlier in this "
                "conversation. Keep following them"
                + (f" for: {arguments}" if arguments else "")
                + ". If they are no longer visible, they are in "
                f"{skill.path}."
            )
            return ToolResult(note, data={**data, "already_loaded": True})
        loaded.add(skill.name)
        parts = [f"# Skill: {skill.name}"]
        if arguments:
            parts.append(f"Apply it to: {arguments}")
        parts.append(rewrite_links(skill))
        return ToolResult("\n\n".join(parts), data={**data, "already_loaded": False})


__all__ = ["RunKey", "SkillArgs", "SkillTool", "rewrite_links", "skills_prompt"]
