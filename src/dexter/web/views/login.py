"""Logging in: the one-time link `dexter web` printed (the operator), or a name and password from
settings.json (`web.users`); logging out.

The login form is the one state-changing request made before there is a login, so it carries
its own CSRF token: a random value set in a short-lived cookie and repeated in the form, which a
page on another site can neither read nor set."""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from dexter.principal import OPERATOR
from dexter.web.auth import CSRF_FIELD, Login, login_of, same_secret
from dexter.web.state import WebState, web_state
from dexter.web.templating import page

FORM_COOKIE = "dexter_login_form"
SPENT = (
    "This login link was already used (each link works once). Log in with a password, or "
    "restart `dexter web` for a new link."
)


def _next(request: Request, raw: str | None) -> str:
    """Where to go after logging in: a path on this site only, never another site."""
    target = (raw or "/").strip()
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return "/"
    return target


def logged_in(state: WebState, request: Request, login: Login, target: str) -> Response:
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        state.cookie,
        login.id,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    response.delete_cookie(FORM_COOKIE, path="/login")
    return response


def _form(request: Request, status: int = 200, error: str = "") -> Response:
    state = web_state(request)
    token = secrets.token_urlsafe(24)
    response = page(
        request,
        "login.html",
        status_code=status,
        csrf=token,
        error=error,
        next=_next(request, request.query_params.get("next")),
        passwords=state.accounts.any_password,
    )
    response.set_cookie(
        FORM_COOKIE, token, httponly=True, samesite="strict", path="/login", max_age=3600,
        secure=request.url.scheme == "https",
    )  # fmt: skip
    return response


async def login_page(request: Request) -> Response:
    state = web_state(request)
    token = request.query_params.get("token")
    if token is not None:
        if state.token.spend(token):
            login = state.logins.start(OPERATOR)
            return logged_in(
                state, request, login, _next(request, request.query_params.get("next"))
            )
        return _form(request, 403, SPENT)
    return _form(request)


async def login_submit(request: Request) -> Response:
    state = web_state(request)
    form = await request.form()
    if not same_secret(str(form.get(CSRF_FIELD) or ""), request.cookies.get(FORM_COOKIE, "")):
        return _form(request, 403, "The login form expired; please try again.")
    name, password = str(form.get("name") or ""), str(form.get("password") or "")
    keys = (
        f"name:{name.strip().lower()}",
        f"client:{request.client.host if request.client else ''}",
    )
    wait = state.throttle.wait(*keys)
    if wait:
        minutes = max(1, round(wait / 60))
        return _form(request, 429, f"Too many failed logins; try again in {minutes} min.")
    principal = await state.accounts.login(name, password) if name and password else None
    if principal is None:
        state.throttle.failed(*keys)
        return _form(request, 401, "That name and password do not match an account.")
    login = state.logins.start(principal)
    return logged_in(state, request, login, _next(request, str(form.get("next") or "/")))


async def logout(request: Request) -> Response:
    state = web_state(request)
    state.logins.end(login_of(request).id)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(state.cookie, path="/")
    return response


routes = [
    Route("/login", login_page, methods=["GET"]),
    Route("/login", login_submit, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
]
