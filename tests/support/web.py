"""`dexter web` served for real on 127.0.0.1, with a scripted model and the local SEC mirror.

`WebServer` builds the app exactly as `dexter web` does (`dexter.cli.web_command.serve`'s
parts: settings, accounts, the runtime, `create_app`) and runs uvicorn in a thread on a free
port; the model is a `Script` that decides each reply from the question it was asked, so one
server answers every test of a module in any order.

Accounts: `ana` and `bob` are web users (password `PASSWORDS[name]`); the operator logs in with
`server.login_url()` (the one-time link; `server.fresh_token()` makes a new one per test).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dexter.models.scripted import Reply, ScriptedModel
from dexter.models.types import (
    ModelRequest,
    ModelResponse,
    StreamChunk,
    TextChunk,
    ToolMessage,
    UserMessage,
)
from dexter.web.passwords import hash_password
from tests.support.sec_mirror import Mirror, MirrorServer

MAIN = "openai:web-test"
ROUTER = "openai:web-router"
PASSWORDS = {"ana": "ana-password-1", "bob": "bob-password-2"}
# Cheap hashes: a test logs in often; the product's cost is for real passwords.
_TEST_COST = 2**10

Decide = Callable[[ModelRequest], Reply]


def last_question(request: ModelRequest) -> str:
    users = [m for m in request.messages if isinstance(m, UserMessage)]
    return users[-1].content if users else ""


def tool_results(request: ModelRequest) -> list[ToolMessage]:
    """Results of the current question's tool calls (after its last user message)."""
    found: list[ToolMessage] = []
    for message in request.messages:
        if isinstance(message, UserMessage):
            found = []
        elif isinstance(message, ToolMessage):
            found.append(message)
    return found


@dataclass
class Script:
    """The scripted model's brain: the first rule whose word is in the question decides."""

    rules: list[tuple[str, Decide]] = field(default_factory=list)
    requests: list[ModelRequest] = field(default_factory=list)

    def __call__(self, request: ModelRequest) -> Reply:
        self.requests.append(request)
        question = last_question(request).lower()
        for word, decide in self.rules:
            if word in question:
                return decide(request)
        return Reply(text="I can only answer the questions this test scripted.")

    # Set by a test to let an answer written with PAUSE go on past it.
    resume: threading.Event = field(default_factory=threading.Event)

    def model(self) -> ScriptedModel:
        return _PausingModel(self, [self] * 10_000, name="web-test", chunk_size=6)


# In a scripted answer: stream the text before it, then wait for `Script.resume`, so a test can
# look at the page while the answer is half written.
PAUSE = "\u23f8"


class _PausingModel(ScriptedModel):
    def __init__(self, script: Script, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.script = script

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        async for chunk in super().stream(request):
            if isinstance(chunk, TextChunk) and PAUSE in chunk.text:
                before, _, after = chunk.text.partition(PAUSE)
                yield TextChunk(before)
                await asyncio.to_thread(self.script.resume.wait, 30)
                self.script.resume.clear()
                chunk = TextChunk(after)
            elif isinstance(chunk, ModelResponse):
                message = replace(chunk.message, content=chunk.message.content.replace(PAUSE, ""))
                chunk = replace(chunk, message=message)
            yield chunk


def web_settings(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    users = {
        name: {"passwordHash": hash_password(password, n=_TEST_COST), "name": name.title()}
        for name, password in PASSWORDS.items()
    }
    (home / "settings.json").write_text(json.dumps({"web": {"users": users}}))


class WebServer:
    def __init__(self, root: Path, script: Script, sec_env: dict[str, str]) -> None:
        self.root = root
        self.script = script
        self.sec_env = sec_env
        self.base = ""
        self.state: Any = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def environ(self) -> dict[str, str]:
        import os

        return {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.root / "user-home"),
            "DEXTER_HOME": str(self.root / ".dexter"),
            "OPENAI_API_KEY": "sk-test-web-123456",
            "DEXTER_FINANCE_TOOLS": "direct",
            "DEXTER_MEMORY": "off",
            "DEXTER_ROUTER_MODEL": ROUTER,
            "DEXTER_DUCKDUCKGO_BASE_URL": "http://127.0.0.1:9",
            "DEXTER_YAHOO_URL": "http://127.0.0.1:9",
            **self.sec_env,
        }

    def start(self) -> None:
        import uvicorn

        from dexter.cli.web_command import bind, build
        from dexter.config import load_settings
        from dexter.web.accounts import load_accounts

        web_settings(self.root / ".dexter")
        settings = load_settings(cwd=self.root, environ=self.environ())
        sock = bind("127.0.0.1", 0)
        # What `dexter web -m MAIN` serves, with the scripted model in the runtime.
        served = build(settings, load_accounts(settings), sock, model=MAIN)
        runtime = served.state.runtime
        runtime._clients[runtime.resolve(MAIN).spec] = self.script.model()
        runtime._clients[runtime.resolve(ROUTER).spec] = ScriptedModel([Reply(text="[]")] * 500)
        self.state = served.state
        self.base = served.base
        config = uvicorn.Config(served.app, log_level="warning", access_log=False, lifespan="on")
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve(sockets=[sock])), daemon=True
        )
        self._thread.start()
        while not self._server.started:
            self._thread.join(0.01)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)

    def fresh_token(self) -> str:
        """A new one-time login link's token (the printed one is spent by the first test)."""
        from dexter.web.auth import OneTimeToken

        self.state.token = OneTimeToken()
        return str(self.state.token.value)

    def login_url(self) -> str:
        return f"{self.base}/login?token={self.fresh_token()}"


@contextmanager
def web_server(root: Path, script: Script) -> Iterator[WebServer]:
    with MirrorServer(Mirror()) as sec:
        server = WebServer(root, script, sec.env())
        server.start()
        try:
            yield server
        finally:
            server.stop()


__all__ = [
    "MAIN",
    "PASSWORDS",
    "PAUSE",
    "Script",
    "WebServer",
    "last_question",
    "tool_results",
    "web_server",
]


# Chromium as the browser tests run it: headless, no sandbox (root in CI), and none of the
# background traffic this machine's closed network refuses.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@contextmanager
def chromium() -> Iterator[Any]:
    """The system Chromium under Playwright, closed afterwards."""
    from playwright.sync_api import sync_playwright

    from dexter.tools.web.browser import find_chromium

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=find_chromium(), args=list(CHROMIUM_ARGS)
        )
        try:
            yield launched
        finally:
            launched.close()
