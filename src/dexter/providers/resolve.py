"""Turn a model spec ("provider:model" or a bare name) into an endpoint, a key and a Model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dexter.config import ConfigError, Settings, get_secret, is_placeholder
from dexter.keystore import stored_key
from dexter.providers.registry import (
    BUILTIN_PROVIDERS,
    DEFAULT_PROVIDER_ID,
    ProviderSpec,
    WireProtocol,
    closest_provider,
    provider_table,
)

if TYPE_CHECKING:
    from dexter.models.base import Model

DEFAULT_MODEL_SPEC = "openai:gpt-5.6-sol"

# Sent as the key to providers that need none. Passing None would make the SDKs fall back to
# OPENAI_API_KEY / ANTHROPIC_API_KEY from the process environment and send the user's real key to
# a local or third-party server.
NO_KEY = "no-key-required"

MODEL_SOURCE_LABELS = {
    "argument": "--model flag",
    "flag": "--model flag",
    "env": "DEXTER_MODEL environment variable",
    "dotenv": "DEXTER_MODEL in .env",
    "settings": "settings file",
    "default": "built-in default",
}


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    provider: ProviderSpec
    model_name: str
    base_url: str
    api_key: str | None = field(repr=False)
    context_window: int
    # Where base_url and api_key came from: "default", "settings", or "env NAME".
    base_url_source: str = "default"
    api_key_source: str | None = None

    @property
    def spec(self) -> str:
        """Canonical "provider:model", which resolves back to this same model."""
        return f"{self.provider.id}:{self.model_name}"

    @property
    def protocol(self) -> WireProtocol:
        return self.provider.protocol

    @property
    def reasoning_field(self) -> str | None:
        return self.provider.reasoning_field

    @property
    def extra_body(self) -> dict[str, Any] | None:
        return self.provider.extra_body_for(self.model_name)

    @property
    def key_usable(self) -> bool:
        """Whether a call can be made: a key is there, none is needed, or a vendor's provider
        was pointed at the user's own server on this machine or network (OPENAI_BASE_URL at
        llama.cpp: such servers need no key, and OpenAI's must not be demanded for them). A
        provider of the user's own that names a key variable still needs it."""
        return (
            self.api_key is not None
            or not self.provider.key_required
            or _local_override(self.provider, self.base_url_source, self.base_url)
        )


def _local_override(provider: ProviderSpec, base_url_source: str, base_url: str) -> bool:
    """Whether a vendor's provider was pointed at a server on this machine or network."""
    from dexter.providers.profiles import is_local_url

    return not provider.custom and base_url_source != "default" and is_local_url(base_url)


@dataclass(frozen=True, slots=True)
class ProviderStatus:
    """What `dexter doctor` and pickers show about a provider. Never holds the key itself."""

    id: str
    display_name: str
    protocol: WireProtocol
    base_url: str
    base_url_overridden: bool
    base_url_source: str
    api_key_env: str | None
    key_required: bool
    key_present: bool
    key_source: str | None
    context_window: int
    default_model: str | None
    custom: bool
    # A configuration problem specific to this provider (e.g. its base URL env var is unset).
    error: str | None = None

    @property
    def usable(self) -> bool:
        return self.error is None and (self.key_present or not self.key_required)


def selected_model_spec(spec: str | None, settings: Settings) -> tuple[str, str]:
    """The spec to use and where it came from (a key of MODEL_SOURCE_LABELS)."""
    if spec is not None and spec.strip():
        return spec.strip(), "argument"
    if settings.model:
        return settings.model, settings.model_source
    from_env = settings.env.get("DEXTER_MODEL", "").strip()
    if from_env:
        return from_env, "env"
    return DEFAULT_MODEL_SPEC, "default"


def _known_ids(table: dict[str, ProviderSpec]) -> str:
    return ", ".join(table)


