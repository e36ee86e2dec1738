"""Typed settings sections: one readable line per bad value, unknown keys reported by doctor."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from dexter.cli.doctor import run_doctor
from dexter.cli.main import main
from dexter.config import ConfigError, load_settings
from dexter.settings_model import MemorySettings, RetrySettings, WebFetchSettings


def write(tmp_path: Path, data: Any) -> None:
    home = tmp_path / ".dexter"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"memory": True}, '"memory" in .dexter/settings.json must be an object (got true).'),
        (
            {"webFetch": ["x"]},
            '"webFetch" in .dexter/settings.json must be an object (got ["x"]).',
        ),
        (
            {"memory": {"enabled": "sometimes"}},
            '"memory.enabled" in .dexter/settings.json must be true or false (got "sometimes").',
        ),
        (
            {"financeTools": "fast"},
            "\"financeTools\" in .dexter/settings.json must be one of 'routed' or 'direct' "
            '(got "fast").',
        ),
        (
            {"providers": {"ollama": {"contextWindow": 0}}},
            '"providers.ollama.contextWindow" in .dexter/settings.json must be at least 1 (got 0).',
        ),
        (
            {"routerModel": 5},
            '"routerModel" in .dexter/settings.json must be a string (got 5).',
        ),
    ],
)
def test_bad_value_is_one_line_naming_key_and_file(
    tmp_path: Path, data: dict[str, Any], message: str
) -> None:
    write(tmp_path, data)
    settings = load_settings(cwd=tmp_path, environ={})
    with pytest.raises(ConfigError) as caught:
        settings.section(MemorySettings)
    assert str(caught.value) == message


def test_provider_typo_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    write(tmp_path, {"providers": {"openai": {"baseURL": "http://x/v1"}}})
    with pytest.raises(ConfigError, match=r'"providers\.openai\.baseURL".*did you mean "baseUrl"'):
        load_settings(cwd=tmp_path, environ={}).parsed()


def test_sections_default_when_absent_and_parse_when_present(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"memory": {"enabled": False, "embeddingProvider": "none"}, "retry": {"attempts": 2}},
    )
    settings = load_settings(cwd=tmp_path, environ={})
    memory = settings.section(MemorySettings)
    assert (memory.enabled, memory.embedding_provider) == (False, "none")
    assert settings.section(WebFetchSettings).allowed_hosts == ()
    retry = settings.section(RetrySettings)
    assert (retry.attempts, retry.stream_idle_timeout) == (2, 60.0)


def test_ask_with_bad_settings_prints_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DEXTER_HOME", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    write(tmp_path, {"memory": True})
    assert main(["ask", "--model", "openai:gpt-test", "hi"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        'dexter: "memory" in .dexter/settings.json must be an object (got true).'
    )


def test_doctor_reports_unknown_keys_with_suggestions_and_every_search_key(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"modle": "openai:o3", "memory": {"enabeld": False}, "permissions": {}})
    settings = load_settings(cwd=tmp_path, environ={"OPENAI_API_KEY": "sk-test-123456"})
    buffer = io.StringIO()
    run_doctor(settings, Console(file=buffer, width=120, color_system=None))
    output = buffer.getvalue()
    assert 'unknown key "modle" (did you mean "model"?)' in output
    assert 'unknown key "memory.enabeld" (did you mean "memory.enabled"?)' in output
    assert "permissions" not in output.split("Model providers")[0]
    for name in ("Exa", "Tavily", "Perplexity", "LangSearch", "Financial Datasets"):
        assert name in output
