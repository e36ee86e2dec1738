"""What a login may open: its principal's own sessions and runs (the operator: every session,
as `dexter sessions` shows them). Anyone else's is 403, a missing one 404; ids are matched
whole, so a guessed prefix never finds someone else's session."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request

from dexter.store.sessions import SessionInfo, SessionLookupError, SessionStore
from dexter.web.auth import login_of
from dexter.web.runs import LiveRun
from dexter.web.state import web_state

FORBIDDEN = "This belongs to another user."


def may_see(request: Request, principal_id: str) -> bool:
    principal = login_of(request).principal
    return principal.is_operator or principal.id == principal_id


def is_own(request: Request, principal_id: str) -> bool:
    return login_of(request).principal.id == principal_id


async def owned_session(
    request: Request, session_id: str, *, to_continue: bool = False
) -> SessionInfo:
    """The session `session_id` if this login may see it; with `to_continue`, only its owner
    (the operator reads everyone's sessions but continues only its own: a run acts for one
    principal, and another's conversation is theirs)."""
    state = web_state(request)

    def find() -> SessionInfo | None:
        store = state.runtime.existing_store()
        if store is None:
            return None
        try:
            info = SessionStore(store).get(session_id)
        except SessionLookupError:
            return None
        return info if info.id == session_id else None

    info = await state.hub.blocking(find)
    if info is None:
        raise HTTPException(404, f"No session {session_id!r}.")
    if not may_see(request, info.principal_id):
        raise HTTPException(403, FORBIDDEN)
    if to_continue and not is_own(request, info.principal_id):
        raise HTTPException(
            403, f"This is {info.principal_id}'s session: you can read it, not continue it."
        )
    return info


async def owned_run(request: Request, run_id: str) -> LiveRun:
    live = await web_state(request).hub.find(run_id)
    if live is None:
        raise HTTPException(404, "That run is over and no longer kept; reload the session.")
    if live.principal_id != login_of(request).principal.id:
        raise HTTPException(403, FORBIDDEN)
    return live


__all__ = ["FORBIDDEN", "is_own", "may_see", "owned_run", "owned_session"]
