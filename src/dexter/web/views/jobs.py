"""Scheduled jobs: the login's own (the operator: everyone's, as `dexter cron list` shows them),
a form to add one, pause and resume, and each job's latest alerts.

Jobs are made and changed through `dexter.cron.jobs`, the API the CLI and the agent's tools
use, so the page refuses the same schedules and targets with the same messages. A web user's
alerts go to the outbox (they have no chat); the runs themselves happen in the cron service
(`dexter daemon` or the gateway), not in `dexter web`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from dexter.cron.model import Job, OutboxItem
from dexter.principal import Principal
from dexter.web.auth import login_of
from dexter.web.state import web_state
from dexter.web.templating import page

SCHEDULES = {
    "every": "Every (e.g. 1h, 30m, 1d)",
    "cron": "Cron expression (e.g. 35 9 * * 1-5)",
    "at": "Once at (e.g. 2026-12-24T09:00)",
}
ALERTS_SHOWN = 5


def _owner(principal: Principal) -> str | None:
    return None if principal.is_operator else principal.id


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if moment else "—"


def _alert(item: OutboxItem) -> dict[str, Any]:
    return {"when": _when(item.created_at), "text": item.text, "status": item.status}


def _job(job: Job, alerts: list[OutboxItem]) -> dict[str, Any]:
    from dexter.cron.schedule import describe

    return {
        "id": job.id,
        "name": job.name,
        "message": job.message,
        "schedule": describe(job.schedule),
        "enabled": job.enabled,
        "next": _when(job.state.next_run_at) if job.enabled else "paused",
        "last": (
            f"{_when(job.state.last_run_at)} · {job.state.last_status}"
            if job.state.last_run_at
            else "not yet run"
        ),
        "error": job.state.last_error,
        "target": job.target,
        "owner": job.owner,
        "alerts": [_alert(a) for a in alerts],
    }


async def job_list(request: Request, *, error: str = "", form: dict[str, str] | None = None,
                   status: int = 200) -> Response:  # fmt: skip
    state = web_state(request)
    owner = _owner(login_of(request).principal)

    def rows() -> list[dict[str, Any]]:
        from dexter.cron.store import CronStore

        store = state.runtime.existing_store()
        if store is None:
            return []
        cron = CronStore(store)
        return [_job(j, cron.outbox(j.id, limit=ALERTS_SHOWN)) for j in cron.all(owner=owner)]

    from dexter.cron.schedule import local_zone_name

    return page(
        request,
        "jobs.html",
        status_code=status,
        jobs=await state.hub.blocking(rows),
        schedules=SCHEDULES,
        form=form or {"kind": "every", "tz": local_zone_name()},
        error=error,
    )


async def add_job(request: Request) -> Response:
    from dexter.cron import jobs as job_api
    from dexter.cron.schedule import ScheduleError, local_zone_name
    from dexter.cron.store import CronStore
    from dexter.cron.targets import target_for

    state = web_state(request)
    principal = login_of(request).principal
    raw = await request.form()
    form = {k: str(raw.get(k) or "").strip() for k in ("name", "message", "kind", "when", "tz")}
    kind = form["kind"] if form["kind"] in SCHEDULES else "every"
    tz = form["tz"] or local_zone_name()

    def create() -> Job:
        now = datetime.now(UTC)
        schedule = job_api.build_schedule(tz=tz, now=now, **{kind: form["when"] or None})
        return job_api.create_job(
            CronStore(state.runtime.store),
            name=form["name"],
            message=form["message"],
            schedule=schedule,
            now=now,
            target=target_for(None, by=principal, home=state.runtime.settings.home),
            owner=principal.id,
        )

    try:
        await state.hub.blocking(create)
    except ScheduleError as error:
        # The CLI's words name its flags; on the page the fields are named by their labels.
        message = str(error).replace("--every", "Every").replace("--cron", "Cron")
        message = message.replace("--at", "At").replace("--message", "a message")
        return await job_list(request, error=message, form=form, status=400)
    return RedirectResponse("/jobs", status_code=303)


async def _owned_job(request: Request) -> Job:
    from dexter.cron.store import CronStore

    state = web_state(request)
    owner = _owner(login_of(request).principal)
    job_id = request.path_params["job_id"]

    def find() -> Job | None:
        store = state.runtime.existing_store()
        return CronStore(store).get(job_id, owner=owner) if store is not None else None

    job = await state.hub.blocking(find)
    if job is None:
        raise HTTPException(404, f"No job {job_id!r} of yours.")
    return job


async def pause_job(request: Request) -> Response:
    from dexter.cron.store import CronStore

    state = web_state(request)
    job = await _owned_job(request)
    await state.hub.blocking(
        lambda: CronStore(state.runtime.store).set_enabled(
            job, False, next_run_at=job.state.next_run_at
        )
    )
    return RedirectResponse("/jobs", status_code=303)


async def resume_job(request: Request) -> Response:
    from dexter.cron import jobs as job_api
    from dexter.cron.store import CronStore

    state = web_state(request)
    job = await _owned_job(request)
    await state.hub.blocking(
        lambda: job_api.update_job(
            CronStore(state.runtime.store), job, now=datetime.now(UTC), enabled=True
        )
    )
    return RedirectResponse("/jobs", status_code=303)


async def _list(request: Request) -> Response:
    return await job_list(request)


routes = [
    Route("/jobs", _list, methods=["GET"]),
    Route("/jobs", add_job, methods=["POST"]),
    Route("/jobs/{job_id}/pause", pause_job, methods=["POST"]),
    Route("/jobs/{job_id}/resume", resume_job, methods=["POST"]),
]
