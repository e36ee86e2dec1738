"""The agent's `cron` and `heartbeat` tools: schedule research for the user.

Same validation as `dexter cron` (cron/jobs.py). Listing and viewing run freely; adding,
changing, removing or running a job and editing the checklist are writes that pass the
permission gate's approval path: asked on the terminal or in the asker's own chat, refused
where nobody can approve (scheduled runs, MCP hosts).

Jobs belong to the principal who made them. Anyone but the operator sees and touches only their
own: another's job is "not found", in the same words as an id that matches nothing. Where their
alerts may go is decided by `cron.targets` (a chat's jobs: that chat only).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, Field

from dexter.atomicfile import PRIVATE, private_dir, write_text
from dexter.config import ConfigError
from dexter.cron.prompts import DEFAULT_CHECKLIST, HEARTBEAT_FILE, count_items, read_heartbeat
from dexter.principal import OPERATOR, Principal, ToolScope
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolResult

# Every `dexter ask` offers these tools; the schedule parser, job rules and cron store load when
# one of them runs.
if TYPE_CHECKING:
    from dexter.cron.model import DamagedJob, Job
    from dexter.cron.store import CronStore
    from dexter.runtime import AgentSpec, Runtime

RunJob = Callable[["Job"], Awaitable[str]]


@dataclass(frozen=True)
class CronToolContext:
    """What the tools need from the runtime: the store, a way to run a job now, and the chat
    that is talking (its alerts go back there)."""

    cron: Callable[[], CronStore]
    run_job: RunJob
    default_target: str | None = None
    user_zone: str | None = None
    # Whose jobs these tools see and change.
    principal: Principal = OPERATOR
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    # The Dexter home, to check a `file:` target against the alerts folder on disk.
    home: Path | None = None


class CronArgs(BaseModel):
    action: Literal["list", "add", "update", "remove", "run"]
    job_id: str | None = Field(None, description="id (or unique prefix) for update/remove/run")
    name: str | None = Field(None, description="short job name (add)")
    message: str | None = Field(
        None,
        description="what to research each run, written as a full instruction to yourself, "
        "including the condition worth alerting on",
    )
    every: str | None = Field(None, description="interval such as 30m, 1h, 1d (minimum 1m)")
    at: str | None = Field(None, description="one-shot ISO time, e.g. 2026-12-02T09:00")
    cron: str | None = Field(None, description='cron expression, e.g. "35 9 * * 1-5"')
    tz: str | None = Field(None, description="IANA zone for at/cron/active, e.g. America/New_York")
    active: str | None = Field(None, description="active hours HH:MM-HH:MM (may cross midnight)")
    days: str | None = Field(None, description="days for active hours, e.g. mon-fri")
    fulfillment: Literal["keep", "once", "ask"] | None = Field(
        None, description="keep (default), once (stop after the first alert), ask"
    )
    deliver: str | None = Field(None, description="target; default: the current chat or outbox")
    model: str | None = Field(None, description="provider:model for this job (default: settings)")
    enabled: bool | None = None


def _fmt(moment: datetime | None) -> str:
    return moment.isoformat(timespec="minutes") if moment else "none"


def describe_job(job: Job, *, viewer: Principal = OPERATOR) -> str:
    """A job in a few lines; the operator is also told whose it is when it is not theirs."""
    from dexter.cron.schedule import describe

    state = job.state
    lines = [f"**{job.name}** ({job.id}) [{'enabled' if job.enabled else 'DISABLED'}]"]
    if viewer.is_operator and job.owner != OPERATOR.id:
        lines.append(f"  Owner: {job.owner}")
    lines += [
        f"  Schedule: {describe(job.schedule)}",
        f"  Fulfillment: {job.fulfillment}; deliver to {job.target}",
        f"  Next run: {_fmt(state.next_run_at) if job.enabled else 'none (disabled)'}",
        "  Last run: "
        + (
            f"{_fmt(state.last_run_at)} ({state.last_status or 'unknown'})"
            if state.last_run_at
            else "never"
        ),
    ]
    if job.active:
        lines.append(f"  Active hours: {job.active.describe()}")
    if state.consecutive_errors:
        lines.append(f"  Errors: {state.consecutive_errors} consecutive ({state.last_error})")
    if job.kind == "job":
        lines.append(f"  Message: {job.message}")
    return "\n".join(lines)


def _describe_entry(entry: Job | DamagedJob, *, viewer: Principal = OPERATOR) -> str:
    from dexter.cron.model import DamagedJob

    if isinstance(entry, DamagedJob):
        return (
            f"**{entry.name}** ({entry.id}) [DAMAGED: {entry.problem}]\n"
            "  It cannot run; remove it and add it again."
        )
    return describe_job(entry, viewer=viewer)


class CronTool(Tool[CronArgs]):
    name: ClassVar[str] = "cron"
    brief: ClassVar[str] = "scheduled research jobs and alerts"
    scope: ClassVar[ToolScope] = "principal"
    description: ClassVar[str] = (
        "Create, list, change or run scheduled research jobs. Use it when "
        "the user asks to be told when something happens or to check something regularly "
        '("tell me when NVDA files its 10-Q", "every weekday at 9:35 check my watchlist"). '
        "Schedules: every (interval, minimum 1m), at (one-shot, future), or cron with tz. "
        "Fulfillment once stops after the first alert (price targets, one-off filings). "
        "Each run is unattended: the message must say what to check and what is worth an "
        "alert; quiet runs are not delivered. List before changing a job. Changes need the "
        "user's approval."
    )
    Args: ClassVar[type[BaseModel]] = CronArgs
    concurrency_safe: ClassVar[bool] = False
    # Flagged so listings and sub-agent filters treat it as a writer; `list` is exempted below.
    needs_approval: ClassVar[bool] = True

    def __init__(self, context: CronToolContext) -> None:
        self.context = context

    def requires_approval(self, args: Mapping[str, Any]) -> bool:
        return args.get("action") != "list"

    async def run(self, args: CronArgs, ctx: ToolContext) -> ToolResult | str:
        from dexter.cron.store import JobNotFound

        # The tools were bound for one principal; should the call say otherwise, the one that
        # is not the operator wins, so a mismatch can only narrow what is seen.
        principal = self.context.principal if not self.context.principal.is_operator else None
        try:
            return await self._run(args, principal or ctx.principal)
        except (ConfigError, JobNotFound) as exc:
            raise ToolFailure(str(exc)) from None

    async def _run(self, args: CronArgs, principal: Principal) -> str:
        from dexter.cron import jobs as job_api
        from dexter.cron.schedule import local_zone_name
        from dexter.cron.targets import target_for

        cron = self.context.cron()
        now = self.context.clock()
        zone_name = args.tz or self.context.user_zone or local_zone_name()
        # None: every job (the operator's view); otherwise only the principal's own.
        owner = None if principal.is_operator else principal.id
        if args.action == "list":
            found = cron.entries(owner=owner)
            if not found:
                return "No scheduled jobs."
            return "\n\n".join(_describe_entry(j, viewer=principal) for j in found)
        if args.action == "add":
            if not args.name:
                raise ToolFailure("name is required for add.")
            schedule = job_api.build_schedule(
                every=args.every, at=args.at, cron=args.cron, tz=zone_name, now=now
            )
            target = target_for(
                args.deliver,
                by=principal,
                default=self.context.default_target,
                home=self.context.home,
            )
            job = job_api.create_job(
                cron,
                name=args.name,
                message=args.message,
                schedule=schedule,
                now=now,
                fulfillment=args.fulfillment,
                active=job_api.build_active(args.active, zone_name, args.days),
                target=target,
                model=args.model,
                owner=principal.id,
            )
            return (
                f'Created job "{job.name}" (id: {job.id}, fulfillment: {job.fulfillment}). '
                f"Next run: {_fmt(job.state.next_run_at)}. Alerts go to {job.target}."
            )
        if not args.job_id:
            raise ToolFailure(f"job_id is required for {args.action}; list the jobs first.")
        if args.action == "remove":
            entry = cron.find_entry(args.job_id, owner=owner)
            cron.remove(entry.id)
            return f'Removed job "{entry.name}" (id: {entry.id}).'
        job = cron.find(args.job_id, owner=owner)
        if args.action == "run":
            status = await self.context.run_job(job)
            return f'Job "{job.name}" ran: {status}'
        changes: dict[str, object] = {}
        if args.name is not None:
            changes["name"] = args.name
        if args.message is not None:
            changes["message"] = args.message
        if args.every or args.at or args.cron:
            changes["schedule"] = job_api.build_schedule(
                every=args.every, at=args.at, cron=args.cron, tz=zone_name, now=now
            )
        if args.active is not None:
            changes["active"] = job_api.build_active(args.active or None, zone_name, args.days)
        if args.fulfillment is not None:
            changes["fulfillment"] = job_api.validate_fulfillment(args.fulfillment)
        if args.deliver is not None:
            changes["target"] = target_for(
                args.deliver, by=principal, owner=job.owner, home=self.context.home
            )
        if args.model is not None:
            changes["model"] = args.model.strip() or None
        if args.enabled is not None:
            changes["enabled"] = args.enabled
        if not changes:
            raise ToolFailure("update needs at least one field to change.")
        updated = job_api.update_job(cron, job, now=now, **changes)
        return (
            f'Updated job "{updated.name}" (id: {updated.id}). '
            f"Next run: {_fmt(updated.state.next_run_at) if updated.enabled else 'disabled'}."
        )


class HeartbeatArgs(BaseModel):
    action: Literal["view", "update"]
    content: str | None = Field(None, description="the full new checklist (update), as bullets")


class HeartbeatTool(Tool[HeartbeatArgs]):
    name: ClassVar[str] = "heartbeat"
    brief: ClassVar[str] = "the checklist of periodic unattended checks"
    description: ClassVar[str] = (
        "View or replace the checklist (HEARTBEAT.md) of periodic unattended checks. Each run "
        "reviews its items and alerts only when one is noteworthy. Updating needs the user's "
        "approval."
    )
    Args: ClassVar[type[BaseModel]] = HeartbeatArgs
    needs_approval: ClassVar[bool] = True

    def __init__(self, home: Path, context: CronToolContext) -> None:
        self.home = home
        self.context = context

    def requires_approval(self, args: Mapping[str, Any]) -> bool:
        return args.get("action") != "view"

    def _schedule_note(self) -> str:
        from dexter.cron.schedule import describe

        job = self.context.cron().heartbeat()
        if job is None or not job.enabled:
            return (
                "The heartbeat is not scheduled; the user can start it with "
                "`dexter heartbeat enable --every 30m`."
            )
        return f"The heartbeat runs {describe(job.schedule)}; next {_fmt(job.state.next_run_at)}."

    async def run(self, args: HeartbeatArgs, ctx: ToolContext) -> ToolResult | str:
        path = self.home / HEARTBEAT_FILE
        if args.action == "view":
            text = read_heartbeat(self.home)
            if text is None:
                return (
                    "No HEARTBEAT.md yet, so the default checklist is used:\n\n"
                    f"{DEFAULT_CHECKLIST}\nUse update to customise it. {self._schedule_note()}"
                )
            return f"Current heartbeat checklist:\n\n{text}\n\n{self._schedule_note()}"
        if args.content is None:
            raise ToolFailure("content is required for the update action.")
        private_dir(path.parent)
        write_text(path, args.content.rstrip() + "\n", mode=PRIVATE, keep_mode=True)
        items = count_items(args.content)
        counted = f" ({items} item{'s' if items != 1 else ''})" if items else ""
        return f"Updated heartbeat checklist{counted}. {self._schedule_note()}"


def describe_result(result: Any) -> str:
    if result is None:
        return "another runner is running this job right now."
    if result.status == "ok":
        return f"alert #{result.alert_id} delivered to the outbox (see `dexter cron logs`)."
    if result.status == "error":
        return f"error: {result.error}"
    return f"{result.status} ({result.reason})."


def cron_tools(
    runtime: Runtime, *, default_target: str | None, principal: Principal = OPERATOR
) -> list[Tool[Any]]:
    """The `cron` and `heartbeat` tools bound to `runtime` (registered by Runtime.tools).

    They live here rather than beside `make_runner` so that offering them does not import the
    runner, which only a `run` action needs."""

    async def run_job(job: Job) -> str:
        from dexter.cron.service import make_runner

        return describe_result(await make_runner(runtime).run_now(job))

    def cron_store() -> CronStore:
        from dexter.cron.store import CronStore

        return CronStore(runtime.store)

    context = CronToolContext(
        cron=cron_store,
        run_job=run_job,
        default_target=default_target,
        principal=principal,
        home=runtime.settings.home,
    )
    return [CronTool(context), HeartbeatTool(runtime.settings.home, context)]


def schedule_toolset(runtime: Runtime, spec: AgentSpec) -> list[Tool[Any]]:
    """The toolset front doors hand the runtime (`Runtime.toolsets`): `cron` and `heartbeat`
    where the spec's channel offers schedules, for the spec's principal and chat."""
    if not spec.channel.schedules:
        return []
    return cron_tools(runtime, default_target=spec.delivery_target, principal=spec.principal)
