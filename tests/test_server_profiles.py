"""Server profiles: which one a configured model gets, and what the settings can say over it;
no vendor key demanded for a server on this machine."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from dexter.config import ConfigError, Settings, load_settings
from dexter.models.profile import GENERIC, OPENAI, profile_for_kind
from dexter.providers import build_model, resolve_model
from dexter.providers.probe import ServerReport
from dexter.providers.profiles import is_local_url, probed_profile, should_probe, static_profile


def settings_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: dict[str, object]
) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps(data))
    monkeypatch.setenv("DEXTER_HOME", str(home))
    return load_settings()


def local_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **entry: object) -> Settings:
    """Settings declaring provider `local` at a llama.cpp-like address, with `entry` added."""
    local = {"baseUrl": "http://127.0.0.1:8080/v1", **entry}
    return settings_with(tmp_path, monkeypatch, {"providers": {"local": local}})


# ---- which profile -------------------------------------------------------------------------


def test_vendors_at_their_own_endpoints_keep_their_own_dialect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_with(tmp_path, monkeypatch, {})
    openai = resolve_model("openai:gpt-5.6-sol", settings)
    assert static_profile(openai) is OPENAI and not should_probe(openai)
    anthropic = static_profile(resolve_model("anthropic:claude-sonnet-4-6", settings))
    assert anthropic.server_kind == "anthropic" and not anthropic.system_as_string
    ollama = resolve_model("ollama:llama3.2", settings)
    assert static_profile(ollama).server_kind == "ollama" and should_probe(ollama)


def test_a_base_url_of_the_users_own_starts_generic_and_is_probed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    resolved = resolve_model("openai:gemma3", load_settings())
    assert static_profile(resolved) is GENERIC
    assert GENERIC.assistant_tool_call_content == "" and GENERIC.output_limit_param == "max_tokens"
    assert should_probe(resolved)
    report = ServerReport(kind="vllm", context_window=16384)
    assert probed_profile(resolved, report) == replace(
        profile_for_kind("vllm"), context_window=16384
    )


def test_the_settings_profile_wins_over_the_probe_field_by_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = local_provider(
        tmp_path,
        monkeypatch,
        contextWindow=8192,
        maxOutputTokens=700,
        profile={
            "serverKind": "llama.cpp",
            "assistantToolCallContent": None,
            "reportsUsageInStream": False,
            "overflowSignals": {"phrases": ["KV cache is full"], "statuses": [413, 507]},
        },
    )
    resolved = resolve_model("local:gemma3", settings)
    profile = probed_profile(resolved, ServerReport(kind="vllm", context_window=32768))
    assert profile.server_kind == "llamacpp"  # the settings name the kind
    assert profile.assistant_tool_call_content is None  # an explicit null counts
    assert profile.reports_usage_in_stream is False
    assert profile.context_window == 8192  # the user's window beats the probe's
    assert profile.default_output_tokens == 700
    assert profile.overflow_signals.matches("error: kv cache is full")
    assert profile.overflow_signals.statuses == frozenset({413, 507})
    assert should_probe(resolved)


def test_probe_false_means_the_server_is_never_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = local_provider(tmp_path, monkeypatch, profile={"probe": False})
    assert not should_probe(resolve_model("local:gemma3", settings))


@pytest.mark.parametrize(
    ("profile", "named"),
    [
        ({"serverKind": "koboldcpp"}, "serverKind"),
        ({"assistantToolCallContent": "none"}, "assistantToolCallContent"),
        ({"outputLimitParam": "max_new_tokens"}, "outputLimitParam"),
        ({"overflowSignals": {"statuses": [200]}}, "statuses"),
        ({"systemAsStrng": True}, "systemAsStrng"),
    ],
)
def test_a_wrong_profile_setting_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: dict[str, object], named: str
) -> None:
    settings = local_provider(tmp_path, monkeypatch, profile=profile)
    with pytest.raises(ConfigError) as raised:
        resolve_model("local:gemma3", settings)
    assert named in str(raised.value)


# ---- keys ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://localhost:11434", True),
        ("http://[::1]:8000/v1", True),
        ("http://192.168.1.20:1234/v1", True),
        ("http://10.0.0.5:4000", True),
        ("http://gpu-box.local:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://llm.example.com/v1", False),
        ("http://8.8.8.8/v1", False),
    ],
)
def test_local_urls(url: str, local: bool) -> None:
    assert is_local_url(url) is local


def test_a_local_base_url_needs_no_vendor_key_but_a_remote_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:4000")
    build_model("anthropic:gemma3", load_settings())  # no ANTHROPIC_API_KEY: no error
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    build_model("openai:gemma3", load_settings())
    monkeypatch.setenv("OPENAI_BASE_URL", "https://llm.example.com/v1")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        build_model("openai:gemma3", load_settings())
