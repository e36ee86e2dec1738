"""What a model call costs: a built-in table of list prices, overridable in settings.json.

The figures are rough estimates of published list prices, in USD per million tokens, written down
once and not kept current; they exist so `dexter usage` can show an order of magnitude. Users who
need exact numbers set `"prices": {"provider:model": {"input": x, "output": y, "cached": z}}`.
A model that is in neither place has no price, and its cost is shown as unknown, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dexter.config import ConfigError
from dexter.models.types import Usage

if TYPE_CHECKING:
    from dexter.config import Settings


@dataclass(frozen=True, slots=True)
class Price:
    """USD per 1M tokens. `cached` is what a cache hit costs per input token."""

    input: float
    output: float
    cached: float

    def cost(self, usage: Usage) -> float:
        # Our Usage counts cache hits inside input_tokens (and reasoning inside output_tokens),
        # so only the uncached part of the input is charged at the full rate.
        cached = min(usage.cached_tokens, usage.input_tokens)
        fresh = usage.input_tokens - cached
        total = fresh * self.input + cached * self.cached + usage.output_tokens * self.output
        return total / 1_000_000


def _p(input_: float, output: float, cached: float) -> Price:
    return Price(input_, output, cached)


# Estimates only (see the module docstring). Keys are model ids or id prefixes; the longest
# matching prefix wins, so "gpt-4o-mini" is listed to keep it from being priced as "gpt-4o".
_TABLE: dict[str, dict[str, Price]] = {
    "openai": {
        "gpt-5.6-sol": _p(1.25, 10.0, 0.125),
        "gpt-5.6-terra": _p(0.25, 2.0, 0.025),
        "gpt-5.6-luna": _p(0.05, 0.40, 0.005),
        "gpt-4.1": _p(2.0, 8.0, 0.50),
        "gpt-4.1-mini": _p(0.40, 1.60, 0.10),
        "gpt-4.1-nano": _p(0.10, 0.40, 0.025),
        "gpt-4o": _p(2.50, 10.0, 1.25),
        "gpt-4o-mini": _p(0.15, 0.60, 0.075),
        "o3": _p(2.0, 8.0, 0.50),
        "o3-mini": _p(1.10, 4.40, 0.55),
        "o3-pro": _p(20.0, 80.0, 20.0),
        "o4-mini": _p(1.10, 4.40, 0.275),
    },
    "anthropic": {
        "claude-sonnet-4-6": _p(3.0, 15.0, 0.30),
        "claude-opus-4-8": _p(5.0, 25.0, 0.50),
        "claude-haiku-4-5": _p(1.0, 5.0, 0.10),
    },
    "google": {
        "gemini-3-flash": _p(0.50, 3.0, 0.05),
        "gemini-3-pro": _p(2.0, 12.0, 0.20),
        "gemini-3.1-pro": _p(2.0, 12.0, 0.20),
    },
    "xai": {
        "grok-4": _p(3.0, 15.0, 0.75),
        "grok-4-fast": _p(0.20, 0.50, 0.05),
        "grok-4-1-fast": _p(0.20, 0.50, 0.05),
    },
    "deepseek": {
        "deepseek-v4-pro": _p(0.55, 2.20, 0.14),
        "deepseek-v4-flash": _p(0.28, 0.42, 0.028),
    },
    "moonshot": {
        "kimi-k2-5": _p(0.60, 2.50, 0.15),
    },
}

# Local models cost nothing per token, whatever they are called.
_FREE_PROVIDERS = frozenset({"ollama"})

# OpenRouter ids are "vendor/model"; its prices track the vendor's, so reuse their rows.
_OPENROUTER_VENDORS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "x-ai": "xai",
    "deepseek": "deepseek",
    "moonshotai": "moonshot",
}

_FREE = Price(0.0, 0.0, 0.0)


def _lookup(table: Mapping[str, Price], model: str) -> Price | None:
    if model in table:
        return table[model]
    matches = [key for key in table if model.startswith(key)]
    return table[max(matches, key=len)] if matches else None


def price_for(
    provider: str, model: str, overrides: Mapping[str, Price] | None = None
) -> Price | None:
    """The price of `provider:model`: settings overrides first, then the table; None if unknown.

    Both are matched exactly first, then by the longest prefix (dated ids like
    `claude-haiku-4-5-20251001` find `claude-haiku-4-5`).
    """
    provider = provider.strip().lower()
    model = model.strip()
    if overrides:
        found = _lookup(overrides, f"{provider}:{model}")
        if found is not None:
            return found
    if provider in _FREE_PROVIDERS:
        return _FREE
    if provider == "openrouter" and "/" in model:
        vendor, _, name = model.partition("/")
        vendor_id = _OPENROUTER_VENDORS.get(vendor.lower())
        return _lookup(_TABLE[vendor_id], name) if vendor_id else None
    table = _TABLE.get(provider)
    return _lookup(table, model) if table else None


def parse_overrides(raw: object, where: str = '"prices" in settings') -> dict[str, Price]:
    """Validate the settings' `prices` object; `cached` defaults to the input price."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(
            f'{where} must be an object like {{"openai:gpt-4.1": {{"input": 2, "output": 8}}}}.'
        )
    result: dict[str, Price] = {}
    for key, entry in raw.items():
        if not isinstance(key, str) or ":" not in key:
            raise ConfigError(f'{where}: key {key!r} must look like "provider:model".')
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: {key!r} must be an object with input and output prices.")
        values: dict[str, float] = {}
        for field in ("input", "output", "cached"):
            value = entry.get(field)
            if value is None and field == "cached":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigError(
                    f"{where}: {key}.{field} must be a non-negative number (USD per 1M tokens)."
                )
            values[field] = float(value)
        provider, _, model = key.partition(":")
        result[f"{provider.strip().lower()}:{model.strip()}"] = Price(
            values["input"], values["output"], values.get("cached", values["input"])
        )
    return result


def overrides_from_settings(settings: Settings) -> dict[str, Price]:
    from dexter.settings_model import TopLevel

    return parse_overrides(
        settings.section(TopLevel).prices, f'"prices" in {settings.settings_path}'
    )