def split_model_spec(spec: str, table: dict[str, ProviderSpec]) -> tuple[ProviderSpec, str]:
    """Pick the provider for `spec` and return it with the provider-local model name.

    An explicit known `provider:` always wins, so `openai:claude-x` goes to OpenAI and the model
    part may contain colons (`ollama:llama3.1:8b`). Bare names use the original's prefixes.
    """
    text = spec.strip()
    if not text:
        raise ConfigError("The model name is empty. Use provider:model, e.g. openai:gpt-5.6-sol.")
    head, sep, tail = text.partition(":")
    if sep:
        provider = table.get(head.strip().lower())
        if provider is not None:
            model = tail.strip()
            if model:
                return provider, model
            return provider, _default_model(provider)
        # OpenAI fine-tunes are named "ft:base:org:suffix:id"; they are bare names, not providers.
        if head == "ft":
            return table[DEFAULT_PROVIDER_ID], text
        meant = closest_provider(head, table)
        if meant is not None:
            corrected = f"{meant}:{tail.strip()}" if tail.strip() else meant
            raise ConfigError(
                f"Unknown provider {head!r} in model {text!r}. Did you mean {corrected}? "
                f"Known providers: {_known_ids(table)}."
            )
        hint = ""
        if any(ch.isdigit() or ch in ".-" for ch in head):
            hint = f" For a local Ollama model, use ollama:{text}."
        raise ConfigError(
            f"Unknown provider {head!r} in model {text!r}. Known providers: {_known_ids(table)}. "
            f"Write provider:model, e.g. anthropic:claude-sonnet-4-6.{hint}"
        )
    lowered = text.lower()
    if lowered in table:
        # A provider id on its own means that provider's default model (`--model anthropic`).
        provider = table[lowered]
        return provider, _default_model(provider)
    for provider in BUILTIN_PROVIDERS:
        prefix = provider.legacy_prefix
        if prefix and not prefix.endswith(":") and lowered.startswith(prefix):
            return table[provider.id], text
    meant = closest_provider(lowered, table) if lowered.isalpha() else None
    if meant is not None and not _catalogued(lowered, table):
        # `--model antropic` is a typo of a provider, not an OpenAI model named "antropic".
        raise ConfigError(
            f"Unknown model {text!r}: no provider is called that. Did you mean {meant!r} (its "
            f"default model), or {meant}:MODEL? Known providers: {_known_ids(table)}."
        )
    return table[DEFAULT_PROVIDER_ID], text


def _catalogued(name: str, table: dict[str, ProviderSpec]) -> bool:
    return any(name == m.id.lower() for spec in table.values() for m in spec.models)


def _default_model(provider: ProviderSpec) -> str:
    if provider.default_model:
        return provider.default_model
    example = "llama3.1:8b" if provider.id.startswith("ollama") else "vendor/model-name"
    raise ConfigError(
        f"{provider.display_name} has no default model; name one, e.g. {provider.id}:{example}."
    )


def normalize_ollama_url(url: str) -> str:
    """Ollama's OpenAI-compatible root, whether OLLAMA_BASE_URL was given with `/v1` or not.

    People copy the native URL (`http://host:11434`, sometimes `/api`) from Ollama's own docs, and
    a bare `host:port` as in OLLAMA_HOST.
    """
    text = url.strip().rstrip("/")
    if "://" not in text:
        text = "http://" + text
    if text.endswith("/api"):
        text = text[: -len("/api")]
    if not text.endswith("/v1"):
        text += "/v1"
    return text


def _check_url(url: str, source: str, provider: ProviderSpec) -> str:
    if provider.id in ("ollama", "ollama-cloud"):
        url = normalize_ollama_url(url)
    cleaned = url.strip().rstrip("/")
    if not cleaned.startswith(("http://", "https://")) or len(cleaned.split("://", 1)[1]) == 0:
        raise ConfigError(
            f"Base URL {url!r} for {provider.display_name} (from {source}) must start with "
            "http:// or https://."
        )
    return cleaned


def _base_url(provider: ProviderSpec, settings: Settings) -> tuple[str, str]:
    if provider.base_url_env:
        from_env = settings.env.get(provider.base_url_env, "").strip()
        if from_env:
            source = f"env {provider.base_url_env}"
            return _check_url(from_env, source, provider), source
    builtin = next((b for b in BUILTIN_PROVIDERS if b.id == provider.id), None)
    if provider.default_base_url:
        source = (
            "default"
            if builtin is not None and provider.default_base_url == builtin.default_base_url
            else "settings"
        )
        return _check_url(provider.default_base_url, source, provider), source
    # Only a custom provider declared with baseUrlEnv alone can get here.
    raise ConfigError(
        f"{provider.base_url_env} is not set, and provider {provider.id!r} has no baseUrl in the "
        "settings file. Set one of them."
    )


def _api_key(provider: ProviderSpec, settings: Settings) -> tuple[str | None, str | None]:
    if provider.api_key_env:
        value = get_secret(settings, provider.api_key_env)
        if value is not None:
            return value, f"env {provider.api_key_env}"
        stored = stored_key(settings.home, provider.api_key_env)
        if stored is not None and not is_placeholder(stored):
            return stored, f"keys {provider.api_key_env}"
    if provider.settings_api_key and not is_placeholder(provider.settings_api_key):
        return provider.settings_api_key, "settings"
    return None, None


