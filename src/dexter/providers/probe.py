"""Which server is behind a base URL, and what window it runs the model at: asked once.

A user points Dexter at a base URL and a model name; the server behind it (llama.cpp, vLLM,
Ollama, LM Studio, LiteLLM or something else) decides what a request may look like and how big
the window really is. `probe_server` asks the server itself, with the few cheap reads each kind
answers: the model listing (`GET {base}/models`) and its response headers identify most of them,
then one kind-specific read gives the window:

- llama.cpp's `llama-server`: a `Server: llama.cpp` header, `owned_by: "llamacpp"`;
  `GET /props` -> `default_generation_settings.n_ctx`.
- llama-cpp-python: `owned_by: "me"` with a `permissions` list; it states no window anywhere
  (the first overflow refusal states it, and the wire module learns it from there).
- vLLM: `owned_by: "vllm"` and `max_model_len` in the listing itself.
- LM Studio: `owned_by: "organization_owner"`; `GET /api/v1/models` -> the loaded instance's
  `config.context_length` (0.4+), else `GET /api/v0/models/{model}` -> `max_context_length`.
- Ollama: `owned_by: "library"` (or the provider is Ollama); `POST /api/show` -> the model's
  `*.context_length` or its `num_ctx`.
- LiteLLM: an `x-litellm-*` response header, or an answer from `GET /model/info` ->
  `model_info.max_input_tokens`.
- OpenAI's own API behind a gateway: `owned_by: "openai"` or `"system"` (and no LiteLLM answer):
  OpenAI's dialect, whose reasoning models refuse `max_tokens`.

Every failure means "not known": a probe improves a run, it never fails one. `ProbeCache` keeps
answers on disk under DEXTER_HOME for a day, keyed by base URL and model, so only the first run
against a server pays for the probe.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from dexter.models.profile import SERVER_KINDS, ServerKind
from dexter.providers.discovery import ollama_root, ollama_window, positive_int

if TYPE_CHECKING:
    import httpx2

_log = logging.getLogger(__name__)

PROBE_TIMEOUT = 3.0
# Says in a server's log what the few extra reads are (and lets test servers tell them apart).
PROBE_USER_AGENT = "dexter-py (server probe)"
CACHE_TTL_SECONDS = 24 * 3600
CACHE_FILE = Path("cache") / "server-profiles.json"


@dataclass(frozen=True, slots=True)
class ServerReport:
    """What one probe found out.

    `models` is the server's listing (None: it has none, or could not be asked); `evidence` says
    what identified the kind, for `dexter doctor`; `problem` is set when the server could not be
    reached or refused the key, which every model call would then do too.
    """

    kind: ServerKind | None = None
    context_window: int | None = None
    models: tuple[str, ...] | None = None
    evidence: str = ""
    problem: str | None = None

    def serves(self, model: str) -> bool | None:
        """Whether the listing has `model` (None: there is no listing to tell)."""
        if not self.models:
            return None
        return model in self.models

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "context_window": self.context_window,
            "models": list(self.models) if self.models is not None else None,
            "evidence": self.evidence,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServerReport | None:
        kind = data.get("kind")
        models = data.get("models")
        if kind is not None and kind not in SERVER_KINDS:
            return None
        return cls(
            kind=kind,
            context_window=positive_int(data.get("context_window")),
            models=tuple(str(m) for m in models) if isinstance(models, list) else None,
            evidence=str(data.get("evidence") or ""),
        )


def _root(base_url: str) -> str:
    return ollama_root(base_url)


def _entry_for(listing: object, model: str) -> Mapping[str, Any] | None:
    """The listing's entry for `model`, else its first (single-model servers answer any name)."""
    data = listing.get("data") if isinstance(listing, Mapping) else None
    entries = [e for e in data if isinstance(e, Mapping)] if isinstance(data, list) else []
    for entry in entries:
        if entry.get("id") == model:
            return entry
    return entries[0] if entries else None


def _model_ids(listing: object) -> tuple[str, ...] | None:
    data = listing.get("data") if isinstance(listing, Mapping) else None
    if not isinstance(data, list):
        # Ollama's native listing (`{"models": [{"name": …}]}`) is never asked for here.
        return None
    return tuple(str(e["id"]) for e in data if isinstance(e, Mapping) and "id" in e)


