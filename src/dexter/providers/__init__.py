"""Providers: endpoint, auth, context window and quirks, separate from the wire protocols.

`resolve_model("provider:model", settings)` says where and how a model is reached;
`build_model` turns that into a `dexter.models.Model`. The SDK-backed model modules are imported
only when a model is built, so importing this package stays cheap.
"""

from dexter.providers.registry import (
    BUILTIN_PROVIDERS,
    CatalogModel,
    ProviderSpec,
    WireProtocol,
    provider_table,
)
from dexter.providers.resolve import (
    DEFAULT_MODEL_SPEC,
    MODEL_SOURCE_LABELS,
    ProviderStatus,
    ResolvedModel,
    build_model,
    fast_model_spec,
    list_providers,
    missing_key_message,
    normalize_ollama_url,
    resolve_model,
    selected_model_spec,
    split_model_spec,
)

__all__ = [
    "BUILTIN_PROVIDERS",
    "DEFAULT_MODEL_SPEC",
    "MODEL_SOURCE_LABELS",
    "CatalogModel",
    "ProviderSpec",
    "ProviderStatus",
    "ResolvedModel",
    "WireProtocol",
    "build_model",
    "fast_model_spec",
    "list_providers",
    "missing_key_message",
    "normalize_ollama_url",
    "provider_table",
    "resolve_model",
    "selected_model_spec",
    "split_model_spec",
]
