"""Short text for the session's rows: tool arguments, durations and per-answer stats."""

from __future__ import annotations

import json
import re
from typing import Any

from dexter.agent.events import Done
from dexter.figure_marks import summary_line

ARG_VALUE_LIMIT = 40
ARGS_LIMIT = 80


def compact_args(args: dict[str, Any], limit: int = ARGS_LIMIT) -> str:
    """`key=value, …` on one line, short enough to keep a tool row to a single line."""
    parts = []
    for key, value in args.items():
        if isinstance(value, str) and value and "," not in value and "\n" not in value:
            shown = value
        else:
            shown = json.dumps(value, ensure_ascii=False)
        if len(shown) > ARG_VALUE_LIMIT:
            shown = shown[: ARG_VALUE_LIMIT - 1] + "…"
        parts.append(f"{key}={shown}")
    text = ", ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_duration(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def format_stats(done: Done) -> str:
    steps = "step" if done.iterations == 1 else "steps"
    parts = [f"{done.iterations} {steps}"]
    usage = done.usage
    if usage.total_tokens:
        parts.append(
            f"{usage.total_tokens:,} tokens ({usage.input_tokens:,} in · "
            f"{usage.output_tokens:,} out)"
        )
    if done.tool_calls:
        count = len(done.tool_calls)
        parts.append(f"{count} tool call{'s' if count != 1 else ''}")
    parts.append(format_duration(done.duration_ms))
    figures = summary_line(done.verification)
    if figures:
        parts.append(figures)
    return " · ".join(parts)


def one_line(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\((https?://[^)\s]+)\)")


def with_link_targets(markdown: str) -> str:
    """`[the 10-K](https://…)` → `the 10-K (https://…)`: with the mouse left to the terminal a
    link cannot be clicked, so its target is shown, as `sessions show` and the scrollback do."""

    def spell(match: re.Match[str]) -> str:
        label, url = match.group(1), match.group(2)
        return url if label.strip() == url else f"{label} ({url})"

    return _LINK.sub(spell, markdown)
