"""Answers are Markdown; each platform renders something else. Conversion and splitting."""

from __future__ import annotations

import html
import re

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
    pieces: list[str] = []
    current = ""
    for block in split_blocks(text):
        for part in _fit(block, limit):
            candidate = f"{current}\n\n{part}" if current else part
            if len(candidate) <= limit:
                current = candidate
            else:
                pieces.append(current)
                current = part
    if current:
        pieces.append(current)
    return pieces


def _fit(block: str, limit: int) -> list[str]:
    if len(block) <= limit:
        return [block]
    fence = block.lstrip().startswith("```")
    inner_limit = limit - 8 if fence else limit
    lines = block.splitlines()
    if fence:
        opener = lines[0]
        lines = [ln for ln in lines[1:] if not ln.strip().startswith("```")]
    parts: list[str] = []
    current = ""
    for line in lines:
        while len(line) > inner_limit:
            if current:
                parts.append(current)
                current = ""
            parts.append(line[:inner_limit])
            line = line[inner_limit:]
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) <= inner_limit:
            current = candidate
        else:
            parts.append(current)
            current = line
    if current:
        parts.append(current)
    if fence:
        head = opener if len(opener) < 8 else "```"
        return [f"{head}\n{p}\n```"[:limit] for p in parts]
    return parts


# ---------------------------------------------------------------------- Telegram (HTML mode)

_INLINE = re.compile(
    r"(?P<code>`[^`\n]+`)"
    r"|(?P<link>\[(?P<label>[^\]\n]+)\]\((?P<url>https?://[^)\s]+)\))"
    r"|(?P<bold>\*\*(?P<b>[^*\n]+?)\*\*|__(?P<b2>[^_\n]+?)__)"
    r"|(?P<strike>~~(?P<s>[^~\n]+?)~~)"
    r"|(?P<italic>(?<![\w*])\*(?P<i>[^*\n]+?)\*(?![\w*])|(?<![\w_])_(?P<i2>[^_\n]+?)_(?![\w_]))"
)


def _inline_html(text: str) -> str:
    out: list[str] = []
    position = 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[position : match.start()], quote=False))
        if match.group("code"):
            out.append(f"<code>{html.escape(match.group('code')[1:-1], quote=False)}</code>")
        elif match.group("link"):
            url = html.escape(match.group("url"), quote=True)
            out.append(f'<a href="{url}">{_inline_html(match.group("label"))}</a>')
        elif match.group("bold"):
            out.append(f"<b>{_inline_html(match.group('b') or match.group('b2'))}</b>")
        elif match.group("strike"):
            out.append(f"<s>{_inline_html(match.group('s'))}</s>")
        else:
            out.append(f"<i>{_inline_html(match.group('i') or match.group('i2'))}</i>")
        position = match.end()
    out.append(html.escape(text[position:], quote=False))
    return "".join(out)


def markdown_to_telegram_html(markdown: str) -> str:
    """Telegram's HTML subset: b, i, s, code, pre, a. Headings become bold lines, bullets `•`,
    and tables stay monospaced so their columns line up."""
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
            code = html.escape("\n".join(body), quote=False)
            attr = f' class="language-{html.escape(language)}"' if language else ""
            out.append(f"<pre><code{attr}>{code}</code></pre>" if attr else f"<pre>{code}</pre>")
            continue
        if stripped.startswith("|") and stripped.endswith("|"):
            table: list[str] = []
            while index < len(lines) and lines[index].strip().startswith("|"):
                row = lines[index].strip()
                if not re.fullmatch(r"\|[\s:|-]+\|", row):
                    table.append(row)
                index += 1
            out.append(f"<pre>{html.escape(_align_table(table), quote=False)}</pre>")
            continue
        heading = re.match(r"#{1,6}\s+(.*)", stripped)
        bullet = re.match(r"(\s*)[-*+]\s+(.*)", line)
        if heading:
            out.append(f"<b>{_inline_html(heading.group(1).strip().strip('*'))}</b>")
        elif bullet:
            out.append(f"{bullet.group(1)}• {_inline_html(bullet.group(2))}")
        elif re.fullmatch(r"[-*_]{3,}", stripped):
            out.append("──────")
        else:
            out.append(_inline_html(line))
        index += 1
    return "\n".join(out)


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


# ---------------------------------------------------------------------- WhatsApp and Slack


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


def markdown_to_slack(markdown: str) -> str:
    """Slack mrkdwn: *bold*, _italic_, ~strike~, `code`, <url|label>, `•` bullets; headings become
    bold lines and tables a code block (mrkdwn has neither). `&`, `<`, `>` are escaped everywhere,
    as Slack requires; code keeps its text untouched otherwise."""
    out: list[str] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if stripped.startswith("```"):
            body: list[str] = []
            index += 1
            while index < len(lines) and not lines[index].strip().startswith("```"):
                body.append(_slack_escape(lines[index]))
                index += 1
            index += 1
            out.append("```\n" + "\n".join(body) + "\n```")
            continue
        if stripped.startswith("|") and stripped.endswith("|"):
            table: list[str] = []
            while index < len(lines) and lines[index].strip().startswith("|"):
                row = lines[index].strip()
                if not re.fullmatch(r"\|[\s:|-]+\|", row):
                    table.append(row)
                index += 1
            out.append("```\n" + _slack_escape(_align_table(table)) + "\n```")
            continue
        heading = re.match(r"#{1,6}\s+(.*)", stripped)
        bullet = re.match(r"(\s*)[-*+]\s+(.*)", line)
        if heading:
            out.append(f"*{_slack_inline(heading.group(1).strip().strip('*'))}*")
        elif bullet:
            out.append(f"{bullet.group(1)}• {_slack_inline(bullet.group(2))}")
        else:
            out.append(_slack_inline(line))
        index += 1
    return "\n".join(out)


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_inline(text: str) -> str:
    out: list[str] = []
    position = 0
    for match in _INLINE.finditer(text):
        out.append(_slack_escape(text[position : match.start()]))
        if match.group("code"):
            out.append(_slack_escape(match.group("code")))
        elif match.group("link"):
            label = _slack_escape(match.group("label")).replace("|", "/")
            out.append(f"<{match.group('url')}|{label}>")
        elif match.group("bold"):
            out.append(f"*{_slack_inline(match.group('b') or match.group('b2'))}*")
        elif match.group("strike"):
            out.append(f"~{_slack_inline(match.group('s'))}~")
        else:
            out.append(f"_{_slack_inline(match.group('i') or match.group('i2'))}_")
        position = match.end()
    out.append(_slack_escape(text[position:]))
    return "".join(out)
