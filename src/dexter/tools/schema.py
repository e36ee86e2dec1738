"""Turn a pydantic model into a JSON schema every provider accepts.

Providers differ: some reject `$ref`/`$defs`, `title` noise wastes tokens, and OpenAI's strict
mode wants `additionalProperties: false`. We inline references, drop titles, and show optional
fields (`T | None = None`) as plain `T` without the null default.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import BaseModel


def provider_safe_schema(model: type[BaseModel]) -> dict[str, Any]:
    # Every run asks each tool for its schema; pydantic builds it afresh each time (about a
    # millisecond a tool, on the event loop), so build it once per model class.
    return copy.deepcopy(_schema(model))


@cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    defs: dict[str, Any] = raw.pop("$defs", {})
    schema: dict[str, Any] = _inline(raw, defs)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs[ref.removeprefix("#/$defs/")]
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline(merged, defs)
        inlined = {
            key: _inline(value, defs)
            for key, value in node.items()
            if key != "title" or not isinstance(value, str)
        }
        return _plain_optional(inlined)
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    return node


_NULL = {"type": "null"}


def _plain_optional(node: dict[str, Any]) -> dict[str, Any]:
    """`x: T | None = None` as plain `T`: leaving it out of `required` already says it may be
    omitted. The null branch and the null default cost characters in every request (and some
    providers refuse `anyOf`); the arguments are still validated against the real model."""
    if "default" not in node or node["default"] is not None:
        return node
    plain = {k: v for k, v in node.items() if k != "default"}
    options = plain.get("anyOf")
    if isinstance(options, list) and _NULL in options:
        rest = [o for o in options if o != _NULL]
        if len(rest) == 1 and isinstance(rest[0], dict):
            plain = {**rest[0], **{k: v for k, v in plain.items() if k != "anyOf"}}
        else:
            plain["anyOf"] = rest
    return plain
