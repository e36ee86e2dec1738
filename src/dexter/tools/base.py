"""The Tool definition: a pydantic input model, flags the loop reads, and an async run."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from dexter.errors import DexterError
from dexter.models.types import ToolSpec
from dexter.principal import OPERATOR, Principal, ToolScope
from dexter.sentences import first_sentence
from dexter.tools.citations import SourceLedger
from dexter.tools.results import ResultStore
from dexter.tools.schema import provider_safe_schema

ArgsT = TypeVar("ArgsT", bound=BaseModel)


def _ignore_progress(_message: str) -> None:
    return None


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may use. Cancellation arrives as `asyncio.CancelledError`."""

    call_id: str = ""
    # The agent run this call belongs to; tools that keep per-run state (a browser) key it so.
    run_id: str = ""
    home: Path = field(default_factory=lambda: Path(".dexter"))
    progress: Callable[[str], None] = _ignore_progress
    # Shared by every call in a run, so source ids ([S1], [S2] …) are unique across tools.
    sources: SourceLedger = field(default_factory=SourceLedger)
    # The run's stored full results (read back by `read_tool_result`); None outside a run.
    results: ResultStore | None = None
    # Whose data this call may touch (the run's principal).
    principal: Principal = OPERATOR


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: `content` is what the model reads; `data` is the structured value."""

    content: str
    is_error: bool = False
    data: Any = None


# A resource name that stands for everything: a call that may touch anything declares it.
EVERYTHING = "*"


def _meet(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return False
    return EVERYTHING in a or EVERYTHING in b or not a.isdisjoint(b)


@dataclass(frozen=True)
class Resources:
    """What one call reads and writes: `file:/abs/path`, `memory:FILE`, `network`, `data`,
    `results`, or `*` for anything. The executor orders calls by these, not by tool names."""

    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()

    def must_follow(self, earlier: Resources) -> bool:
        """True when this call may not start before `earlier` has finished: one writes what
        the other reads or writes."""
        return _meet(earlier.writes, self.reads | self.writes) or _meet(self.writes, earlier.reads)

    @classmethod
    def of(cls, *, reads: Iterable[str] = (), writes: Iterable[str] = ()) -> Resources:
        return cls(frozenset(reads), frozenset(writes))


READS_ANYTHING = Resources.of(reads=[EVERYTHING])
TOUCHES_EVERYTHING = Resources.of(reads=[EVERYTHING], writes=[EVERYTHING])


class ToolFailure(DexterError):
    """Raised by a tool for an expected failure; the message goes back to the model verbatim."""


class Tool(ABC, Generic[ArgsT]):
    """Subclass with `name`, `description`, `Args` and `run`.

    `concurrency_safe` tools may run alongside adjacent safe calls; `needs_approval` tools pass
    through the permission gate's "ask" path before they run.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[BaseModel]]
    concurrency_safe: ClassVar[bool] = False
    needs_approval: ClassVar[bool] = False
    # Called many times in one good run (arithmetic, reading a long document page by page):
    # the soft "called N times" nudge would only push the model to stop too early.
    repeatable: ClassVar[bool] = False
    # Saves to long-term memory: needs approval in a run that has read outside text.
    writes_memory: ClassVar[bool] = False
    # Returns text written by others even when it is not framed (sub-agent answers).
    carries_outside_text: ClassVar[bool] = False
    # A few words for the system prompt's list of tools offered on request (the full
    # description is sent once the model loads the tool); empty: the summary.
    brief: ClassVar[str] = ""
    # What the tool reaches (see `dexter.principal.ToolScope`): only the operator gets
    # "operator" tools unless a grant names them, so a new tool is private until it says not.
    scope: ClassVar[ToolScope] = "operator"

    @abstractmethod
    async def run(self, args: ArgsT, ctx: ToolContext) -> ToolResult | str: ...

    def requires_approval(self, args: Mapping[str, Any]) -> bool:
        """Whether this call needs approval: the class flag, unless a tool whose actions differ
        (a read-only `list` next to a writing `add`) decides per call."""
        return self.needs_approval

    async def run_finished(self, run_id: str) -> None:
        """Called once when an agent run that bound this tool ends, however it ends: release
        anything kept for that run (a browser, a connection). Most tools keep nothing."""
        return None

    def resources(self, args: ArgsT) -> Resources:
        """What a call with `args` reads and writes. Unknown means everything: a tool that is
        not concurrency-safe is ordered against every other call; a safe one reads anything
        and writes nothing. Override to declare exactly what a call touches."""
        return READS_ANYTHING if self.concurrency_safe else TOUCHES_EVERYTHING

    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self.name,
            description=self.description,
            parameters=provider_safe_schema(self.Args),
        )

    @property
    def summary(self) -> str:
        """The first sentence of the description: the one-line form used in prompts and lists.
        An abbreviation ("e.g.", "U.S.") does not end it."""
        first = first_sentence(self.description.strip().split("\n", 1)[0])
        return first if first.endswith((".", "!", "?")) else first + "."
