"""Provider specs: where a model is reached, how it authenticates, and its quirks, as data.

A provider is not a wire protocol: Google, xAI, DeepSeek, Moonshot, OpenRouter, Ollama and any
user-declared server all speak the OpenAI chat-completions protocol at different base URLs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from dexter.config import ConfigError, Settings

if TYPE_CHECKING:
    from dexter.settings_model import ProfileOverride, ProviderOverride

WireProtocol = Literal["openai", "anthropic"]
PROTOCOLS: tuple[WireProtocol, ...] = ("openai", "anthropic")


@dataclass(frozen=True, slots=True)
class CatalogModel:
    """A model offered in pickers and listed by `dexter doctor`."""

    id: str
    label: str


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    id: str
    display_name: str
    protocol: WireProtocol
    default_base_url: str
    base_url_env: str | None
    api_key_env: str | None
    key_required: bool
    # Bare model names starting with this go to this provider (`claude-sonnet-4-6` -> anthropic),
    # as in the original. Prefixes ending in ":" are just the `provider:` form and kept for docs.
    legacy_prefix: str | None
    context_window: int
    # Name of the non-standard assistant-message field that carries reasoning text.
    reasoning_field: str | None = None
    default_model: str | None = None
    fast_model: str | None = None
    models: tuple[CatalogModel, ...] = ()
    # Per-model windows where they differ from the provider-wide `context_window`.
    model_context_windows: Mapping[str, int] = field(default_factory=dict)
    # Extra JSON merged into every chat request for these models (provider quirks).
    model_extra_body: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout: float = 600.0
    max_output_tokens: int | None = None
    thinking_budget: int | None = None
    # An explicit key from settings.json (discouraged, but supported); env vars win over it.
    settings_api_key: str | None = field(default=None, repr=False)
    custom: bool = False
    # Whether `context_window` was written in the settings (it then beats a probed window).
    context_window_set: bool = False
    # The settings' `profile`: the server's quirks as the user states them (over a probe's).
    profile_override: ProfileOverride | None = None

    def configured_window(self, model_name: str) -> int | None:
        """The window the settings give for `model_name`, if they give one."""
        if model_name in self.model_context_windows:
            return self.model_context_windows[model_name]
        return self.context_window if self.context_window_set else None

    def context_window_for(self, model_name: str) -> int:
        return self.model_context_windows.get(model_name, self.context_window)

    def extra_body_for(self, model_name: str) -> dict[str, Any] | None:
        body = {**self.model_extra_body.get(model_name, {}), **self.extra_body}
        return body or None


# DeepSeek V4 models only reason (and return reasoning_content) when thinking is switched on.
_DEEPSEEK_THINKING: Mapping[str, Any] = {
    "thinking": {"type": "enabled"},
    "reasoning_effort": "high",
}

BUILTIN_PROVIDERS: tuple[ProviderSpec, ...] = (
    ProviderSpec(
        id="openai",
        display_name="OpenAI",
        protocol="openai",
        default_base_url="https://api.openai.com/v1",
        base_url_env="OPENAI_BASE_URL",
        api_key_env="OPENAI_API_KEY",
        key_required=True,
        legacy_prefix=None,
        context_window=1_047_576,
        default_model="gpt-5.6-sol",
        fast_model="gpt-5.6-luna",
        models=(
            CatalogModel("gpt-5.6-sol", "GPT 5.6 Sol"),
            CatalogModel("gpt-5.6-terra", "GPT 5.6 Terra"),
            CatalogModel("gpt-5.6-luna", "GPT 5.6 Luna"),
        ),
    ),
    ProviderSpec(
        id="anthropic",
        display_name="Anthropic",
        protocol="anthropic",
        default_base_url="https://api.anthropic.com",
        base_url_env="ANTHROPIC_BASE_URL",
        api_key_env="ANTHROPIC_API_KEY",
        key_required=True,
        legacy_prefix="claude-",
        context_window=200_000,
        default_model="claude-sonnet-4-6",
        fast_model="claude-haiku-4-5",
        models=(
            CatalogModel("claude-sonnet-4-6", "Sonnet 4.6"),
            CatalogModel("claude-opus-4-8", "Opus 4.8"),
            CatalogModel("claude-fable-5", "Fable 5"),
        ),
    ),
    ProviderSpec(
        id="google",
        display_name="Google",
        protocol="openai",
        default_base_url="https://generativelanguage.googleapis.com/v1beta/openai",
        base_url_env="GOOGLE_BASE_URL",
        api_key_env="GOOGLE_API_KEY",
        key_required=True,
        legacy_prefix="gemini-",
        context_window=1_000_000,
        default_model="gemini-3-flash-preview",
        fast_model="gemini-3-flash-preview",
        models=(
            CatalogModel("gemini-3-flash-preview", "Gemini 3 Flash"),
            CatalogModel("gemini-3.1-pro-preview", "Gemini 3.1 Pro"),
        ),
    ),
    ProviderSpec(
        id="xai",
        display_name="xAI",
        protocol="openai",
        default_base_url="https://api.x.ai/v1",
        base_url_env="XAI_BASE_URL",
        api_key_env="XAI_API_KEY",
        key_required=True,
        legacy_prefix="grok-",
        context_window=131_072,
        default_model="grok-4-0709",
        fast_model="grok-4-1-fast-reasoning",
        models=(
            CatalogModel("grok-4-0709", "Grok 4"),
            CatalogModel("grok-4-1-fast-reasoning", "Grok 4.1 Fast Reasoning"),
        ),
    ),
    ProviderSpec(
        id="moonshot",
        display_name="Moonshot",
        protocol="openai",
        default_base_url="https://api.moonshot.ai/v1",
        base_url_env="MOONSHOT_BASE_URL",
        api_key_env="MOONSHOT_API_KEY",
        key_required=True,
        legacy_prefix="kimi-",
        context_window=131_072,
        reasoning_field="reasoning_content",
        default_model="kimi-k2-5",
        fast_model="kimi-k2-5",
        models=(CatalogModel("kimi-k2-5", "Kimi K2.5"),),
    ),
    ProviderSpec(
        id="deepseek",
        display_name="DeepSeek",
        protocol="openai",
        default_base_url="https://api.deepseek.com",
        base_url_env="DEEPSEEK_BASE_URL",
        api_key_env="DEEPSEEK_API_KEY",
        key_required=True,
        legacy_prefix="deepseek-",
        context_window=1_000_000,
        reasoning_field="reasoning_content",
        default_model="deepseek-v4-pro",
        fast_model="deepseek-v4-flash",
        models=(
            CatalogModel("deepseek-v4-pro", "DeepSeek V4 Pro"),
            CatalogModel("deepseek-v4-flash", "DeepSeek V4 Flash"),
        ),
        model_extra_body={
            "deepseek-v4-pro": _DEEPSEEK_THINKING,
            "deepseek-v4-flash": _DEEPSEEK_THINKING,
        },
    ),
    ProviderSpec(
        id="openrouter",
        display_name="OpenRouter",
        protocol="openai",
        default_base_url="https://openrouter.ai/api/v1",
        base_url_env="OPENROUTER_BASE_URL",
        api_key_env="OPENROUTER_API_KEY",
        key_required=True,
        legacy_prefix="openrouter:",
        # One figure for every routed model; override per model with contextWindows in settings.
        context_window=128_000,
        reasoning_field="reasoning",
        fast_model="openai/gpt-4o-mini",
    ),
    ProviderSpec(
        id="ollama",
        display_name="Ollama",
        protocol="openai",
        default_base_url="http://localhost:11434/v1",
        base_url_env="OLLAMA_BASE_URL",
        api_key_env=None,
        key_required=False,
        legacy_prefix="ollama:",
        # Ollama truncates silently at the model's num_ctx instead of erroring, so for small local
        # models set providers.ollama.contextWindows in settings.json to the real figure.
        context_window=128_000,
        reasoning_field="reasoning",
    ),
    ProviderSpec(
        id="ollama-cloud",
        display_name="Ollama Cloud",
        protocol="openai",
        default_base_url="https://ollama.com/v1",
        base_url_env="OLLAMA_CLOUD_BASE_URL",
        api_key_env="OLLAMA_CLOUD_API_KEY",
        key_required=True,
        legacy_prefix="ollama-cloud:",
        context_window=128_000,
        reasoning_field="reasoning",
    ),
)

BUILTIN_IDS = frozenset(spec.id for spec in BUILTIN_PROVIDERS)
DEFAULT_PROVIDER_ID = "openai"

_PROVIDER_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def closest_provider(typed: str, names: Iterable[str]) -> str | None:
    """The provider id (or key variable) among `names` that `typed` is a typo of, or None: the
    one did-you-mean that `--model`, `/model`, `models default` and `keys set` all give."""
    import difflib

    choices = {name.lower(): name for name in names}
    close = difflib.get_close_matches(typed.strip().lower(), list(choices), n=1, cutoff=0.75)
    return choices[close[0]] if close else None


def _error(provider_id: str, settings: Settings, problem: str) -> ConfigError:
    return ConfigError(f"providers.{provider_id} in {settings.settings_path}: {problem}.")


def _apply_overrides(
    base: ProviderSpec, o: ProviderOverride, provider_id: str, settings: Settings
) -> ProviderSpec:
    changes: dict[str, Any] = {}
    if o.protocol is not None and o.protocol != base.protocol:
        if not base.custom:
            raise _error(
                provider_id,
                settings,
                f'{base.display_name} speaks "{base.protocol}"; "protocol" cannot change',
            )
        changes["protocol"] = o.protocol
    simple: list[tuple[str, Any]] = [
        ("display_name", o.display_name),
        ("default_base_url", o.base_url),
        ("base_url_env", o.base_url_env),
        ("api_key_env", o.api_key_env),
        ("settings_api_key", o.api_key),
        ("key_required", o.key_required),
        ("context_window", o.context_window),
        ("default_model", o.default_model),
        ("fast_model", o.fast_model),
        ("timeout", o.timeout),
        ("max_output_tokens", o.max_output_tokens),
        ("thinking_budget", o.thinking_budget),
    ]
    for attr, value in simple:
        if value is not None:
            changes[attr] = value
    if o.context_window is not None:
        changes["context_window_set"] = True
    if o.profile is not None:
        changes["profile_override"] = o.profile
    if "reasoning_field" in o.model_fields_set:
        # null is meaningful here: it switches off reading a reasoning field.
        changes["reasoning_field"] = (o.reasoning_field or "").strip() or None
    if o.context_windows is not None:
        changes["model_context_windows"] = {**base.model_context_windows, **o.context_windows}
    if o.extra_body is not None:
        changes["extra_body"] = {**base.extra_body, **o.extra_body}
    if o.headers is not None:
        changes["headers"] = {**base.headers, **o.headers}
    if o.models is not None:
        changes["models"] = tuple(CatalogModel(m, m) for m in o.models)
    return replace(base, **changes)


def _custom_base(provider_id: str, o: ProviderOverride, settings: Settings) -> ProviderSpec:
    if not _PROVIDER_ID.match(provider_id) or ":" in provider_id:
        raise _error(
            provider_id,
            settings,
            "provider ids may use only lowercase letters, digits, '.', '_' and '-' "
            "(they are written before the ':' in --model id:model)",
        )
    if o.base_url is None and o.base_url_env is None:
        raise _error(
            provider_id,
            settings,
            'a custom provider needs "baseUrl" (e.g. "http://localhost:8000/v1") or "baseUrlEnv"',
        )
    has_key = o.api_key_env is not None or o.api_key is not None
    return ProviderSpec(
        id=provider_id,
        display_name=provider_id,
        protocol=o.protocol or "openai",
        default_base_url="",
        base_url_env=None,
        api_key_env=o.api_key_env,
        # Local servers (vLLM, LM Studio, llama.cpp) usually need no key; if the user named one,
        # a missing value is almost certainly a mistake worth stopping for.
        key_required=has_key,
        legacy_prefix=None,
        context_window=128_000,
        custom=True,
    )


def provider_table(settings: Settings) -> dict[str, ProviderSpec]:
    """Built-in providers with the user's settings applied, then user-declared ones, by id."""
    table = {spec.id: spec for spec in BUILTIN_PROVIDERS}
    from dexter.settings_model import ProvidersSettings

    for provider_id, override in settings.section(ProvidersSettings).entries.items():
        base = table.get(provider_id) or _custom_base(provider_id, override, settings)
        table[provider_id] = _apply_overrides(base, override, provider_id, settings)
    return table
