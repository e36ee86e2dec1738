"""`dexter gateway setup|status|pair|logout` as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.gateway.config import config_path, load_config
from dexter.gateway.service import pairing_store
from tests.support.fake_graph import ACCESS_TOKEN, PHONE_NUMBER_ID, serve_graph
from tests.support.fake_telegram import FakeTelegram, serve_telegram


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def at_fake(home: Path, channel: str, api_base: str) -> None:
    """A configured account whose platform API is a local fake (setup keeps `api_base`)."""
    home.mkdir(parents=True, exist_ok=True)
    account = {"api_base": api_base, "enabled": False}
    config = {"channels": {channel: {"accounts": {"default": account}}}}
    config_path(home).write_text(json.dumps(config))


def answering(monkeypatch: pytest.MonkeyPatch, *answers: str) -> None:
    queue = iter(answers)

    def ask(_prompt: str = "") -> str:
        try:
            return next(queue)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", ask)


def test_setup_then_status_pair_and_logout(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_telegram(FakeTelegram(token="123:ABC")) as fake:
        at_fake(home, "telegram", fake.url)
        answering(monkeypatch, "1", "not-a-token", "123:ABC", "", "y")
        assert main(["gateway", "setup"]) == 0
    out = capsys.readouterr().out
    assert "@BotFather" in out and "try again" in out and "dexter gateway run" in out
    assert "Telegram says: @dexter_test_bot." in out
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
    with serve_telegram(FakeTelegram(token="123:ABC")) as fake:
        at_fake(home, "telegram", fake.url)
        before = config_path(home).read_bytes()
        # The token is accepted, then input ends before the questions about access.
        answering(monkeypatch, "1", "123:ABC")
        # Closed input cancels, with the status every cancelled command exits with.
        assert main(["gateway", "setup"]) == 130
    err = capsys.readouterr().err
    assert "setup cancelled; nothing was saved" in err and "Traceback" not in err
    assert config_path(home).read_bytes() == before


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


def test_setup_asks_telegram_who_the_token_is_and_asks_again_when_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_telegram(FakeTelegram(token="123:ABC")) as fake:
        at_fake(home, "telegram", fake.url)
        # A token of the right shape that is not this bot's: refused, asked again.
        answering(monkeypatch, "999:WRONG", "123:ABC", "", "n")
        assert main(["gateway", "setup", "telegram"]) == 0
    out = capsys.readouterr().out
    assert "Telegram rejected that token (Unauthorized)" in out and "Try again." in out
    assert "999:WRONG" not in out
    assert "Telegram says: @dexter_test_bot." in out
    account = load_config(config_path(home)).channels["telegram"].accounts["default"]
    assert account.token == "123:ABC" and account.enabled


def test_setup_offers_to_save_unchecked_when_telegram_cannot_be_reached(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    at_fake(home, "telegram", "http://127.0.0.1:9")
    answering(monkeypatch, "1:A", "n", "1:B", "y", "", "n")
    assert main(["gateway", "setup", "telegram"]) == 0
    out = capsys.readouterr().out
    assert out.count("Cannot reach Telegram to check it") == 2
    assert "Saved unchecked" in out and "1:B" not in out
    account = load_config(config_path(home)).channels["telegram"].accounts["default"]
    assert account.token == "1:B"


def test_setup_asks_the_graph_api_for_the_whatsapp_number(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_graph() as fake:
        at_fake(home, "whatsapp_cloud", fake.url)
        answering(
            monkeypatch,
            PHONE_NUMBER_ID,
            "EAAG-expired",  # a token Meta refuses
            "123456789",  # a number id this token has no number for
            ACCESS_TOKEN,
            PHONE_NUMBER_ID,
            ACCESS_TOKEN,
            "app-secret",
            "verify-me",
            "",
            "",
            "n",
        )
        assert main(["gateway", "setup", "whatsapp_cloud"]) == 0
    out = capsys.readouterr().out
    assert "Meta rejected that access token (Invalid OAuth access token" in out
    assert "Meta has no phone number 123456789" in out
    assert "Meta says: +1 555-010-0999 (Dexter Research)." in out
    assert "EAAG" not in out
    account = load_config(config_path(home)).channels["whatsapp_cloud"].accounts["default"]
    assert (account.phone_number_id, account.access_token) == (PHONE_NUMBER_ID, ACCESS_TOKEN)
