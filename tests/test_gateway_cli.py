"""`dexter gateway setup|status|pair|logout` as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.gateway.config import config_path, load_config
from dexter.gateway.service import pairing_store


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_setup_then_status_pair_and_logout(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = iter(["1", "not-a-token", "123:ABC", "", "y"])
    monkeypatch.setattr("builtins.input", lambda _prompt="": next(answers))
    assert main(["gateway", "setup"]) == 0
    out = capsys.readouterr().out
    assert "@BotFather" in out and "try again" in out and "dexter gateway run" in out
    config = load_config(config_path(home))
    account = config.channels["telegram"].accounts["default"]
    assert account.token == "123:ABC"
    assert (account.dm_policy, account.group_policy) == ("pairing", "open")
    assert config_path(home).stat().st_mode & 0o777 == 0o600

    assert main(["gateway", "status"]) == 0
    assert "has not run yet" in capsys.readouterr().out

    request, _ = pairing_store(home).request("telegram", "default", "77", sender_name="Bo")
    assert main(["gateway", "pair", "list"]) == 0
    listed = capsys.readouterr().out
    assert request.code in listed and "Bo (77)" in listed
    assert main(["gateway", "pair", "approve", request.code]) == 0
    assert "Approved Bo" in capsys.readouterr().out
    assert pairing_store(home).approved_ids("telegram", "default") == {"77"}
    assert main(["gateway", "pair", "deny", "000000"]) == 2
    assert "No pending pairing request" in capsys.readouterr().err

    assert main(["gateway", "logout", "telegram"]) == 0
    assert "Forgot the telegram credentials" in capsys.readouterr().out
    after = load_config(config_path(home)).channels["telegram"].accounts["default"]
    assert after.token is None and not after.enabled


def test_run_without_configuration_is_one_clear_line(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gateway", "run"]) == 2
    err = capsys.readouterr().err
    assert "dexter gateway setup" in err and "Traceback" not in err


def test_status_json_and_broken_config(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home.mkdir(parents=True)
    config_path(home).write_text('{"channels": {"telegram": {"dm_policy": "sometimes"}}}')
    assert main(["gateway", "status"]) == 2
    assert "dm_policy" in capsys.readouterr().err
    config_path(home).write_text("{}")
    assert main(["gateway", "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["alive"] is False


def test_setup_with_input_ending_early_is_one_clear_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = iter(["1", "123:ABC"])

    def ask(_prompt: str = "") -> str:
        try:
            return next(answers)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", ask)
    # Closed input cancels, with the status every cancelled command exits with.
    assert main(["gateway", "setup"]) == 130
    err = capsys.readouterr().err
    assert "setup cancelled; nothing was saved" in err and "Traceback" not in err
    assert not config_path(home).exists()


def test_run_with_an_unusable_model_fails_at_start_in_one_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("DEXTER_MEMORY", "off")
    home.mkdir(parents=True)
    config_path(home).write_text(
        json.dumps(
            {
                "model": "openai:gpt-test",
                "channels": {
                    "telegram": {
                        "accounts": {"default": {"token": "1:T", "api_base": "http://127.0.0.1:9"}}
                    }
                },
            }
        )
    )
    # Before any chat could be answered with the error, the gateway does not start at all.
    assert main(["gateway", "run"]) == 2
    captured = capsys.readouterr()
    assert "OPENAI_API_KEY is not set" in captured.err and "Traceback" not in captured.err
    assert "running" not in captured.out


def test_a_misspelt_key_in_gateway_json_is_named_with_a_suggestion(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home.mkdir(parents=True)
    config = {"channels": {"telegram": {"accounts": {"default": {"tokn": "1:T"}}}}}
    config_path(home).write_text(json.dumps(config))
    assert main(["gateway", "status"]) == 2
    err = capsys.readouterr().err
    assert 'unknown key "channels.telegram.accounts.default.tokn"' in err
    assert 'did you mean "token"?' in err and "Traceback" not in err
