"""SKILL.md frontmatter reads exactly as YAML reads it, whether or not PyYAML does the reading."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
import yaml

from dexter.skills import BUNDLED_DIR
from dexter.skills.discovery import split_frontmatter
from dexter.skills.frontmatter import InvalidFrontmatter, parse_frontmatter

BUNDLED = sorted(BUNDLED_DIR.glob("*/SKILL.md"))

HEADERS = [
    "name: dcf\ndescription: One line saying what it does.\ntools: [get_financials, calculate]",
    "name: a-b.c\ndescription: Uses (parentheses), commas; slashes/plus+ signs? and - dashes",
    "tools: [ get_financials ,calculate ]\nname: x",
    "description: >-\n  Folded over\n  two lines, with × and “quotes” and a: colon # kept",
    "description: >-\n    deeper margin\n    same depth",
    # Everything below is YAML's to read: the answer must still be what YAML says.
    "name: yes",
    "name: On",
    "name: TRUE",
    "description: null",
    "description: ~",
    "name: 123",
    "name: 1.5e3",
    "name: .inf",
    "description: 2024-01-01",
    "description: 'quoted'",
    'description: "double"',
    "description: a # comment",
    "description: text\n  continued on the next line",
    "description: >-\n  one\n\n  two",
    "description: >-\n  one\n    more indented\n  back",
    "description: >-\n  trailing space \n  next",
    "description: >\n  clipped\n  keeps a newline",
    "description: |\n  literal\n  lines",
    "description: >-",
    "tools: []",
    "tools: [yes, no, null]",
    "tools: [a, [b]]",
    "yes: 1",
    "on: x",
    "name: first\nname: second",
    "name: x ",
    "\tname: x",
    "name:\n  nested: map",
    "name:",
    "- a\n- b",
    "",
    "# only a comment",
    "name: a\n\ndescription: b",
    "name: a: b",
    "name: [unclosed\ndescription: x",
    "name: &anchor x\nother: *anchor",
]


def outcome(read: Any, header: str) -> tuple[str, Any]:
    try:
        return "value", read(header)
    except (yaml.YAMLError, InvalidFrontmatter):
        return "error", None


@pytest.mark.parametrize("header", HEADERS)
def test_frontmatter_reads_as_yaml_reads_it(header: str) -> None:
    assert outcome(parse_frontmatter, header) == outcome(yaml.safe_load, header)


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.parent.name)
def test_bundled_frontmatter_reads_as_yaml_reads_it(path: Any) -> None:
    header, _ = split_frontmatter(path.read_text(encoding="utf-8"))
    assert parse_frontmatter(header) == yaml.safe_load(header)


def test_yaml_errors_keep_their_reason_on_one_line() -> None:
    with pytest.raises(InvalidFrontmatter) as info:
        parse_frontmatter("name: [unclosed\ndescription: x")
    assert "\n" not in str(info.value)
    assert "flow sequence" in str(info.value)


def test_a_date_stays_a_date() -> None:
    assert parse_frontmatter("description: 2024-01-01") == {"description": date(2024, 1, 1)}
