"""Web research tools: `web_search` (provider chain) and `web_fetch` (SSRF-guarded page reader).

Both wrap what they return from the web in `<untrusted_content>` tags (see `wrap_untrusted`).
"""

from __future__ import annotations

from dexter.tools.web.extract import wrap_untrusted
from dexter.tools.web.fetch import WebFetchTool, allowed_hosts_from_settings
from dexter.tools.web.search import (
    SearchProvider,
    WebSearchTool,
    search_providers_from_settings,
)
from dexter.tools.web.ssrf import BlockedURL, check_url

__all__ = [
    "BlockedURL",
    "SearchProvider",
    "WebFetchTool",
    "WebSearchTool",
    "allowed_hosts_from_settings",
    "check_url",
    "search_providers_from_settings",
    "wrap_untrusted",
]
