"""Web research tools: `web_search` (provider chain) and `web_fetch` (SSRF-guarded page reader).

Both wrap what they return from the web in `<untrusted_content>` tags (see `wrap_untrusted`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dexter.tools.untrusted import wrap_untrusted
from dexter.tools.web.fetch import WebFetchTool, allowed_hosts_from_settings
from dexter.tools.web.search import (
    SearchProvider,
    WebSearchTool,
    search_providers_from_settings,
)
from dexter.tools.web.ssrf import BlockedURL, check_url

if TYPE_CHECKING:
    from dexter.config import Settings
    from dexter.data.router import DataRouter
    from dexter.tools.base import Tool


def web_tools(settings: Settings, data_router: DataRouter | None = None) -> list[Tool[Any]]:
    """`web_fetch` always; `web_search` unless every provider is off; `browser` where Playwright
    and a Chromium are installed; `x_search` with X_BEARER_TOKEN."""
    from dexter.config import get_secret
    from dexter.tools.web.x_search import DEFAULT_BASE_URL, TOKEN_ENV, XSearchTool

    tools: list[Tool[Any]] = []
    providers = search_providers_from_settings(settings)
    until = getattr(data_router, "as_of", None)
    for provider in providers:
        provider.until = until  # the run's as-of date caps what search may return
    if providers:
        tools.append(WebSearchTool(providers))
    from dexter.tools.web.browser import browser_tool

    browser = browser_tool(settings)
    if browser is not None:
        tools.append(browser)
    token = get_secret(settings, TOKEN_ENV)
    if token:
        base = settings.env.get("DEXTER_X_API_URL", "").strip() or DEFAULT_BASE_URL
        tools.append(XSearchTool(token, base_url=base))
    # SEC pages go through the SEC client: its contact user agent, rate limit and cache.
    sec = None
    if data_router is not None:
        from dexter.data.sec.provider import SecEdgarProvider

        sec = data_router.provider_of_type(SecEdgarProvider)
    tools.append(
        WebFetchTool(
            allowed_hosts=allowed_hosts_from_settings(settings),
            cache_dir=settings.home / "cache" / "web",
            sec=sec,
        )
    )
    return tools


__all__ = [
    "BlockedURL",
    "SearchProvider",
    "WebFetchTool",
    "WebSearchTool",
    "allowed_hosts_from_settings",
    "check_url",
    "search_providers_from_settings",
    "web_tools",
    "wrap_untrusted",
]
