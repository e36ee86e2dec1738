"""`browser`: a real headless Chromium for pages that need one (JavaScript-built tables,
investor-relations sites, forms).

One browser per agent run, started on the first call and closed when the run ends, so parallel
runs and sub-agents never share pages. Playwright drives the system's Chromium (Debian's
`chromium` package, or `DEXTER_BROWSER_PATH`): no browser download is needed.

Every request the page makes, not just the address typed, passes the same guard as `web_fetch`:
http(s) only, no credentials, no loopback, private, link-local or cloud-metadata addresses
(names are resolved and checked), and each redirect is checked before it is followed. Chromium
reaches the network only through a local proxy that does that check and connects to the address
it vetted (`browser_guard`), so a name cannot rebind to an internal address between the two.
Only http(s) pages can be opened. What the page says comes back marked as untrusted data.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from dexter.principal import ToolScope
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.untrusted import wrap_untrusted
from dexter.tools.web.browser_guard import Connector, GuardProxy, navigable_url, origin_of
from dexter.tools.web.ssrf import BlockedURL, Resolver, check_url, normalise_hosts

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright

    from dexter.config import Settings

BROWSER_PATH_ENV = "DEXTER_BROWSER_PATH"
_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Without these, Chromium phones home at start-up, which a closed network refuses noisily.
_LAUNCH_ARGS = (
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    # WebRTC would send UDP (STUN) around the proxy, straight to any address a page names;
    # held to proxied TCP it meets the guard like everything else.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)
NAVIGATION_TIMEOUT_MS = 30_000
ACTION_TIMEOUT_MS = 8_000
SETTLE_TIMEOUT_MS = 5_000
MAX_WAIT_MS = 10_000
DEFAULT_MAX_CHARS = 40_000


def install_hint() -> str:
    """What the browser tool needs, with the install step that fits this installation."""
    from dexter.install import add_extra_command

    return (
        "The browser tool needs Chromium and the optional Playwright package: "
        "`sudo apt-get install chromium` (Debian/Ubuntu; or set DEXTER_BROWSER_PATH to a Chrome "
        f"or Chromium binary) and `{add_extra_command('browser')}`."
    )


def find_chromium(env: Mapping[str, str] | None = None) -> str | None:
    """The Chromium binary to drive: DEXTER_BROWSER_PATH, else the first one on PATH."""
    environ = env if env is not None else os.environ
    configured = (environ.get(BROWSER_PATH_ENV) or "").strip()
    if configured:
        return configured if Path(configured).is_file() else None
    return next((found for name in _CANDIDATES if (found := shutil.which(name))), None)


def playwright_installed() -> bool:
    return importlib.util.find_spec("playwright") is not None


def browser_status(settings: Settings) -> tuple[bool, str]:
    """Whether the browser tool can run here, and what to do if not (for `dexter doctor`)."""
    chromium = find_chromium(dict(settings.env))
    if not playwright_installed():
        from dexter.install import add_extra_command

        return False, f"Playwright is not installed (`{add_extra_command('browser')}`)"
    if chromium is None:
        return False, "no Chromium found (`sudo apt-get install chromium`, or DEXTER_BROWSER_PATH)"
    return True, chromium


class BrowserArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal[
        "navigate",
        "open_tab",
        "switch_tab",
        "snapshot",
        "click",
        "type",
        "press",
        "scroll",
        "wait",
        "read",
        "close",
    ] = Field(description="what to do (see the tool description)")
    url: str | None = Field(None, max_length=2000, description="navigate / open_tab: the URL")
    ref: str | None = Field(
        None, max_length=20, description="click / type / press: an element ref from snapshot"
    )
    text: str | None = Field(None, max_length=2000, description="type: the text to enter")
    key: str | None = Field(None, max_length=40, description="press: e.g. Enter, Tab, ArrowDown")
    direction: Literal["up", "down"] = Field("down", description="scroll direction")
    time_ms: int = Field(1000, ge=0, le=MAX_WAIT_MS, description="wait: milliseconds")
    tab: int | None = Field(None, ge=0, description="switch_tab: the tab number from the list")
    max_chars: int = Field(
        DEFAULT_MAX_CHARS, ge=1000, le=200_000, description="snapshot / read: output cap"
    )


@dataclass
class BrowserSession:
    """One run's browser: pages (tabs), the current one, and the guard its requests pass."""

    playwright: Playwright
    browser: Browser
    context: BrowserContext
    proxy: GuardProxy
    pages: list[Page] = field(default_factory=list)
    current: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Where this run's pages asked to connect since the last navigation, so that a refusal
    # can be told apart from Chromium's own background requests when explaining a failure.
    requested: set[tuple[str, int]] = field(default_factory=set)

    @property
    def refused(self) -> list[str]:
        """Why the guard stopped connections, newest last."""
        return [refusal.reason for refusal in self.proxy.refused]

    def note_request(self, url: str) -> None:
        with contextlib.suppress(ValueError):
            self.requested.add(origin_of(url))

    def start_navigation(self) -> None:
        self.proxy.refused.clear()
        self.requested.clear()

    def why_refused(self) -> str | None:
        """The newest refusal of a connection one of the pages asked for."""
        for refusal in reversed(self.proxy.refused):
            if (refusal.host, refusal.port) in self.requested:
                return refusal.reason
        return None

    @property
    def page(self) -> Page:
        if not self.pages:
            raise ToolFailure("no page is open yet: call browser with action navigate first")
        return self.pages[self.current]

    async def close(self) -> None:
        try:
            await self.browser.close()
        finally:
            try:
                await self.playwright.stop()
            finally:
                await self.proxy.close()


