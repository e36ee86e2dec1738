"""The tool registry: the set of tools an agent run may bind, and which of them it offers.

Every tool's schema costs its characters on every request of a run. A registry may hold some
tools "on request": bound (they run when called, and the system prompt names them) but offered to
the model only after it asks for them with `load_tools` in that run. Such a registry binds its
own `load_tools`; one built without tools on request offers everything, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from dexter.models.types import ToolSpec
from dexter.tools.base import Tool
from dexter.tools.load_tools import LOAD_TOOLS, LoadTools


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool[Any]] = (), *, on_request: Iterable[str] = ()) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        # Names loaded in each run, by run id (released when the run ends).
        self._loaded: dict[str, set[str]] = {}
        for tool in tools:
            if isinstance(tool, LoadTools) and tool.registry is not self:
                # Another registry's loader loads into that registry: a subset (a sub-agent's
                # tools) binds its own, or none and offers everything.
                continue
            self.register(tool)
        self._on_request = frozenset(n for n in on_request if n in self._tools and n != LOAD_TOOLS)
        if self._on_request:
            self.register(LoadTools(self))

    def register(self, tool: Tool[Any]) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    @property
    def on_request(self) -> frozenset[str]:
        """Bound tools whose schemas are offered only once a run loads them."""
        return self._on_request

    def specs(self) -> list[ToolSpec]:
        """Every bound tool's schema (what `dexter tools list --json` prints)."""
        return [tool.spec() for tool in self._tools.values()]

    def offered_specs(self, run_id: str) -> list[ToolSpec]:
        """The schemas to send in run `run_id`'s next request: every tool not on request, and
        those on request that the run has loaded."""
        hidden = self._on_request - self._loaded.get(run_id, set())
        return [tool.spec() for tool in self._tools.values() if tool.name not in hidden]

    def load(self, run_id: str, names: Iterable[str]) -> list[str]:
        """Offer `names` (tools on request) in run `run_id` from its next request on; returns
        the ones newly loaded. Names that are not on request are ignored."""
        loaded = self._loaded.setdefault(run_id, set())
        new = [n for n in dict.fromkeys(names) if n in self._on_request and n not in loaded]
        loaded.update(new)
        return new

    def loaded(self, run_id: str) -> frozenset[str]:
        return frozenset(self._loaded.get(run_id, ()))

    def release(self, run_id: str) -> None:
        self._loaded.pop(run_id, None)

    def __iter__(self) -> Iterator[Tool[Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools
