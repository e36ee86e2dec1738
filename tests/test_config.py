from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dexter.config import (
    ConfigError,
    Settings,
    get_secret,
    is_placeholder,
    load_settings,
    read_settings_file,
    save_setting,
)


def write_settings(home: Path, data: object) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "settings.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_defaults_with_nothing_configured(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ={})
    # No DEXTER_HOME and no project .dexter: the user-level home (HOME is in tmp_path in tests).
    assert settings.home == Path.home() / ".dexter"
    assert settings.home_source == "user"
    assert settings.settings_path == Path.home() / ".dexter" / "settings.json"
    assert settings.model is None
    assert settings.model_source == "default"
    assert settings.max_iterations == 10
    assert settings.file_data == {}
    assert settings.providers == {}
    assert settings.dotenv_path is None
    # Loading never creates the workspace: `dexter --help` must not litter the directory.
    assert not (tmp_path / ".dexter").exists()


def test_dexter_home_relative_to_cwd_and_absolute(tmp_path: Path) -> None:
    relative = load_settings(cwd=tmp_path, environ={"DEXTER_HOME": "state"})
    assert relative.home == tmp_path / "state"
    elsewhere = tmp_path / "elsewhere"
    absolute = load_settings(cwd=tmp_path, environ={"DEXTER_HOME": str(elsewhere)})
    assert absolute.home == elsewhere


def test_precedence_flag_env_dotenv_file(tmp_path: Path) -> None:
    write_settings(tmp_path / ".dexter", {"model": "file:model", "maxIterations": 4})
    assert load_settings(cwd=tmp_path, environ={}).model == "file:model"
    assert load_settings(cwd=tmp_path, environ={}).model_source == "settings"
    assert load_settings(cwd=tmp_path, environ={}).max_iterations == 4

    (tmp_path / ".env").write_text("DEXTER_MODEL=dotenv:model\nDEXTER_MAX_ITERATIONS=5\n")
    from_dotenv = load_settings(cwd=tmp_path, environ={})
    assert (from_dotenv.model, from_dotenv.model_source) == ("dotenv:model", "dotenv")
    assert from_dotenv.max_iterations == 5
    assert from_dotenv.dotenv_path == tmp_path / ".env"

    env = {"DEXTER_MODEL": "env:model", "DEXTER_MAX_ITERATIONS": "6"}
    from_env = load_settings(cwd=tmp_path, environ=env)
    assert (from_env.model, from_env.model_source) == ("env:model", "env")
    assert from_env.max_iterations == 6

    flagged = load_settings(cwd=tmp_path, environ=env, model="flag:model", max_iterations=7)
    assert (flagged.model, flagged.model_source) == ("flag:model", "flag")
    assert flagged.max_iterations == 7


def test_dotenv_is_read_without_touching_os_environ(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "DEXTER_TEST_ONLY_KEY=from-dotenv\nOPENAI_API_KEY=sk-dotenv-1234\n"
    )
    settings = load_settings(cwd=tmp_path, environ={"OPENAI_API_KEY": "sk-env-5678"})
    assert settings.env["DEXTER_TEST_ONLY_KEY"] == "from-dotenv"
    # The real environment beats .env.
    assert settings.env["OPENAI_API_KEY"] == "sk-env-5678"
    assert "DEXTER_TEST_ONLY_KEY" not in os.environ


