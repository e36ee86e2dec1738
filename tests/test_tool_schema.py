"""Tool schemas are built once per argument model, and each caller gets its own copy."""

from __future__ import annotations

from pydantic import BaseModel, Field

from dexter.tools.schema import provider_safe_schema


class Inner(BaseModel):
    ticker: str = Field(description="The symbol")


class Args(BaseModel):
    items: list[Inner]
    limit: int = 5


def test_schema_is_inlined_and_a_callers_changes_do_not_leak() -> None:
    first = provider_safe_schema(Args)
    assert "$defs" not in first and first["additionalProperties"] is False
    assert first["properties"]["items"]["items"]["properties"]["ticker"]["type"] == "string"
    first["properties"]["items"]["items"]["properties"]["ticker"]["type"] = "changed"
    first["properties"].pop("limit")
    again = provider_safe_schema(Args)
    assert again["properties"]["items"]["items"]["properties"]["ticker"]["type"] == "string"
    assert "limit" in again["properties"]
