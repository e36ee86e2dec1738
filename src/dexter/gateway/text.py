"""Answers are Markdown; each platform renders something else. Conversion and splitting."""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from dexter.textpack import pack

TELEGRAM_LIMIT = 4096
MEDIA_REPLY = (
    "I can only read text messages for now. Please type your question and I'll look into it."
)


def split_blocks(markdown: str) -> list[str]:
    """Paragraphs, keeping each fenced code block whole even when it has blank lines."""
    blocks: list[str] = []
    current: list[str] = []
    in_fence = False
    for line in markdown.splitlines():
        if line.strip().startswith("```"):
            in_fence = not in_fence
        if not in_fence and not line.strip():
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def split_message(text: str, limit: int) -> list[str]:
    """Split into pieces of at most `limit` characters, on paragraph boundaries where possible,
    then on lines, then hard."""
    return pack(
        (part for block in split_blocks(text) for part in _fit(block, limit)), limit, "\n\n"
    )


def _fit(block: str, limit: int) -> list[str]:
    if len(block) <= limit:
        return [block]
    fence = block.lstrip().startswith("```")
    inner_limit = limit - 8 if fence else limit
    lines = block.splitlines()
    if fence:
        opener = lines[0]
        lines = [ln for ln in lines[1:] if not ln.strip().startswith("```")]
    # A line too long for one part is cut into full-width slices; a full slice joins nothing,
    # so packing them with the rest gives each its own part.
    slices = (
        line[start : start + inner_limit]
        for line in lines
        for start in range(0, max(len(line), 1), inner_limit)
    )
    parts = pack(slices, inner_limit, "\n")
    if fence:
        head = opener if len(opener) < 8 else "```"
        return [f"{head}\n{p}\n```"[:limit] for p in parts]
    return parts


# ---------------------------------------------------------------------- one walk, two renderings

_INLINE = re.compile(
    r"(?P<code>`[^`\n]+`)"
    r"|(?P<link>\[(?P<label>[^\]\n]+)\]\((?P<url>https?://[^)\s]+)\))"
    r"|(?P<bold>\*\*(?P<b>[^*\n]+?)\*\*|__(?P<b2>[^_\n]+?)__)"
    r"|(?P<strike>~~(?P<s>[^~\n]+?)~~)"
    r"|(?P<italic>(?<![\w*])\*(?P<i>[^*\n]+?)\*(?![\w*])|(?<![\w_])_(?P<i2>[^_\n]+?)_(?![\w_]))"
)


@dataclass(frozen=True, slots=True)
class _Style:
    """How one platform writes each Markdown element; the walks below are shared."""

    escape: Callable[[str], str]
    code: Callable[[str], str]  # inline code, its text escaped
    link: Callable[[str, str], str]  # (url, rendered label)
    bold: Callable[[str], str]
    strike: Callable[[str], str]
    italic: Callable[[str], str]
    block: Callable[[str, str], str]  # (language, escaped body) of a fenced block or table


def _inline(text: str, style: _Style) -> str:
    out: list[str] = []
    position = 0
    for match in _INLINE.finditer(text):
        out.append(style.escape(text[position : match.start()]))
        if match.group("code"):
            out.append(style.code(style.escape(match.group("code")[1:-1])))
        elif match.group("link"):
            out.append(style.link(match.group("url"), _inline(match.group("label"), style)))
        elif match.group("bold"):
            out.append(style.bold(_inline(match.group("b") or match.group("b2"), style)))
        elif match.group("strike"):
            out.append(style.strike(_inline(match.group("s"), style)))
        else:
            out.append(style.italic(_inline(match.group("i") or match.group("i2"), style)))
        position = match.end()
    out.append(style.escape(text[position:]))
    return "".join(out)


def _render(markdown: str, style: _Style) -> str:
    """Headings become bold lines, bullets `•`, tables a monospaced block whose columns line up."""
    out: list[str] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if stripped.startswith("```"):
            language = stripped[3:].strip()
            body: list[str] = []
            index += 1
            while index < len(lines) and not lines[index].strip().startswith("```"):
                body.append(lines[index])
                index += 1
            index += 1
            out.append(style.block(language, style.escape("\n".join(body))))
            continue
        if stripped.startswith("|") and stripped.endswith("|"):
            table: list[str] = []
            while index < len(lines) and lines[index].strip().startswith("|"):
                row = lines[index].strip()
                if not re.fullmatch(r"\|[\s:|-]+\|", row):
                    table.append(row)
                index += 1
            if table:  # a lone separator row ("| |", "|---|") has nothing to show
                out.append(style.block("", style.escape(_align_table(table))))
            continue
        heading = re.match(r"#{1,6}\s+(.*)", stripped)
        bullet = re.match(r"(\s*)[-*+]\s+(.*)", line)
        if heading:
            out.append(style.bold(_inline(heading.group(1).strip().strip("*"), style)))
        elif bullet:
            out.append(f"{bullet.group(1)}• {_inline(bullet.group(2), style)}")
        elif re.fullmatch(r"[-*_]{3,}", stripped):
            out.append("──────")
        else:
            out.append(_inline(line, style))
        index += 1
    return "\n".join(out)


