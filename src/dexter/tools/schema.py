"""Turn a pydantic model into a JSON schema every provider accepts.

Providers differ: some reject `$ref`/`$defs`, `title` noise wastes tokens, and OpenAI's strict
mode wants `additionalProperties: false`. We inline references and drop titles.
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
        return {
            key: _inline(value, defs)
            for key, value in node.items()
            if key != "title" or not isinstance(value, str)
        }
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    return node