class BrowserTool(Tool[BrowserArgs]):
    name: ClassVar[str] = "browser"
    brief: ClassVar[str] = "pages that need JavaScript or clicks"
    scope: ClassVar[ToolScope] = "public"
    description: ClassVar[str] = (
        "A headless browser for pages that need JavaScript or clicks; prefer web_fetch. For "
        "investor-relations sites, tables that load late and forms. "
        "Actions: navigate (url) opens a page in the current tab; open_tab (url) opens another "
        "tab; switch_tab (tab); snapshot returns the page's accessibility tree with element refs "
        "like [ref=e5]; click (ref), type (ref, text), press (key, optional ref), scroll "
        "(direction), wait (time_ms) act on it; read returns the main text; close ends the "
        "browser. Always snapshot after navigate or click before using refs; never guess refs "
        "or URLs. Only http(s) pages open; internal and private addresses are refused."
    )
    Args: ClassVar[type[BaseModel]] = BrowserArgs

    def __init__(
        self,
        *,
        executable: str | None = None,
        allowed_hosts: Iterable[str] = (),
        resolver: Resolver | None = None,
        connect: Connector | None = None,
    ) -> None:
        """`resolver` and `connect` stand in for DNS and for opening connections (tests)."""
        self.executable = executable
        self.allowed_hosts = normalise_hosts(allowed_hosts)
        self._resolver = resolver
        self._connect = connect
        self._sessions: dict[str, BrowserSession] = {}
        self._starting: dict[str, asyncio.Lock] = {}

    def resources(self, args: BrowserArgs) -> Resources:
        # Calls on the browser change its page, so they keep their order; others run alongside.
        return Resources.of(reads=["network"], writes=["browser"])

    async def run_finished(self, run_id: str) -> None:
        session = self._sessions.pop(run_id, None)
        self._starting.pop(run_id, None)
        if session is not None:
            await session.close()

    async def run(self, args: BrowserArgs, ctx: ToolContext) -> ToolResult:
        if args.action == "close":
            await self.run_finished(ctx.run_id)
            return ToolResult("Browser closed.")
        if args.action in ("navigate", "open_tab") and args.url:
            # Refused before a browser starts for it (the proxy checks every connection again).
            url = navigable_url(args.url)
            if url != "about:blank":
                try:
                    await check_url(url, allowed_hosts=self.allowed_hosts, resolve=False)
                except BlockedURL as exc:
                    raise ToolFailure(f"[browser] {exc}") from None
        session = await self._session(ctx.run_id)
        from playwright.async_api import Error as PlaywrightError

        async with session.lock:
            try:
                return await self._act(session, args, ctx)
            except PlaywrightError as exc:
                message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                why = session.why_refused()
                if why is not None:
                    message = f"{why} ({message})"
                raise ToolFailure(f"[browser] {message}") from None

    async def _session(self, run_id: str) -> BrowserSession:
        existing = self._sessions.get(run_id)
        if existing is not None:
            return existing
        lock = self._starting.setdefault(run_id, asyncio.Lock())
        async with lock:
            existing = self._sessions.get(run_id)
            if existing is not None:
                return existing
            session = await self._launch()
            self._sessions[run_id] = session
            return session

    async def _launch(self) -> BrowserSession:
        if not playwright_installed():
            raise ToolFailure(install_hint())
        executable = self.executable or find_chromium()
        if executable is None:
            raise ToolFailure(install_hint())
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import async_playwright

        proxy = GuardProxy(
            allowed_hosts=self.allowed_hosts, resolver=self._resolver, connect=self._connect
        )
        proxy_address = await proxy.start()
        playwright = await async_playwright().start()
        try:
            args = list(_LAUNCH_ARGS)
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                args.append("--no-sandbox")  # Chromium refuses its own sandbox as root
            from dexter.permissions.secrets import child_env

            # The browser renders untrusted pages: it gets the allowlisted environment, no keys.
            env: dict[str, str | float | bool] = dict(child_env(os.environ))
            browser = await playwright.chromium.launch(
                executable_path=executable,
                headless=True,
                args=args,
                env=env,
                # Playwright adds `<-loopback>`: loopback goes through the guard as well.
                proxy={"server": proxy_address},
            )
            context = await browser.new_context(service_workers="block", accept_downloads=False)
        except PlaywrightError as exc:
            await playwright.stop()
            await proxy.close()
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ToolFailure(f"could not start Chromium at {executable}: {first}") from None
        session = BrowserSession(playwright, browser, context, proxy)
        context.on("request", lambda request: session.note_request(request.url))
        return session

    async def _act(
        self, session: BrowserSession, args: BrowserArgs, ctx: ToolContext
    ) -> ToolResult:
        from playwright.async_api import Error as PlaywrightError

        action = args.action
        if action in ("navigate", "open_tab"):
            if not args.url:
                raise ToolFailure(f"[browser] {action} needs a url")
            url = navigable_url(args.url)
            if action == "open_tab" or not session.pages:
                session.pages.append(await session.context.new_page())
                session.current = len(session.pages) - 1
            page = session.page
            session.start_navigation()
            ctx.progress(f"Opening {url}")
            try:
                await page.goto(url, timeout=NAVIGATION_TIMEOUT_MS, wait_until="domcontentloaded")
            except PlaywrightError:
                # A refused or failed load leaves Chromium's error page navigating in the tab;
                # give the tab a fresh page so the next navigation is not interrupted by it.
                await page.close()
                session.pages[session.current] = await session.context.new_page()
                raise
            await _settle(page)
            if page.url.startswith("chrome-error:"):
                # The page went on (a script, a refresh) to somewhere the guard refused.
                why = session.why_refused() or "the page could not be loaded"
                raise ToolFailure(f"[browser] {why}")
            source = ctx.sources.add(f"Web: {await page.title() or page.url}", page.url)
            return ToolResult(
                f"[{source}] Opened {page.url} (tab {session.current}): "
                f"{await page.title()!r}. Call snapshot to see the page and its element refs.",
                data={"url": page.url, "tab": session.current},
            )
        if action == "switch_tab":
            if args.tab is None or args.tab >= len(session.pages):
                raise ToolFailure(f"[browser] no tab {args.tab}; {self._tabs(session)}")
            session.current = args.tab
            return ToolResult(f"Switched to tab {args.tab}: {session.page.url}")
        page = session.page
        if action == "snapshot":
            await _settle(page)
            tree = await page.aria_snapshot(mode="ai")
            body, cut = _cap(tree, args.max_chars)
            note = "\n[snapshot truncated: use read for the full text]" if cut else ""
            header = f"Page {page.url} ({await page.title()!r}); {self._tabs(session)}\n"
            return ToolResult(header + wrap_untrusted("browser", body) + note)
        if action in ("click", "type"):
            locator = page.locator(f"aria-ref={_ref(args.ref, action)}")
            if action == "click":
                await locator.click(timeout=ACTION_TIMEOUT_MS)
                await _settle(page)
                return ToolResult(f"Clicked {args.ref}; now at {page.url}. Snapshot to see it.")
            if args.text is None:
                raise ToolFailure("[browser] type needs text")
            await locator.fill(args.text, timeout=ACTION_TIMEOUT_MS)
            return ToolResult(f"Typed into {args.ref}.")
        if action == "press":
            if not args.key:
                raise ToolFailure("[browser] press needs a key")
            if args.ref:
                await page.locator(f"aria-ref={args.ref}").press(
                    args.key, timeout=ACTION_TIMEOUT_MS
                )
            else:
                await page.keyboard.press(args.key)
            await _settle(page)
            return ToolResult(f"Pressed {args.key}; now at {page.url}.")
        if action == "scroll":
            await page.mouse.wheel(0, 600 if args.direction == "down" else -600)
            await page.wait_for_timeout(300)
            return ToolResult(f"Scrolled {args.direction}.")
        if action == "wait":
            await page.wait_for_timeout(args.time_ms)
            return ToolResult(f"Waited {args.time_ms} ms.")
        return await self._read(page, args, ctx)

    async def _read(self, page: Page, args: BrowserArgs, ctx: ToolContext) -> ToolResult:
        await _settle(page)
        main = page.locator('main, article, [role="main"], #content, .content').first
        text = (await main.inner_text()) if await main.count() else await page.inner_text("body")
        body, cut = _cap(text.strip(), args.max_chars)
        source = ctx.sources.add(f"Web: {await page.title() or page.url}", page.url)
        note = f"\n[text truncated at {args.max_chars:,} characters]" if cut else ""
        return ToolResult(
            f"[{source}] Text of {page.url}:\n" + wrap_untrusted("browser", body) + note,
            data={"url": page.url, "chars": len(text)},
        )

    @staticmethod
    def _tabs(session: BrowserSession) -> str:
        listed = ", ".join(
            f"{'*' if i == session.current else ''}{i}: {p.url}"
            for i, p in enumerate(session.pages)
        )
        return f"tabs: {listed}"


def _ref(ref: str | None, action: str) -> str:
    if not ref:
        raise ToolFailure(f"[browser] {action} needs a ref from the latest snapshot")
    return ref.strip().removeprefix("ref=")


def _cap(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


async def _settle(page: Page) -> None:
    """Give late scripts a moment: wait for the network to go quiet, but never long."""
    from playwright.async_api import Error as PlaywrightError

    try:
        await page.wait_for_load_state("networkidle", timeout=SETTLE_TIMEOUT_MS)
    except PlaywrightError:
        pass  # a page that keeps polling never goes idle; what is there is good enough


def browser_tool(settings: Settings) -> BrowserTool | None:
    """The browser tool when Playwright and a Chromium are present, else None."""
    available, found = browser_status(settings)
    if not available:
        return None
    from dexter.tools.web.fetch import allowed_hosts_from_settings

    return BrowserTool(executable=found, allowed_hosts=allowed_hosts_from_settings(settings))


__all__ = [
    "BROWSER_PATH_ENV",
    "BrowserArgs",
    "BrowserTool",
    "browser_status",
    "browser_tool",
    "find_chromium",
    "install_hint",
]