def classify_listing(
    listing: object, headers: Mapping[str, str], model: str
) -> tuple[ServerKind | None, int | None, str]:
    """(kind, window the listing states, evidence) from a model listing and its headers."""
    server = headers.get("server", "")
    if "llama.cpp" in server.lower():
        return "llamacpp", None, "Server header: llama.cpp"
    litellm = sorted(name for name in headers if name.lower().startswith("x-litellm"))
    if litellm:
        return "litellm", None, f"{litellm[0]} header"
    entry = _entry_for(listing, model) or {}
    owner = str(entry.get("owned_by") or "")
    max_model_len = positive_int(entry.get("max_model_len"))
    if owner == "vllm" or max_model_len:
        return "vllm", max_model_len, "max_model_len in the model listing"
    if owner == "llamacpp":
        return "llamacpp", None, 'owned_by "llamacpp" in the model listing'
    if owner == "organization_owner":
        return "lmstudio", None, 'owned_by "organization_owner" in the model listing'
    if owner in ("library", "ollama"):
        return "ollama", None, f'owned_by "{owner}" in the model listing'
    if owner == "me" and "permissions" in entry:
        return "llamacpp", None, 'owned_by "me" in the model listing (llama-cpp-python)'
    if owner in ("openai", "system", "openai-internal"):
        # OpenAI's own listing, through a gateway of the user's; LiteLLM lists models the same
        # way, which `GET /model/info` tells apart.
        return "openai", None, f'owned_by "{owner}" in the model listing'
    return None, None, ""


