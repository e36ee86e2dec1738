"""Hostile text for report and export tests, and checks of what a produced file would do when a
person opens it: markup that runs or loads, links that are not plain web links, formulas."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser

SCRIPT = "<script>alert(1)</script>"
MD_LINK = "[x](javascript:alert(1))"
FORMULAS = ('=HYPERLINK("http://127.0.0.1:9/x","click")', "+1", "-2+3", "@SUM(1)", "\t=1", "\r=1")

# Tags that run code, load something, or leave the page when a report is opened or rendered.
_LIVE_TAGS = {
    "script", "link", "img", "iframe", "frame", "object", "embed", "base", "form", "input",
    "audio", "video", "source", "image", "foreignobject", "meta",
}  # fmt: skip
_URL_ATTRIBUTES = {"href", "src", "xlink:href", "action", "formaction", "data", "poster"}


def attachment(secret: str) -> str:
    return f"<link rel=attachment href=file://{secret}>"


def image(port: int, name: str = "x") -> str:
    return f"<img src=http://127.0.0.1:{port}/{name}>"


def hostile_text(port: int, secret: str) -> str:
    """Every markup attack in one string (no formula prefix: that needs the start of a cell)."""
    return f"{SCRIPT} {attachment(secret)} {image(port)} {MD_LINK}"


@dataclass
class _Markup(HTMLParser):
    allowed_images: tuple[str, ...] = ()
    problems: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "img" and values.get("src") in self.allowed_images:
            return
        if tag == "meta" and (values.get("charset") or values.get("name") == "viewport"):
            return
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "content-security-policy":
            return
        if tag in _LIVE_TAGS:
            self.problems.append(f"<{tag} {attrs}>")
        for name, value in attrs:
            value = (value or "").strip()
            if name.startswith("on"):
                self.problems.append(f"{tag} {name}={value!r}")
            if name in _URL_ATTRIBUTES and not _plain_link(value):
                self.problems.append(f"{tag} {name}={value!r}")
            if "url(" in value.replace("url(#", ""):
                self.problems.append(f"{tag} {name}={value!r}")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _plain_link(value: str) -> bool:
    return value.startswith(("#", "https://", "http://", "mailto:"))


def live_markup(html: str, *, allowed_images: tuple[str, ...] = ()) -> tuple[list[str], str]:
    """(what in `html` would run, load or link anywhere but the web, the text a reader sees)."""
    parser = _Markup(allowed_images=allowed_images)
    parser.feed(html)
    parser.close()
    return parser.problems, "".join(parser.text)


def markdown_as_viewers_render_it(text: str) -> list[str]:
    """`text` rendered as HTML by lax Markdown viewers: raw HTML on, links unchecked, with and
    without footnotes and tables (with footnotes off, `[^S1]: …` is a link definition)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.footnote import footnote_plugin

    rendered = []
    for footnotes in (False, True):
        parser = MarkdownIt("commonmark", {"html": True}).enable("table")
        if footnotes:
            parser.use(footnote_plugin)
        parser.validateLink = lambda url: True  # type: ignore[method-assign]
        rendered.append(parser.render(text))
    return rendered


@dataclass
class Listener:
    """An HTTP server on 127.0.0.1 that counts the requests it gets (a renderer that loads
    anything from a report's text shows up here)."""

    port: int
    hits: list[str]


@contextmanager
def listening() -> Iterator[Listener]:
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield Listener(server.server_address[1], hits)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
