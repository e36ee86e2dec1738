from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from dexter.config import ConfigError, Settings, load_settings
from dexter.providers import (
    DEFAULT_MODEL_SPEC,
    build_model,
    fast_model_spec,
    list_providers,
    normalize_ollama_url,
    resolve_model,
)

KEYS = {
    "OPENAI_API_KEY": "sk-openai-test-0001",
    "ANTHROPIC_API_KEY": "sk-ant-test-0002",
    "GOOGLE_API_KEY": "goog-test-0003",
    "XAI_API_KEY": "xai-test-0004",
    "DEEPSEEK_API_KEY": "ds-test-0005",
    "MOONSHOT_API_KEY": "moon-test-0006",
    "OPENROUTER_API_KEY": "or-test-0007",
}


def settings_for(
    tmp_path: Path, environ: dict[str, str] | None = None, file_data: Any = None
) -> Settings:
    if file_data is not None:
        home = tmp_path / ".dexter"
        home.mkdir(exist_ok=True)
        (home / "settings.json").write_text(json.dumps(file_data))
    return load_settings(cwd=tmp_path, environ=environ if environ is not None else KEYS)


@pytest.mark.parametrize(
    ("spec", "provider", "model"),
    [
        ("openai:claude-x", "openai", "claude-x"),
        ("claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6"),
        ("o3", "openai", "o3"),
        ("gpt-5.6-luna", "openai", "gpt-5.6-luna"),
        ("ollama:llama3.1:8b", "ollama", "llama3.1:8b"),
        ("openrouter:anthropic/claude-x", "openrouter", "anthropic/claude-x"),
        ("gemini-3.1-pro-preview", "google", "gemini-3.1-pro-preview"),
        ("grok-4-0709", "xai", "grok-4-0709"),
        ("kimi-k2-5", "moonshot", "kimi-k2-5"),
        ("deepseek-v4-flash", "deepseek", "deepseek-v4-flash"),
        ("anthropic:claude-opus-4-8", "anthropic", "claude-opus-4-8"),
        ("Anthropic:claude-opus-4-8", "anthropic", "claude-opus-4-8"),
        ("ollama-cloud:gpt-oss:120b", "ollama-cloud", "gpt-oss:120b"),
        ("ft:gpt-4o-mini:acme:research:abc123", "openai", "ft:gpt-4o-mini:acme:research:abc123"),
        # A provider id alone, or with nothing after the colon, means its default model.
        ("anthropic", "anthropic", "claude-sonnet-4-6"),
        ("deepseek:", "deepseek", "deepseek-v4-pro"),
        ("  claude-haiku-4-5  ", "anthropic", "claude-haiku-4-5"),
    ],
)
def test_resolution_table(tmp_path: Path, spec: str, provider: str, model: str) -> None:
    resolved = resolve_model(spec, settings_for(tmp_path))
    assert (resolved.provider.id, resolved.model_name) == (provider, model)
    # The canonical spec resolves back to the same thing.
    again = resolve_model(resolved.spec, settings_for(tmp_path))
    assert (again.provider.id, again.model_name) == (provider, model)


