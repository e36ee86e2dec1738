"""SKILL.md frontmatter as YAML reads it, without importing YAML for the plain common case.

Every run reads every skill's frontmatter (the bundled ones at least) to offer the `skill` tool,
and importing PyYAML costs ~8 ms. Frontmatter written the way the bundled skills are (keys at
the margin holding a plain one-line value, a `[a, b]` list of names, or a `>-` folded paragraph)
is read here, giving exactly what `yaml.safe_load` gives; anything else, or anything doubtful
(a value YAML would read as a bool, null or number, a comment, a blank line, quotes, a tab), is
left to PyYAML, which also reports the errors.
"""

from __future__ import annotations

import re
from typing import Any

_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?")
# A one-line plain value: starts with a letter, and holds none of the characters that give YAML
# a reason to read it as anything but text (`:`, `#`, quotes, brackets, anchors, tags …).
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9 _.,;()/+?-]*")
_NAME_LIST = re.compile(r"\[ *([A-Za-z_][A-Za-z0-9_.-]*(?: *, *[A-Za-z_][A-Za-z0-9_.-]*)*) *\]")
# What YAML 1.1 (PyYAML) reads as a bool or null rather than text.
_NOT_TEXT = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


class InvalidFrontmatter(ValueError):
    """YAML refused the frontmatter; the message is its reason, on one line."""


def parse_frontmatter(header: str) -> Any:
    """What `yaml.safe_load(header)` returns. Raises InvalidFrontmatter where it raises."""
    simple = _read_simple(header)
    if simple is not None:
        return simple
    import yaml  # no stubs in the dev group

    try:
        return yaml.safe_load(header)
    except yaml.YAMLError as exc:
        raise InvalidFrontmatter(" ".join(str(exc).split())) from exc


def _read_simple(header: str) -> dict[str, Any] | None:
    lines = header.split("\n")
    result: dict[str, Any] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        found = _KEY.fullmatch(line)
        if found is None or not line.isprintable() or found.group(1) in result:
            return None
        if found.group(1).lower() in _NOT_TEXT:
            return None  # `yes:` is a bool key to YAML
        key, value = found.group(1), found.group(2)
        index += 1
        if value is None or value != value.strip() or not value:
            return None
        if value == ">-":
            folded: list[str] = []
            indent: str | None = None
            while index < len(lines) and lines[index].startswith(" "):
                text = lines[index]
                stripped = text.lstrip(" ")
                margin = text[: len(text) - len(stripped)]
                if indent is None:
                    indent = margin
                if margin != indent or not stripped or stripped != stripped.rstrip():
                    return None  # more or less indented, blank or trailing space: YAML's rules
                if not text.isprintable():
                    return None
                folded.append(stripped)
                index += 1
            if not folded:
                return None
            result[key] = " ".join(folded)
        elif (names := _NAME_LIST.fullmatch(value)) is not None:
            items = [item.strip() for item in names.group(1).split(",")]
            if any(item.lower() in _NOT_TEXT for item in items):
                return None
            result[key] = items
        elif _PLAIN.fullmatch(value) and value.lower() not in _NOT_TEXT:
            result[key] = value
        else:
            return None
    return result or None
