"""Untrusted text made inert for Markdown and HTML reports.

Everything in a report except Dexter's own words came from outside: the question (a chat message,
a cron job's prompt), the answer (model output, steered by whatever pages it read), web page titles
as source labels, company names and labels from data providers. None of it may become markup that
runs, loads or links anywhere when the report is opened, in a browser, a Markdown viewer or the
PDF renderer. The rules:
- links lead only to web addresses (http, https), mail addresses or the report's own anchors;
- nothing is loaded: no images from the answer, no raw HTML, no entities that rebuild either;
- text is shown as the text it was, escaped, never dropped.

HTML escaping itself is Jinja's (autoescape on); here are the link rule, the answer's Markdown as
HTML, and escaping for Markdown. The answer stays Markdown (its tables and emphasis are the
point), made safe and then checked with a CommonMark parser; one that still holds anything live
is shown as plain escaped text instead.
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any

# C0 and C1 controls (tab and newline kept): terminal escape sequences when the Markdown report
# is printed, and invalid in XML (XLSX) and HTML.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_WEB_URL = re.compile(r"https?://[^\s<>\"'`\\]+", re.IGNORECASE)
_MAIL_URL = re.compile(r"mailto:[^\s<>\"'`\\/]+", re.IGNORECASE)
# Characters that build Markdown structure anywhere in a line; `<`, `>` and `&` as entities,
# which every Markdown dialect decodes to text (a backslash before `<` is not an escape in all).
_MD_ESCAPES = {
    "\\": "\\\\",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "[": "\\[",
    "]": "\\]",
    "|": "\\|",
    "~": "\\~",
    "<": "&lt;",
    ">": "&gt;",
    "&": "&amp;",
}
_MD_SPECIAL = re.compile("[" + re.escape("".join(_MD_ESCAPES)) + "]")
# Markers that start a block (heading, list, quote, setext underline) at the start of a line.
_BLOCK_START = re.compile(r"^(\s*)([#+=-]|\d+(?=[.)]))")
# In the answer: the `<` of a tag, comment, declaration or autolink; an image; a link's target.
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
_INLINE_TARGET = re.compile(r"\]\(\s*<?([^\s>)]*)")
_DEFINITION = re.compile(r"^( {0,3})\[((?:\\.|[^\\\]])+)\]:[ \t]*\n?[ \t]*<?([^\s>]*)", re.M)


def plain(text: str) -> str:
    """`text` without control characters; line endings as `\\n`."""
    return _CONTROLS.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def web_url(url: str | None) -> str | None:
    """`url` when it is a plain web address (http or https), else None."""
    candidate = (url or "").strip()
    return candidate if _WEB_URL.fullmatch(candidate) else None


def allowed_href(url: str) -> bool:
    """A link target a report may keep live: a web or mail address, or an anchor in the page."""
    target = url.strip()
    return bool(web_url(target) or _MAIL_URL.fullmatch(target) or re.fullmatch(r"#[\w.-]+", target))


# --------------------------------------------------------------------------- Markdown


def md_inline(text: str) -> str:
    """`text` as Markdown that reads as exactly this text, on one line."""
    return _MD_SPECIAL.sub(lambda m: _MD_ESCAPES[m.group()], " ".join(plain(text).split()))


def md_block(text: str) -> str:
    """`text` as Markdown paragraphs that read as exactly this text (no headings, lists, code,
    tables, quotes, links or HTML)."""
    lines = []
    for line in plain(text).strip().split("\n"):
        escaped = _MD_SPECIAL.sub(lambda m: _MD_ESCAPES[m.group()], line.strip())
        # "1." and "1)" start a list: the punctuation after the digits is escaped instead.
        lines.append(_BLOCK_START.sub(_escape_block_start, escaped))
    return "\n".join(lines)


def _escape_block_start(match: re.Match[str]) -> str:
    marker = match.group(2)
    return f"{match.group(1)}{marker}\\" if marker[0].isdigit() else f"{match.group(1)}\\{marker}"


def md_answer(answer: str, *, top: int = 1) -> str:
    """The model's Markdown answer with its formatting, minus anything live: raw HTML and
    autolinks other than web ones become text, images become links, links to anything but the
    web become text. Checked with a CommonMark parser; plain escaped text when still unsafe.
    Its headings are moved down so the highest is at level `top` (below the report's own)."""
    text = plain(answer)
    text = _TAG_OPEN.sub(_tag_or_web_autolink, text)
    text = text.replace("![", "&#33;[")
    text = _INLINE_TARGET.sub(lambda m: _unless_allowed(m, "]&#40;"), text)
    text = _DEFINITION.sub(lambda m: _unless_allowed(m, m.group(1) + "\\["), text)
    return _demoted(text, top) if not unsafe_markdown(text) else md_block(answer)


_ATX = re.compile(r"^((?:[ \t]*>)*[ \t]{0,3})(#{1,6})(?=[ \t]|$)")


def _shift(levels: list[int], top: int) -> int:
    """How far down to move headings whose highest level is min(levels), so it becomes `top`;
    never up (an answer that starts at ### stays there)."""
    return max(0, top - min(levels)) if levels else 0


def _demoted(markdown: str, top: int) -> str:
    """`markdown` with every heading moved down by the same number of levels (at most to 6),
    so its highest is `top`. Found by the CommonMark parser, so a `#` in code is left alone;
    underlined (setext) headings are rewritten as `#` ones."""
    tokens = [t for t in _safe_parser().parse(markdown) if t.type == "heading_open" and t.map]
    shift = _shift([int(t.tag[1]) for t in tokens], top)
    if not shift:
        return markdown
    lines = markdown.split("\n")
    rewritten: dict[int, str | None] = {}  # line number -> its new text, or None to drop it
    for token in tokens:
        first, end = token.map
        level = min(6, int(token.tag[1]) + shift)
        if token.markup.startswith("#"):
            marker = _ATX.match(lines[first])
            if marker:
                rest = lines[first][marker.end() :]
                rewritten[first] = marker.group(1) + "#" * level + rest
            continue
        # Setext: the heading's text lines, then its underline, become one `#` line.
        indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
        words = " ".join(line.strip() for line in lines[first : end - 1])
        rewritten[first] = f"{indent}{'#' * level} {words}"
        rewritten.update(dict.fromkeys(range(first + 1, end)))
    kept = (rewritten.get(number, line) for number, line in enumerate(lines))
    return "\n".join(line for line in kept if line is not None)


def _tag_or_web_autolink(match: re.Match[str]) -> str:
    rest = match.string[match.end() :]
    autolink = re.match(r"[^<>\s]*>", rest)
    if autolink and allowed_href(autolink.group()[:-1]):
        return "<"
    return "&lt;"


def _unless_allowed(match: re.Match[str], neutral: str) -> str:
    """The match unchanged when its link target is allowed, else with its opening made text."""
    target = html.unescape(re.sub(r"\\(.)", r"\1", match.group(match.lastindex or 0)))
    if allowed_href(target):
        return match.group()
    whole = match.group()
    if neutral.endswith("&#40;"):  # an inline link: "](" becomes "]" + an entity "("
        return neutral + whole[2:]
    return neutral + whole[len(match.group(1)) + 1 :]  # a definition: its "[" escaped


def unsafe_markdown(text: str) -> list[str]:
    """What a lax CommonMark viewer (raw HTML on, every link accepted, with or without
    footnotes) would make live in `text`: HTML, images, links that are not allowed."""
    found: list[str] = []
    for parser in _lax_parsers():
        env: dict[str, Any] = {}
        found += _live_tokens(parser.parse(text, env))
        for reference in env.get("references", {}).values():
            if not allowed_href(str(reference.get("href", ""))):
                found.append(f"definition {reference.get('href')!r}")
    return found


@functools.cache
def _lax_parsers() -> tuple[Any, ...]:
    from markdown_it import MarkdownIt
    from mdit_py_plugins.footnote import footnote_plugin

    parsers = []
    for footnotes in (False, True):
        parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
        if footnotes:
            parser.use(footnote_plugin)
        parser.validateLink = lambda url: True  # type: ignore[method-assign]
        parsers.append(parser)
    return tuple(parsers)


def _live_tokens(tokens: list[Any]) -> list[str]:
    found = []
    for token in tokens:
        if token.type in ("html_block", "html_inline", "image"):
            found.append(f"{token.type} {token.content[:40]!r}")
        elif token.type == "link_open" and not allowed_href(str(token.attrGet("href") or "")):
            found.append(f"link {token.attrGet('href')!r}")
        found += _live_tokens(token.children or [])
    return found


# --------------------------------------------------------------------------- HTML


@functools.cache
def _safe_parser() -> Any:
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")
    parser.validateLink = allowed_href  # type: ignore[method-assign]
    return parser


def answer_html(answer: str, *, top: int = 1) -> str:
    """The answer's Markdown as HTML: raw HTML shown as text, no images (nothing loads when the
    report is opened or printed), links only where `allowed_href` says. Its headings are moved
    down so the highest is `<h{top}>` (below the page's own sections)."""
    parser = _safe_parser()
    env: dict[str, Any] = {}
    tokens = parser.parse(plain(answer), env)
    headings = [t for t in tokens if t.type in ("heading_open", "heading_close")]
    shift = _shift([int(t.tag[1]) for t in headings], top)
    for token in headings:
        token.tag = f"h{min(6, int(token.tag[1]) + shift)}"
    return str(parser.renderer.render(tokens, parser.options, env))


__all__ = [
    "allowed_href",
    "answer_html",
    "md_answer",
    "md_block",
    "md_inline",
    "plain",
    "unsafe_markdown",
    "web_url",
]
