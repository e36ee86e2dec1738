"""Which `ServerProfile` a resolved model gets: from its provider, a probe and the settings.

Before anything is asked, a provider's own endpoint gets its vendor's profile (OpenAI's,
Anthropic's, Ollama's) and any other base URL the `generic` one, whose choices every server we
know accepts. A probe (`dexter.providers.probe`) then names the server kind and its window; the
settings' `profile` has the last word on each field it states.
"""

from __future__ import annotations

import ipaddress
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from dexter.models.profile import (
    ANTHROPIC,
    GENERIC,
    OPENAI,
    OverflowSignals,
    ServerKind,
    ServerProfile,
    profile_for_kind,
)

if TYPE_CHECKING:
    from dexter.providers.probe import ServerReport
    from dexter.providers.resolve import ResolvedModel
    from dexter.settings_model import ProfileOverride

# Host names that always mean this machine or the local network.
_LOCAL_NAMES = frozenset({"localhost", "host.docker.internal", "host.containers.internal"})


def is_local_url(url: str) -> bool:
    """Whether `url` points at this machine or a private network (loopback, RFC 1918, link-local,
    `*.local`): a server there is the user's own and needs no API key from a vendor."""
    host = (urlsplit(url if "://" in url else "http://" + url).hostname or "").lower()
    if not host:
        return False
    if host in _LOCAL_NAMES or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def uses_own_endpoint(resolved: ResolvedModel) -> bool:
    """Whether the model is reached at its provider's own endpoint (not a user's base URL)."""
    return resolved.base_url_source == "default" and not resolved.provider.custom


def endpoint_label(resolved: ResolvedModel) -> str | None:
    """Who error messages name: None (the provider's name) at its own endpoint; otherwise the
    server the user configured ("the server at 127.0.0.1:8080"), which is not OpenAI even when
    reached through OPENAI_BASE_URL."""
    if uses_own_endpoint(resolved):
        return None
    host = urlsplit(resolved.base_url).netloc or resolved.base_url
    return f"the server at {host}"


def _vendor_kind(resolved: ResolvedModel) -> ServerKind | None:
    """The kind a provider is by itself: Ollama's (local or cloud) is Ollama wherever it runs."""
    if resolved.provider.id.startswith("ollama"):
        return "ollama"
    return None


def should_probe(resolved: ResolvedModel) -> bool:
    """Whether to ask the server what it is: any base URL of the user's own, and Ollama (whose
    window depends on how the model was loaded); never when the settings say `"probe": false`."""
    override = resolved.provider.profile_override
    if override is not None and not override.probe:
        return False
    return not uses_own_endpoint(resolved) or _vendor_kind(resolved) is not None


def static_profile(resolved: ResolvedModel) -> ServerProfile:
    """The profile before (or without) a probe: the vendor's at its own endpoint, `generic`
    elsewhere, with the settings' `profile` over it."""
    kind = _vendor_kind(resolved)
    if kind is not None:
        base = profile_for_kind(kind)
    elif uses_own_endpoint(resolved):
        base = ANTHROPIC if resolved.protocol == "anthropic" else OPENAI
    else:
        base = GENERIC
    return _with_settings(resolved, base)


def probed_profile(resolved: ResolvedModel, report: ServerReport) -> ServerProfile:
    """The profile once the server answered a probe: its kind's, at the window it stated."""
    if report.kind is None:
        return static_profile(resolved)
    base = replace(profile_for_kind(report.kind), context_window=report.context_window)
    return _with_settings(resolved, base)


def _with_settings(resolved: ResolvedModel, base: ServerProfile) -> ServerProfile:
    provider = resolved.provider
    override = provider.profile_override
    profile = base
    if override is not None:
        if override.server_kind is not None and override.server_kind != base.server_kind:
            profile = replace(
                profile_for_kind(override.server_kind), context_window=base.context_window
            )
        profile = apply_override(profile, override)
    configured = provider.configured_window(resolved.model_name)
    if configured is not None:
        # The user wrote it down for a reason (a server that states none, a smaller budget).
        profile = replace(profile, context_window=configured)
    if provider.max_output_tokens is not None:
        profile = replace(profile, default_output_tokens=provider.max_output_tokens)
    return profile


def apply_override(profile: ServerProfile, override: ProfileOverride) -> ServerProfile:
    """`profile` with every field the settings state replaced (`null` included where it means
    something: `assistantToolCallContent`, `defaultOutputTokens`)."""
    given = override.model_fields_set
    changes: dict[str, object] = {}
    for name in (
        "assistant_tool_call_content",
        "default_output_tokens",
    ):
        if name in given:
            changes[name] = getattr(override, name)
    for name in ("system_as_string", "output_limit_param", "reports_usage_in_stream"):
        value = getattr(override, name)
        if value is not None:
            changes[name] = value
    signals = override.overflow_signals
    if signals is not None:
        current = profile.overflow_signals
        changes["overflow_signals"] = OverflowSignals(
            empty_stream=current.empty_stream
            if signals.empty_stream is None
            else signals.empty_stream,
            statuses=current.statuses if signals.statuses is None else frozenset(signals.statuses),
            phrases=current.phrases + tuple(p.lower() for p in signals.phrases or ()),
            phrases_anywhere=current.phrases_anywhere
            if signals.phrases_anywhere is None
            else signals.phrases_anywhere,
        )
    return replace(profile, **changes)  # type: ignore[arg-type]


__all__ = [
    "apply_override",
    "endpoint_label",
    "is_local_url",
    "probed_profile",
    "should_probe",
    "static_profile",
    "uses_own_endpoint",
]