def _html_block(language: str, body: str) -> str:
    if not language:
        return f"<pre>{body}</pre>"
    return f'<pre><code class="language-{html.escape(language)}">{body}</code></pre>'


# Telegram's HTML subset: b, i, s, code, pre, a.
_TELEGRAM = _Style(
    escape=lambda text: html.escape(text, quote=False),
    code=lambda text: f"<code>{text}</code>",
    link=lambda url, label: f'<a href="{html.escape(url, quote=True)}">{label}</a>',
    bold=lambda text: f"<b>{text}</b>",
    strike=lambda text: f"<s>{text}</s>",
    italic=lambda text: f"<i>{text}</i>",
    block=_html_block,
)


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Inside `<url|label>` these end the URL or start a control sequence (`<!channel>`, `<@U1>`).
_SLACK_URL_BREAKERS = str.maketrans({"<": "%3C", ">": "%3E", "|": "%7C"})


def _slack_link(url: str, label: str) -> str:
    """`<url|label>` for a plain http(s) URL; anything else is shown as text. Answers carry links
    from fetched pages, so a URL must never be able to close the link and ping a channel."""
    try:
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), parts.hostname
    except ValueError:  # e.g. an unclosed IPv6 bracket
        scheme, host = "", None
    controls = any(unicodedata.category(ch)[0] in "CZ" for ch in url)
    if scheme not in ("http", "https") or not host or controls:
        return f"{label} ({_slack_escape(url)})"
    safe = url.translate(_SLACK_URL_BREAKERS).replace("&", "&amp;")
    return f"<{safe}|{label.replace('|', '/')}>"


# Slack mrkdwn: `&`, `<`, `>` are escaped everywhere, as Slack requires; no headings or tables.
_SLACK = _Style(
    escape=_slack_escape,
    code=lambda text: f"`{text}`",
    link=_slack_link,
    bold=lambda text: f"*{text}*",
    strike=lambda text: f"~{text}~",
    italic=lambda text: f"_{text}_",
    block=lambda language, body: f"```\n{body}\n```",
)


def markdown_to_telegram_html(markdown: str) -> str:
    return _render(markdown, _TELEGRAM)


def markdown_to_slack(markdown: str) -> str:
    """Slack mrkdwn: *bold*, _italic_, ~strike~, `code`, <url|label>, `•` bullets."""
    return _render(markdown, _SLACK)


def _align_table(rows: list[str]) -> str:
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    width = max(len(r) for r in cells)
    sizes = [max(len(r[i]) if i < len(r) else 0 for r in cells) for i in range(width)]
    return "\n".join(
        "  ".join((r[i] if i < len(r) else "").ljust(sizes[i]) for i in range(width)).rstrip()
        for r in cells
    )


def telegram_pieces(markdown: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """Split first (on paragraphs of the Markdown), then convert each piece, so no HTML tag is
    ever cut in half; a piece that grows past the limit when converted is split again."""
    pieces: list[str] = []
    for part in split_message(markdown, limit):
        converted = markdown_to_telegram_html(part)
        if len(converted) <= limit:
            pieces.append(converted)
        else:
            pieces += [markdown_to_telegram_html(p) for p in split_message(part, limit // 2)]
    return [p for p in pieces if p.strip()]


# ---------------------------------------------------------------------- WhatsApp


def markdown_to_whatsapp(markdown: str) -> str:
    """WhatsApp: *bold*, _italic_, ~strike~, ```mono```; headings become bold lines.
    Idempotent on text already in WhatsApp form."""
    lines = []
    for line in markdown.splitlines():
        heading = re.match(r"\s*#{1,6}\s+(.*)", line)
        if heading:
            line = f"**{heading.group(1).strip().strip('*')}**"
        line = re.sub(r"\*\*([^*\n]+?)\*\*", r"*\1*", line)
        line = re.sub(r"~~([^~\n]+?)~~", r"~\1~", line)
        line = re.sub(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)", r"\1 (\2)", line)
        # Adjacent bold runs read better merged: *a* *b* -> *a b*.
        line = re.sub(r"\*([^*\n]+)\* \*([^*\n]+)\*", r"*\1 \2*", line)
        lines.append(line)
    return "\n".join(lines)