def test_builtin_endpoints_and_windows(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    expected = {
        "gpt-5.6-sol": ("https://api.openai.com/v1", 1_047_576, "sk-openai-test-0001"),
        "claude-sonnet-4-6": ("https://api.anthropic.com", 200_000, "sk-ant-test-0002"),
        "gemini-3-flash-preview": (
            "https://generativelanguage.googleapis.com/v1beta/openai",
            1_000_000,
            "goog-test-0003",
        ),
        "grok-4-0709": ("https://api.x.ai/v1", 131_072, "xai-test-0004"),
        "deepseek-v4-pro": ("https://api.deepseek.com", 1_000_000, "ds-test-0005"),
        "kimi-k2-5": ("https://api.moonshot.ai/v1", 131_072, "moon-test-0006"),
        "openrouter:openai/gpt-4o": ("https://openrouter.ai/api/v1", 128_000, "or-test-0007"),
        "ollama:qwen3:8b": ("http://localhost:11434/v1", 128_000, None),
    }
    for spec, (url, window, key) in expected.items():
        resolved = resolve_model(spec, settings)
        assert (resolved.base_url, resolved.context_window, resolved.api_key) == (url, window, key)


def test_default_selection_order(tmp_path: Path) -> None:
    assert resolve_model(None, settings_for(tmp_path)).spec == DEFAULT_MODEL_SPEC
    assert resolve_model("", settings_for(tmp_path)).spec == DEFAULT_MODEL_SPEC
    from_env = settings_for(tmp_path, {**KEYS, "DEXTER_MODEL": "claude-opus-4-8"})
    assert resolve_model(None, from_env).spec == "anthropic:claude-opus-4-8"
    from_file = settings_for(tmp_path, KEYS, {"model": "grok-4-0709"})
    assert resolve_model(None, from_file).spec == "xai:grok-4-0709"
    # An explicit spec beats everything configured.
    assert resolve_model("kimi-k2-5", from_env).spec == "moonshot:kimi-k2-5"
    # Settings built by hand (no load_settings) still honour DEXTER_MODEL.
    manual = Settings(home=tmp_path, env={"DEXTER_MODEL": "ollama:llama3.1:8b"})
    assert resolve_model(None, manual).spec == "ollama:llama3.1:8b"


def test_unknown_provider_lists_valid_ids(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model("opnai:gpt-5.6-sol", settings_for(tmp_path))
    message = str(info.value)
    assert "'opnai'" in message
    for provider_id in ("openai", "anthropic", "ollama", "openrouter"):
        assert provider_id in message


def test_ollama_style_tag_without_prefix_suggests_ollama(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ollama:llama3\.1:8b"):
        resolve_model("llama3.1:8b", settings_for(tmp_path))


def test_provider_without_default_model_needs_a_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ollama:"):
        resolve_model("ollama", settings_for(tmp_path))


def test_base_url_overrides_env_beats_settings(tmp_path: Path) -> None:
    file_data = {"providers": {"openai": {"baseUrl": "https://proxy.example/v1/"}}}
    from_file = settings_for(tmp_path, KEYS, file_data)
    resolved = resolve_model("openai:gpt-5.6-sol", from_file)
    assert (resolved.base_url, resolved.base_url_source) == ("https://proxy.example/v1", "settings")

    env = {**KEYS, "OPENAI_BASE_URL": "http://127.0.0.1:9999/v1"}
    from_env = settings_for(tmp_path, env, file_data)
    resolved = resolve_model("openai:gpt-5.6-sol", from_env)
    assert resolved.base_url == "http://127.0.0.1:9999/v1"
    assert resolved.base_url_source == "env OPENAI_BASE_URL"

    anthropic = resolve_model(
        "claude-sonnet-4-6",
        settings_for(tmp_path, {**KEYS, "ANTHROPIC_BASE_URL": "http://127.0.0.1:8888"}),
    )
    assert anthropic.base_url == "http://127.0.0.1:8888"


def test_base_url_from_dotenv(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DEEPSEEK_BASE_URL=http://mirror.local/deepseek\n")
    resolved = resolve_model("deepseek-v4-pro", settings_for(tmp_path))
    assert resolved.base_url == "http://mirror.local/deepseek"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://gpu-box:11434", "http://gpu-box:11434/v1"),
        ("http://gpu-box:11434/", "http://gpu-box:11434/v1"),
        ("http://gpu-box:11434/v1", "http://gpu-box:11434/v1"),
        ("http://gpu-box:11434/v1/", "http://gpu-box:11434/v1"),
        ("http://gpu-box:11434/api", "http://gpu-box:11434/v1"),
        ("gpu-box:11434", "http://gpu-box:11434/v1"),
        ("https://ollama.internal/proxy", "https://ollama.internal/proxy/v1"),
    ],
)
def test_ollama_url_normalisation(tmp_path: Path, given: str, expected: str) -> None:
    assert normalize_ollama_url(given) == expected
    resolved = resolve_model(
        "ollama:llama3.1:8b", settings_for(tmp_path, {"OLLAMA_BASE_URL": given})
    )
    assert resolved.base_url == expected
    from_file = settings_for(tmp_path, {}, {"providers": {"ollama": {"baseUrl": given}}})
    assert resolve_model("ollama:llama3.1:8b", from_file).base_url == expected


def test_invalid_base_url_is_a_config_error(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, {**KEYS, "OPENAI_BASE_URL": "api.openai.com/v1"})
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL"):
        resolve_model("o3", settings)


def test_placeholder_key_is_missing(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, {"OPENAI_API_KEY": "your-openai-api-key"})
    resolved = resolve_model("o3", settings)
    assert resolved.api_key is None
    assert not resolved.key_usable
    with pytest.raises(ConfigError, match="OPENAI_API_KEY holds a placeholder"):
        build_model("o3", settings)


def test_missing_key_message_names_env_var(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        build_model("claude-sonnet-4-6", settings_for(tmp_path, {}))
    message = str(info.value)
    assert message.startswith("ANTHROPIC_API_KEY is not set.")
    assert "--model" in message
    assert "dexter doctor" in message


def test_settings_api_key_and_key_env_overrides(tmp_path: Path) -> None:
    file_data = {
        "providers": {
            "openai": {"apiKey": "sk-from-settings-1234"},
            "anthropic": {"apiKeyEnv": "WORK_ANTHROPIC_KEY"},
        }
    }
    settings = settings_for(tmp_path, {"WORK_ANTHROPIC_KEY": "sk-ant-work-9999"}, file_data)
    openai = resolve_model("o3", settings)
    assert (openai.api_key, openai.api_key_source) == ("sk-from-settings-1234", "settings")
    anthropic = resolve_model("claude-sonnet-4-6", settings)
    assert anthropic.api_key == "sk-ant-work-9999"
    # The environment variable beats a key written in settings.json.
    env_wins = settings_for(tmp_path, {"OPENAI_API_KEY": "sk-env-4321"}, file_data)
    assert resolve_model("o3", env_wins).api_key == "sk-env-4321"


def test_context_window_overrides(tmp_path: Path) -> None:
    file_data = {
        "providers": {
            "ollama": {"contextWindow": 32_768, "contextWindows": {"llama3.1:8b": 8_192}},
            "openrouter": {"contextWindows": {"google/gemini-3.1-pro": 1_000_000}},
        }
    }
    settings = settings_for(tmp_path, KEYS, file_data)
    assert resolve_model("ollama:llama3.1:8b", settings).context_window == 8_192
    assert resolve_model("ollama:qwen3:32b", settings).context_window == 32_768
    assert resolve_model("openrouter:google/gemini-3.1-pro", settings).context_window == 1_000_000
    assert resolve_model("openrouter:openai/gpt-4o", settings).context_window == 128_000


def test_unknown_provider_setting_key_is_reported(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, KEYS, {"providers": {"openai": {"baseURL": "http://x/v1"}}})
    with pytest.raises(ConfigError, match='did you mean "baseUrl"'):
        resolve_model("o3", settings)


def test_builtin_protocol_cannot_change(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, KEYS, {"providers": {"openai": {"protocol": "anthropic"}}})
    with pytest.raises(ConfigError, match="protocol"):
        resolve_model("o3", settings)


CUSTOM = {
    "providers": {
        "mylab": {
            "protocol": "openai",
            "baseUrl": "http://127.0.0.1:8000/v1",
            "apiKeyEnv": "MYLAB_KEY",
            "contextWindow": 65_536,
        },
        "lmstudio": {"baseUrl": "http://localhost:1234/v1", "displayName": "LM Studio"},
    }
}


def test_custom_provider_resolution(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, {"MYLAB_KEY": "lab-secret-42"}, CUSTOM)
    resolved = resolve_model("mylab:qwen3-235b", settings)
    assert resolved.provider.custom
    assert resolved.provider.protocol == "openai"
    assert (resolved.base_url, resolved.api_key) == ("http://127.0.0.1:8000/v1", "lab-secret-42")
    assert resolved.context_window == 65_536
    keyless = resolve_model("lmstudio:meta-llama/llama-3.3-70b", settings)
    assert keyless.key_usable and keyless.api_key is None
    # Declaring apiKeyEnv makes the key required.
    with pytest.raises(ConfigError, match="MYLAB_KEY is not set"):
        build_model("mylab:qwen3-235b", settings_for(tmp_path, {}, CUSTOM))


def test_custom_provider_needs_base_url(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, {}, {"providers": {"mylab": {"apiKeyEnv": "MYLAB_KEY"}}})
    with pytest.raises(ConfigError, match="baseUrl"):
        resolve_model("mylab:x", settings)


class Recorder:
    """Stands in for a wire module class and records how build_model constructed it."""

    def __init__(self, model_name: str, **kwargs: Any) -> None:
        self.model_name = model_name
        self.kwargs = kwargs


@pytest.fixture
def fake_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    for module_name, class_name in (
        ("dexter.models.openai_chat", "OpenAIChatModel"),
        ("dexter.models.anthropic_messages", "AnthropicMessagesModel"),
    ):
        module = types.ModuleType(module_name)
        setattr(module, class_name, type(class_name, (Recorder,), {}))
        monkeypatch.setitem(sys.modules, module_name, module)


@pytest.mark.usefixtures("fake_wire")
def test_build_model_passes_provider_data(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, {"MYLAB_KEY": "lab-secret-42", **KEYS}, CUSTOM)

    custom: Any = build_model("mylab:qwen3-235b", settings)
    assert type(custom).__name__ == "OpenAIChatModel"
    assert custom.model_name == "qwen3-235b"
    assert custom.kwargs["base_url"] == "http://127.0.0.1:8000/v1"
    assert custom.kwargs["api_key"] == "lab-secret-42"
    assert custom.kwargs["provider"] == "mylab"

    deepseek: Any = build_model("deepseek-v4-pro", settings)
    assert deepseek.kwargs["reasoning_field"] == "reasoning_content"
    assert deepseek.kwargs["extra_body"] == {
        "thinking": {"type": "enabled"},
        "reasoning_effort": "high",
    }
    # Other DeepSeek models get no thinking switch.
    chat: Any = build_model("deepseek:deepseek-chat", settings)
    assert chat.kwargs["extra_body"] is None

    claude: Any = build_model("claude-sonnet-4-6", settings)
    assert type(claude).__name__ == "AnthropicMessagesModel"
    assert claude.kwargs["base_url"] == "https://api.anthropic.com"
    assert claude.kwargs["api_key"] == "sk-ant-test-0002"
    assert claude.kwargs["provider"] == "Anthropic"

    # Key-less providers get a dummy key so the SDK never falls back to OPENAI_API_KEY.
    ollama: Any = build_model("ollama:llama3.1:8b", settings)
    assert ollama.kwargs["api_key"] not in (None, KEYS["OPENAI_API_KEY"])
    assert ollama.kwargs["reasoning_field"] == "reasoning"
    assert ollama.model_name == "llama3.1:8b"


def test_build_model_with_real_wire_modules(tmp_path: Path) -> None:
    openai_chat = pytest.importorskip("dexter.models.openai_chat")
    anthropic_messages = pytest.importorskip("dexter.models.anthropic_messages")
    from dexter.models.base import Model

    settings = settings_for(tmp_path, KEYS, CUSTOM)
    custom = build_model("lmstudio:qwen3", settings)
    assert isinstance(custom, openai_chat.OpenAIChatModel)
    assert isinstance(custom, Model)
    assert (custom.name, custom.provider) == ("qwen3", "LM Studio")
    claude = build_model("anthropic:claude-sonnet-4-6", settings)
    assert isinstance(claude, anthropic_messages.AnthropicMessagesModel)
    assert claude.provider == "Anthropic"


def test_list_providers_reports_without_secrets(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-openai-test-0001", "OLLAMA_BASE_URL": "http://gpu:11434"}
    file_data = {"providers": {**CUSTOM["providers"], "broken": {"baseUrlEnv": "BROKEN_URL"}}}
    statuses = {s.id: s for s in list_providers(settings_for(tmp_path, env, file_data))}
    assert list(statuses)[:3] == ["openai", "anthropic", "google"]
    assert statuses["openai"].key_present and statuses["openai"].usable
    assert not statuses["anthropic"].key_present and not statuses["anthropic"].usable
    assert statuses["ollama"].base_url == "http://gpu:11434/v1"
    assert statuses["ollama"].base_url_overridden
    assert statuses["ollama"].usable and not statuses["ollama"].key_required
    assert statuses["mylab"].custom and statuses["mylab"].api_key_env == "MYLAB_KEY"
    assert statuses["broken"].error is not None and "BROKEN_URL" in statuses["broken"].error
    assert "sk-openai-test-0001" not in repr(statuses)


def test_fast_model_spec(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    assert (
        fast_model_spec(resolve_model("claude-opus-4-8", settings)) == "anthropic:claude-haiku-4-5"
    )
    assert fast_model_spec(resolve_model("ollama:qwen3:8b", settings)) == "ollama:qwen3:8b"


def test_resolved_repr_hides_key(tmp_path: Path) -> None:
    resolved = resolve_model("o3", settings_for(tmp_path))
    assert "sk-openai-test-0001" not in repr(resolved)
