from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from dexter.cli.doctor import run_doctor
from dexter.config import Settings, load_settings

SECRET = "sk-proj-doctor-secret-abcd1234"


def render(
    settings: Settings, model_spec: str | None = None, width: int = 120, *, show_all: bool = False
) -> tuple[int, str]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None)
    code = run_doctor(settings, console, model_spec, show_all=show_all)
    return code, buffer.getvalue()


def test_doctor_lists_providers_and_hides_secrets(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"ANTHROPIC_API_KEY={SECRET}-ant\n")
    settings = load_settings(cwd=tmp_path, environ={"OPENAI_API_KEY": SECRET})
    code, output = render(settings, show_all=True)
    assert code == 0
    for name in ("OpenAI", "Anthropic", "Google", "xAI", "DeepSeek", "Moonshot", "OpenRouter"):
        assert name in output
    assert "Ollama" in output
    assert "no key needed" in output
    assert "✗ GOOGLE_API_KEY" in output
    assert "✓ OPENAI_API_KEY" in output
    assert "openai:gpt-5.6-sol" in output
    assert "built-in default" in output
    assert str(settings.home) in output
    assert SECRET not in output
    assert "abcd1234" not in output


def test_doctor_at_80_columns_keeps_every_endpoint_on_one_line(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ={"OPENAI_API_KEY": SECRET})
    _, output = render(settings, width=80, show_all=True)
    lines = output.splitlines()
    assert max(len(line) for line in lines) <= 80
    for endpoint in (
        "generativelanguage.googleapis.com/v1beta/openai",
        "api.anthropic.com",
        "http://localhost:11434/v1",
    ):
        assert any(endpoint in line for line in lines), endpoint
    _, wide = render(settings, width=140, show_all=True)
    assert "https://generativelanguage.googleapis.com/v1beta/openai" in wide


def test_doctor_shows_providers_in_use_in_full_and_names_the_rest_on_two_lines(
    tmp_path: Path,
) -> None:
    settings = load_settings(cwd=tmp_path, environ={"OPENAI_API_KEY": SECRET})
    code, output = render(settings, width=80)
    assert code == 0
    lines = output.splitlines()
    assert len(lines) <= 40  # was 70 at 80 columns, most of it providers nobody set up
    assert max(len(line) for line in lines) <= 80
    assert "✓ OPENAI_API_KEY" in output and "no key needed" in output  # OpenAI and Ollama
    assert "GOOGLE_API_KEY" not in output and "api.anthropic.com" not in output
    start = next(i for i, line in enumerate(lines) if line.startswith("Not set up"))
    named = " ".join(" ".join(lines[start : start + 2]).split())
    for name in ("Anthropic", "Google", "xAI", "Moonshot", "DeepSeek", "OpenRouter"):
        assert name in named
    assert "dexter keys set PROVIDER" in output and "dexter doctor --all" in output
    # The provider of the model asked for is shown in full even without its key.
    _, output = render(settings, "anthropic:claude-sonnet-4-6", width=80)
    assert "✗ ANTHROPIC_API_KEY" in output


def test_doctor_fails_when_selected_provider_has_no_key(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ={"OPENAI_API_KEY": SECRET})
    code, output = render(settings, "claude-sonnet-4-6")
    assert code == 1
    assert "anthropic:claude-sonnet-4-6" in output
    assert "--model flag" in output
    assert "ANTHROPIC_API_KEY is not set" in output


def test_doctor_reports_model_source(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ={"DEXTER_MODEL": "ollama:llama3.1:8b"})
    code, output = render(settings)
    assert code == 0
    assert "ollama:llama3.1:8b" in output
    assert "DEXTER_MODEL environment variable" in output
    assert "contextWindows" in output  # the Ollama window warning


def test_doctor_shows_custom_provider_and_settings_file(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    home.mkdir()
    (home / "settings.json").write_text(
        json.dumps(
            {
                "model": "mylab:qwen3",
                "providers": {
                    "mylab": {"baseUrl": "http://127.0.0.1:8000/v1", "apiKey": SECRET},
                },
            }
        )
    )
    settings = load_settings(cwd=tmp_path, environ={})
    code, output = render(settings)
    assert code == 0
    assert "mylab" in output
    assert "http://127.0.0.1:8000/v1" in output
    assert "parses" in output
    assert "settings file" in output
    assert SECRET not in output


def test_doctor_reports_corrupt_settings(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    home.mkdir()
    (home / "settings.json").write_text('{"model": ')
    settings = load_settings(
        cwd=tmp_path, environ={"OPENAI_API_KEY": SECRET}, tolerate_corrupt=True
    )
    # Wide enough that the settings path (long under a test worker's folder) stays on one line.
    code, output = render(settings, width=240)
    assert code == 1
    assert "does not parse" in output
    assert "not valid JSON" in output


def test_doctor_reports_unknown_provider(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ={})
    code, output = render(settings, "opnai:gpt-5.6-sol")
    assert code == 1
    assert "Unknown provider" in output


def test_doctor_says_which_sandbox_runs_unasked_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter.permissions import sandbox

    settings = load_settings(cwd=tmp_path, environ={"OPENAI_API_KEY": SECRET})
    _, output = render(settings)
    _, about = sandbox.detect_sandbox()
    assert "Sandbox" in output and about.split(" (")[0] in output
    monkeypatch.setattr(sandbox, "detect_sandbox", lambda: (None, "bubblewrap is not installed"))
    _, output = render(settings)
    assert "✗ none" in output and "bubblewrap is not installed" in output
    assert "only plain readers" in output
