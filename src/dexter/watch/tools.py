"""The agent's `watch` tool: filing alerts for whoever is talking, in the cron tool's pattern.

Listing runs freely; adding, removing, pausing and resuming pass the permission gate's approval
path. A chat principal sees and changes only its own watches, whose alerts go to its own chat
(`cron.targets` decides, as for jobs); another's watch is "not found".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, Field

from dexter.config import ConfigError
from dexter.principal import OPERATOR, Principal, ToolScope
from dexter.tools.base import Tool, ToolContext, ToolFailure

if TYPE_CHECKING:
    from dexter.runtime import AgentSpec, Runtime
    from dexter.store.db import Store


class WatchArgs(BaseModel):
    action: Literal["list", "add", "remove", "pause", "resume"]
    tickers: list[str] = Field(default_factory=list, description="tickers to watch (add)")
    forms: str | None = Field(None, description="form types, e.g. 8-K,10-Q,10-K,4 (add)")
    items: str | None = Field(None, description="only 8-Ks with these items, e.g. 2.02 (add)")
    cluster: str | None = Field(
        None, description="Form 4: N insiders selling within D days, e.g. 3/7 (default) or off"
    )
    deliver: str | None = Field(None, description="target; default: the current chat or outbox")
    watch_id: str | None = Field(None, description="id, or a ticker, for remove/pause/resume")


@dataclass(frozen=True)
class WatchToolContext:
    store: Callable[[], Store]
    default_target: str | None = None
    principal: Principal = OPERATOR
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)


class WatchTool(Tool[WatchArgs]):
    name: ClassVar[str] = "watch"
    brief: ClassVar[str] = "alerts on new SEC filings"
    scope: ClassVar[ToolScope] = "principal"
    description: ClassVar[str] = (
        "Watch companies for new SEC filings and alert with what changed (8-K items and "
        "earnings figures, 10-K/10-Q risk factors added or removed), each alert citing the "
        'filing. Use it for "tell me when NVDA files an 8-K" rather than a cron job. '
        "Changes need the user's approval."
    )
    Args: ClassVar[type[BaseModel]] = WatchArgs
    concurrency_safe: ClassVar[bool] = False
    needs_approval: ClassVar[bool] = True

    def __init__(self, context: WatchToolContext) -> None:
        self.context = context

    def requires_approval(self, args: Mapping[str, Any]) -> bool:
        return args.get("action") != "list"

    async def run(self, args: WatchArgs, ctx: ToolContext) -> str:
        from dexter.watch.model import WatchError

        principal = self.context.principal if not self.context.principal.is_operator else None
        try:
            return self._run(args, principal or ctx.principal)
        except (ConfigError, WatchError) as exc:
            raise ToolFailure(str(exc)) from None

    def _run(self, args: WatchArgs, principal: Principal) -> str:
        from dexter.cron.store import CronStore
        from dexter.watch.service import add_watch
        from dexter.watch.store import WatchStore

        store = self.context.store()
        watches = WatchStore(store)
        owner = None if principal.is_operator else principal.id
        if args.action == "list":
            found = watches.all(owner=owner)
            return "\n".join(w.describe() for w in found) if found else "No watches."
        if args.action == "add":
            made = add_watch(
                watches,
                CronStore(store),
                by=principal,
                tickers=args.tickers,
                forms=args.forms,
                items=args.items,
                deliver=args.deliver,
                cluster=args.cluster,
                now=self.context.clock(),
                default_target=self.context.default_target,
            )
            return f"Watching: {made.describe()}. Alerts start with the next filing."
        if not args.watch_id:
            raise ToolFailure(f"watch_id is required for {args.action}.")
        found_watch = watches.find(args.watch_id, owner=owner)
        if args.action == "remove":
            watches.remove(found_watch.id)
            return f"Removed watch {found_watch.id}."
        watches.set_paused(found_watch.id, args.action == "pause")
        return f"Watch {found_watch.id} {'paused' if args.action == 'pause' else 'resumed'}."


def watch_toolset(runtime: Runtime, spec: AgentSpec) -> list[Tool[Any]]:
    """Handed to the runtime beside the schedule toolset, where the channel offers schedules."""
    if not spec.channel.schedules:
        return []
    context = WatchToolContext(
        store=lambda: runtime.store,
        default_target=spec.delivery_target,
        principal=spec.principal,
    )
    return [WatchTool(context)]
