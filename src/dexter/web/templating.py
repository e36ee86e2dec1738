"""The one Jinja environment of the app: autoescaped templates in `dexter/web/templates`, each
page extending `base.html` (navigation, the login's CSRF token, the stylesheet and script)."""

from __future__ import annotations

import functools
from typing import Any

from jinja2 import Environment, PackageLoader
from starlette.requests import Request
from starlette.responses import HTMLResponse

from dexter.web.auth import CSRF_FIELD


@functools.cache
def environment() -> Environment:
    # Autoescape on for every template: everything shown came from outside.
    return Environment(loader=PackageLoader("dexter.web", "templates"), autoescape=True)


def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """`template` rendered for this request's login (None on the login page)."""
    login = getattr(request.state, "login", None)
    html = (
        environment()
        .get_template(template)
        .render(
            login=login,
            principal=login.principal if login is not None else None,
            csrf=login.csrf if login is not None else context.pop("csrf", ""),
            csrf_field=CSRF_FIELD,
            path=request.url.path,
            **context,
        )
    )
    return HTMLResponse(html, status_code=status_code, headers={"cache-control": "no-store"})


__all__ = ["environment", "page"]