def test_dotenv_can_move_dexter_home(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DEXTER_HOME=custom-home\n")
    assert load_settings(cwd=tmp_path, environ={}).home == tmp_path / "custom-home"


def test_settings_from_the_original_typescript_dexter(tmp_path: Path) -> None:
    write_settings(tmp_path / ".dexter", {"provider": "anthropic", "modelId": "claude-opus-4-8"})
    assert load_settings(cwd=tmp_path, environ={}).model == "anthropic:claude-opus-4-8"
    write_settings(tmp_path / ".dexter", {"provider": "ollama", "modelId": "ollama:qwen3:8b"})
    assert load_settings(cwd=tmp_path, environ={}).model == "ollama:qwen3:8b"
    write_settings(tmp_path / ".dexter", {"provider": "openai", "modelId": "gpt-5.4"})
    assert load_settings(cwd=tmp_path, environ={}).model == "openai:gpt-5.6-sol"


def test_corrupt_settings_raises_naming_file_and_position(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    home.mkdir()
    path = home / "settings.json"
    path.write_text('{\n  "model": "openai:gpt-5.6-sol",\n  "permissions": {"allow": [}\n}')
    with pytest.raises(ConfigError) as info:
        load_settings(cwd=tmp_path, environ={})
    message = str(info.value)
    assert str(path) in message
    assert "line 3" in message
    assert "column" in message


def test_corrupt_settings_tolerated_for_doctor(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    home.mkdir()
    (home / "settings.json").write_text("{oops")
    settings = load_settings(cwd=tmp_path, environ={}, tolerate_corrupt=True)
    assert settings.settings_error is not None
    assert "settings.json" in settings.settings_error
    assert settings.file_data == {}


def test_settings_must_be_an_object(tmp_path: Path) -> None:
    write_settings(tmp_path / ".dexter", ["model"])
    with pytest.raises(ConfigError, match="JSON object"):
        load_settings(cwd=tmp_path, environ={})


@pytest.mark.parametrize(
    "environ",
    [{"DEXTER_MAX_ITERATIONS": "ten"}, {"DEXTER_MAX_ITERATIONS": "0"}],
)
def test_bad_max_iterations_is_a_config_error(tmp_path: Path, environ: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="DEXTER_MAX_ITERATIONS"):
        load_settings(cwd=tmp_path, environ=environ)


def test_providers_block_is_keyed_case_insensitively(tmp_path: Path) -> None:
    write_settings(tmp_path / ".dexter", {"providers": {"Ollama": {"baseUrl": "http://gpu:11434"}}})
    settings = load_settings(cwd=tmp_path, environ={})
    assert settings.providers == {"ollama": {"baseUrl": "http://gpu:11434"}}


def test_providers_block_must_hold_objects(tmp_path: Path) -> None:
    write_settings(tmp_path / ".dexter", {"providers": {"ollama": "http://gpu:11434"}})
    with pytest.raises(ConfigError, match=r"providers\.ollama"):
        load_settings(cwd=tmp_path, environ={})


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "your-openai-api-key",
        "your_key_here",
        "YOUR-KEY",
        "Your api key",
        "sk-...",
        "sk-ant-...",
        "sk-…abcd",
        "<OPENAI_API_KEY>",
        "changeme",
        "CHANGEME",
    ],
)
def test_placeholder_values_count_as_missing(tmp_path: Path, value: str) -> None:
    settings = load_settings(cwd=tmp_path, environ={"OPENAI_API_KEY": value})
    assert is_placeholder(value)
    assert get_secret(settings, "OPENAI_API_KEY") is None


def test_real_looking_secret_is_returned(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ={"OPENAI_API_KEY": " sk-proj-abc123 "})
    assert get_secret(settings, "OPENAI_API_KEY") == "sk-proj-abc123"
    assert get_secret(settings, "ANTHROPIC_API_KEY") is None


def test_settings_repr_hides_secrets(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ={"OPENAI_API_KEY": "sk-secret-value-1234"})
    assert "sk-secret-value-1234" not in repr(settings)


def test_save_setting_creates_pretty_json_and_keeps_other_keys(tmp_path: Path) -> None:
    path = tmp_path / ".dexter" / "settings.json"
    save_setting(path, "model", "anthropic:claude-sonnet-4-6")
    save_setting(path, "permissions", {"allow": ["read_file"]})
    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n  "model"')
    assert json.loads(text) == {
        "model": "anthropic:claude-sonnet-4-6",
        "permissions": {"allow": ["read_file"]},
    }
    save_setting(path, "model", None)
    assert read_settings_file(path) == {"permissions": {"allow": ["read_file"]}}
    # No temp files are left behind next to the settings.
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]


def test_save_setting_refuses_to_overwrite_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    corrupt = '{"permissions": {"allow": ["bash"]},, }'
    path.write_text(corrupt)
    with pytest.raises(ConfigError) as info:
        save_setting(path, "model", "openai:gpt-5.6-sol")
    assert str(path) in str(info.value)
    assert path.read_text() == corrupt


def test_save_setting_keeps_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{}")
    path.chmod(0o640)
    save_setting(path, "maxIterations", 12)
    assert path.stat().st_mode & 0o777 == 0o640
    settings = load_settings(cwd=tmp_path, environ={"DEXTER_HOME": str(tmp_path)})
    assert settings.max_iterations == 12


def test_settings_can_be_built_directly_for_tests(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, env={"DEXTER_MODEL": "ollama:llama3.1:8b"})
    assert settings.settings_path == tmp_path / "settings.json"


def test_project_home_is_found_from_any_subfolder(tmp_path: Path) -> None:
    (tmp_path / ".dexter").mkdir()
    deep = tmp_path / "research" / "nvda"
    deep.mkdir(parents=True)
    settings = load_settings(cwd=deep, environ={})
    assert (settings.home, settings.home_source) == (tmp_path / ".dexter", "project")
    explicit = load_settings(cwd=deep, environ={"DEXTER_HOME": "state"})
    assert (explicit.home, explicit.home_source) == (deep / "state", "env")
