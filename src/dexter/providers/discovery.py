"""A model's real context window: a per-model table, and discovery from the provider's API.

A provider-wide figure is wrong whenever a provider serves models of different sizes: OpenRouter
routes to 8k and 2M models alike, and Ollama runs a local model at its `num_ctx`, silently
truncating anything longer instead of returning an error, so budgeting against 128k there means
the model never sees the question. Discovery asks the server; the table covers the rest.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import httpx2

DISCOVERY_TIMEOUT = 5.0

# Keys match a model name exactly or as a prefix followed by "-", ":" or "@" (dated snapshots,
# Ollama tags, Vertex versions); the longest matching key wins, so "gpt-4o" beats "gpt-4".
# Vendor prefixes ("openai/gpt-4o" on OpenRouter) are ignored for the lookup.
KNOWN_WINDOWS: Mapping[str, int] = {
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "grok-3": 131_072,
    "grok-3-mini": 131_072,
    "grok-4": 256_000,
    "llama3": 8_192,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "mistral": 32_768,
    "mixtral": 32_768,
    "qwen2.5": 32_768,
    "gemma2": 8_192,
    "gemma3": 131_072,
}


def known_window(model_name: str) -> int | None:
    """The table's window for `model_name`, or None if no key matches."""
    name = model_name.strip().lower().rsplit("/", 1)[-1]
    best: tuple[int, int] | None = None
    for key, window in KNOWN_WINDOWS.items():
        if name == key or (name.startswith(key) and name[len(key)] in "-:@"):
            if best is None or len(key) > best[0]:
                best = (len(key), window)
    return best[1] if best else None


def context_window(
    provider_id: str,
    model_name: str,
    default: int,
    *,
    overrides: Mapping[str, int] | None = None,
) -> int:
    """The window to budget against: a user override, then the table, then `default`.

    `overrides` is the provider's per-model setting (`ProviderSpec.model_context_windows`), which
    the user wrote for a reason and so beats the table. `provider_id` is accepted for symmetry
    with discovery; the table is the same for every provider serving a model.
    """
    del provider_id
    if overrides and model_name in overrides:
        return overrides[model_name]
    return known_window(model_name) or default


# ---- discovery ----------------------------------------------------------------------------


def positive_int(value: Any) -> int | None:
    """A count from a server's JSON: a positive int, float or digit string; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value > 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


def ollama_window(payload: Any) -> int | None:
    """The window an Ollama `/api/show` answer gives: the trained `*.context_length`, or the
    model's `num_ctx` parameter when that is smaller."""
    if not isinstance(payload, dict):
        return None
    trained: int | None = None
    info = payload.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if isinstance(key, str) and key.endswith(".context_length"):
                trained = positive_int(value)
                if trained:
                    break
    configured: int | None = None
    parameters = payload.get("parameters")
    if isinstance(parameters, str):
        match = re.search(r"^\s*num_ctx\s+(\d+)", parameters, re.MULTILINE)
        if match:
            configured = positive_int(match.group(1))
    # Ollama runs the model at num_ctx when set, however large the trained window.
    candidates = [w for w in (trained, configured) if w]
    return min(candidates) if candidates else None


def _openrouter_window(payload: Any, model_name: str) -> int | None:
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return None
    for entry in data:
        if isinstance(entry, dict) and entry.get("id") == model_name:
            window = positive_int(entry.get("context_length"))
            if window is None and isinstance(entry.get("top_provider"), dict):
                window = positive_int(entry["top_provider"].get("context_length"))
            return window
    return None


def ollama_root(base_url: str) -> str:
    """A server's root URL from an OpenAI-compatible base URL (`…/v1`) or Ollama's `…/api`."""
    root = base_url.strip().rstrip("/")
    for suffix in ("/v1", "/api"):
        if root.endswith(suffix):
            root = root[: -len(suffix)]
    return root


async def discover_context_window(
    provider_id: str,
    base_url: str,
    model_name: str,
    *,
    api_key: str | None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> int | None:
    """Ask Ollama (`/api/show`) or OpenRouter (`/models`) for the model's window.

    Returns None for other providers and on any failure: discovery is an improvement, never a
    reason for a run to fail.
    """
    kind = (
        "ollama"
        if provider_id.startswith("ollama")
        else "openrouter"
        if provider_id == "openrouter"
        else None
    )
    if kind is None:
        return None

    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        from dexter.httpclient import async_client

        async with async_client(
            headers=headers, timeout=DISCOVERY_TIMEOUT, transport=transport
        ) as client:
            if kind == "ollama":
                response = await client.post(
                    ollama_root(base_url) + "/api/show", json={"model": model_name}
                )
                response.raise_for_status()
                return ollama_window(response.json())
            response = await client.get(base_url.rstrip("/") + "/models")
            response.raise_for_status()
            return _openrouter_window(response.json(), model_name)
    except Exception:
        _log.debug("context-window discovery failed", exc_info=True)
        # Connection refused, timeouts, HTTP errors and bad JSON all mean "unknown".
        return None