async def probe_server(
    base_url: str,
    model: str,
    *,
    api_key: str | None,
    protocol: str = "openai",
    hint: ServerKind | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> ServerReport:
    """Ask the server at `base_url` what it is and what window it runs `model` at.

    `hint` is a kind already known from the provider (Ollama's own provider) and is used when
    the listing says nothing better. Never raises for anything the server does.
    """
    import httpx2

    headers: dict[str, str] = {"user-agent": PROBE_USER_AGENT}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
        if protocol == "anthropic":
            from dexter.models.anthropic_messages import API_VERSION

            headers |= {"x-api-key": api_key, "anthropic-version": API_VERSION}
    base = base_url.rstrip("/")
    listing_url = base + ("/v1/models" if protocol == "anthropic" else "/models")
    from dexter.httpclient import async_client

    async with async_client(
        headers=headers, timeout=PROBE_TIMEOUT, transport=transport, follow_redirects=True
    ) as client:
        try:
            response = await client.get(listing_url)
        except httpx2.HTTPError as error:
            return ServerReport(
                kind=hint, problem=f"could not reach {listing_url} ({type(error).__name__})"
            )
        if response.status_code in (401, 403):
            return ServerReport(
                kind=hint, problem=f"{listing_url} refused the key (HTTP {response.status_code})"
            )
        listing = _json(response) if response.is_success else None
        kind, window, evidence = classify_listing(listing, response.headers, model)
        if kind is None and hint is not None:
            kind, evidence = hint, "the provider's own kind"
        if window is None:
            found, window = await _window_of(client, _root(base), model, kind)
            if found is not None and found != kind:
                kind, evidence = found, "GET /model/info answered (LiteLLM)"
    return ServerReport(
        kind=kind, context_window=window, models=_model_ids(listing), evidence=evidence
    )


async def _window_of(
    client: httpx2.AsyncClient, root: str, model: str, kind: ServerKind | None
) -> tuple[ServerKind | None, int | None]:
    """(kind found on the way, window) from the one read that kind answers."""
    if kind == "llamacpp":
        props = await _get_json(client, root + "/props")
        settings = props.get("default_generation_settings") if isinstance(props, Mapping) else None
        window = positive_int(_get(settings, "n_ctx")) or positive_int(_get(props, "n_ctx"))
        return None, window
    if kind == "lmstudio":
        return None, await _lmstudio_window(client, root, model)
    if kind == "ollama":
        return None, ollama_window(await _post_json(client, root + "/api/show", {"model": model}))
    if kind in (None, "litellm", "openai"):
        info = await _get_json(client, root + "/model/info")
        found = _litellm_model(info, model)
        if found is None:
            return None, None
        limits = _get(found, "model_info")
        window = positive_int(_get(limits, "max_input_tokens")) or positive_int(
            _get(limits, "max_tokens")
        )
        return "litellm", window
    return None, None


async def _lmstudio_window(client: httpx2.AsyncClient, root: str, model: str) -> int | None:
    """LM Studio loads a model at a context length of its own choosing (4,096 unless set),
    usually far below what the model supports: the loaded instance's length is the window."""
    native = await _get_json(client, root + "/api/v1/models")
    models = _get(native, "models")
    for entry in models if isinstance(models, list) else ():
        instances = _get(entry, "loaded_instances")
        instances = instances if isinstance(instances, list) else []
        if _get(entry, "key") != model and not any(_get(i, "id") == model for i in instances):
            continue
        for instance in instances:
            window = positive_int(_get(_get(instance, "config"), "context_length"))
            if window:
                return window
        return positive_int(_get(entry, "max_context_length"))
    # LM Studio before 0.4 has only the v0 API, which knows the model's maximum.
    info = await _get_json(client, f"{root}/api/v0/models/{quote(model, safe='')}")
    return positive_int(_get(info, "loaded_context_length")) or positive_int(
        _get(info, "max_context_length")
    )


def _litellm_model(info: object, model: str) -> Mapping[str, Any] | None:
    """LiteLLM's `/model/info` entry for `model` (entries carry `model_name` and
    `litellm_params`, which nothing else answers with)."""
    data = _get(info, "data")
    entries = [e for e in data if isinstance(e, Mapping)] if isinstance(data, list) else []
    if not any("litellm_params" in e for e in entries):
        return None
    for entry in entries:
        if entry.get("model_name") == model:
            return entry
    return {}


def _get(obj: object, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else None


def _json(response: httpx2.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None


async def _get_json(client: httpx2.AsyncClient, url: str) -> object:
    import httpx2

    try:
        response = await client.get(url)
    except httpx2.HTTPError:
        _log.debug("probe %s failed", url, exc_info=True)
        return None
    return _json(response) if response.is_success else None


async def _post_json(client: httpx2.AsyncClient, url: str, body: Mapping[str, Any]) -> object:
    import httpx2

    try:
        response = await client.post(url, json=dict(body))
    except httpx2.HTTPError:
        _log.debug("probe %s failed", url, exc_info=True)
        return None
    return _json(response) if response.is_success else None


# ---- the cache -----------------------------------------------------------------------------


class ProbeCache:
    """Probe answers under DEXTER_HOME, one per base URL and model, trusted for `ttl` seconds.

    Reads and writes are small and synchronous: callers on the event loop run them in a thread.
    A damaged file is treated as empty (and rewritten by the next probe).
    """

    def __init__(self, home: Path, *, ttl: float = CACHE_TTL_SECONDS) -> None:
        self.path = home / CACHE_FILE
        self.ttl = ttl

    @staticmethod
    def key(base_url: str, model: str) -> str:
        return f"{base_url.rstrip('/')} {model}"

    def _entries(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, base_url: str, model: str, *, now: float | None = None) -> ServerReport | None:
        entry = self._entries().get(self.key(base_url, model))
        if not isinstance(entry, dict):
            return None
        at = entry.get("at")
        now = time.time() if now is None else now
        if not isinstance(at, int | float) or now - at > self.ttl or at > now:
            return None
        return ServerReport.from_json(entry)

    def put(
        self, base_url: str, model: str, report: ServerReport, *, now: float | None = None
    ) -> None:
        from dexter.atomicfile import PRIVATE, private_dir, write_json

        entries = self._entries()
        entries[self.key(base_url, model)] = {
            **report.to_json(),
            "at": time.time() if now is None else now,
        }
        try:
            private_dir(self.path.parent)
            write_json(self.path, entries, sort_keys=True, mode=PRIVATE)
        except OSError:
            # A read-only or full home costs a probe next time, nothing more.
            _log.debug("could not write %s", self.path, exc_info=True)


__all__ = [
    "CACHE_TTL_SECONDS",
    "PROBE_TIMEOUT",
    "PROBE_USER_AGENT",
    "ProbeCache",
    "ServerReport",
    "classify_listing",
    "probe_server",
]