def resolve_model(spec: str | None, settings: Settings) -> ResolvedModel:
    """Resolve `spec` (None or empty: settings.model, DEXTER_MODEL, then the default).

    Does not check that a required key is present; `build_model` does, so that `dexter doctor`
    can still describe a provider whose key is missing.
    """
    table = provider_table(settings)
    text, _source = selected_model_spec(spec, settings)
    provider, model_name = split_model_spec(text, table)
    base_url, base_url_source = _base_url(provider, settings)
    api_key, api_key_source = _api_key(provider, settings)
    return ResolvedModel(
        provider=provider,
        model_name=model_name,
        base_url=base_url,
        api_key=api_key,
        context_window=provider.context_window_for(model_name),
        base_url_source=base_url_source,
        api_key_source=api_key_source,
    )


def missing_key_message(provider: ProviderSpec, settings: Settings) -> str:
    """What to do when `provider` needs a key and has none usable."""
    env_name = provider.api_key_env
    if env_name is None:
        return (
            f'No API key for provider {provider.id!r}: add "apiKeyEnv" (or "apiKey") to '
            f'providers.{provider.id} in {settings.settings_path}, or set "keyRequired": false.'
        )
    raw = settings.env.get(env_name)
    problem = (
        f"{env_name} holds a placeholder value, not a real key"
        if raw is not None and raw.strip()
        else f"{env_name} is not set"
    )
    return (
        f"{problem}. Set it in your environment or .env, store it with `dexter keys set "
        f"{provider.id}`, or choose another provider with --model (see `dexter doctor`)."
    )


def build_model(spec: str | None, settings: Settings) -> Model:
    """Resolve `spec` and construct the wire-protocol model for it.

    Raises ConfigError for unknown providers, bad settings and missing keys. The SDK-backed modules
    are imported here, not at module level, so that `dexter --help` stays fast. The model starts
    with the profile its provider and settings give (`static_profile`); a probe of the server
    replaces it later (`use_profile`).
    """
    return build_resolved(resolve_model(spec, settings), settings)


def build_resolved(resolved: ResolvedModel, settings: Settings) -> Model:
    """`build_model` for an already resolved model."""
    from dexter.providers.discovery import context_window
    from dexter.providers.profiles import endpoint_label, static_profile

    provider = resolved.provider
    if not resolved.key_usable:
        raise ConfigError(missing_key_message(provider, settings))
    api_key = resolved.api_key or NO_KEY
    headers = dict(provider.headers) or None
    profile = static_profile(resolved)
    window = context_window(
        provider.id,
        resolved.model_name,
        resolved.context_window,
        overrides=provider.model_context_windows,
    )
    if provider.protocol == "anthropic":
        from dexter.models.anthropic_messages import AnthropicMessagesModel

        return AnthropicMessagesModel(
            resolved.model_name,
            api_key=api_key,
            base_url=resolved.base_url,
            provider=provider.display_name,
            thinking_budget=provider.thinking_budget,
            timeout=provider.timeout,
            default_headers=headers,
            profile=profile,
            context_window=window,
            endpoint_label=endpoint_label(resolved),
        )
    from dexter.models.openai_chat import OpenAIChatModel

    return OpenAIChatModel(
        resolved.model_name,
        api_key=api_key,
        base_url=resolved.base_url,
        provider=provider.display_name,
        reasoning_field=provider.reasoning_field,
        extra_body=resolved.extra_body,
        default_headers=headers,
        timeout=provider.timeout,
        endpoint_label=endpoint_label(resolved),
        profile=profile,
        context_window=window,
    )


def fast_model_spec(resolved: ResolvedModel) -> str:
    """The spec of a cheaper model on the same provider, for summaries and helper calls.

    Falls back to the main model where the provider has no fast model (Ollama, custom servers).
    """
    fast = resolved.provider.fast_model
    return f"{resolved.provider.id}:{fast or resolved.model_name}"


def list_providers(settings: Settings) -> list[ProviderStatus]:
    """Every known provider with the base URL in use and whether a usable key is present."""
    statuses = []
    for provider in provider_table(settings).values():
        error: str | None = None
        try:
            base_url, base_source = _base_url(provider, settings)
        except ConfigError as exc:
            base_url, base_source, error = "", "unset", str(exc)
        key, key_source = _api_key(provider, settings)
        key_required = provider.key_required and not _local_override(
            provider, base_source, base_url
        )
        statuses.append(
            ProviderStatus(
                id=provider.id,
                display_name=provider.display_name,
                protocol=provider.protocol,
                base_url=base_url,
                base_url_overridden=base_source != "default",
                base_url_source=base_source,
                api_key_env=provider.api_key_env,
                key_required=key_required,
                key_present=key is not None,
                key_source=key_source,
                context_window=provider.context_window,
                default_model=provider.default_model,
                custom=provider.custom,
                error=error,
            )
        )
    return statuses
