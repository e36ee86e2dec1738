"""Secrets by file (`OPENAI_API_KEY_FILE=/run/secrets/openai`), as compose `secrets:` mount them."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.config import get_secret, load_settings
from dexter.errors import ConfigError
from dexter.store.database_url import database_target


def secret(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "run-secrets" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_a_key_and_the_database_url_come_from_files(tmp_path: Path) -> None:
    key = secret(tmp_path, "openai", "sk-proj-file-4f9a8b7c6d5e\n")
    url = secret(tmp_path, "db", "postgresql://dexter:s3cretpw@db:5432/dexter\n")
    settings = load_settings(
        cwd=tmp_path,
        environ={
            "DEXTER_HOME": str(tmp_path / "home"),
            "OPENAI_API_KEY_FILE": str(key),
            "DEXTER_DATABASE_URL_FILE": str(url),
        },
    )
    # The trailing newline of a file written by `echo` is not part of the key.
    assert get_secret(settings, "OPENAI_API_KEY") == "sk-proj-file-4f9a8b7c6d5e"
    target = database_target(settings)
    assert target.url == "postgresql://dexter:s3cretpw@db:5432/dexter"
    assert "s3cretpw" not in target.describe()


def test_values_read_from_files_are_redacted_from_log_and_tool_output(tmp_path: Path) -> None:
    from dexter import log
    from dexter.permissions.secrets import redact as redact_secrets

    key = secret(tmp_path, "anthropic", "sk-ant-from-a-file-77c1d2e3")
    url = secret(tmp_path, "db", "postgresql://dexter:pw-in-a-file-42@db/dexter")
    load_settings(
        cwd=tmp_path,
        environ={
            "DEXTER_HOME": str(tmp_path / "home"),
            "ANTHROPIC_API_KEY_FILE": str(key),
            "DEXTER_DATABASE_URL_FILE": str(url),
        },
    )
    line = "sent sk-ant-from-a-file-77c1d2e3 to postgresql://dexter:pw-in-a-file-42@db/dexter"
    for redacted in (log.redact(line), redact_secrets(line)):
        assert "77c1d2e3" not in redacted and "pw-in-a-file-42" not in redacted


def test_the_environment_file_beats_a_dotenv_value(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv-0a1b2c3d4e\n")
    key = secret(tmp_path, "openai", "sk-from-secret-file-9z8y7x")
    settings = load_settings(
        cwd=tmp_path,
        environ={"DEXTER_HOME": str(tmp_path / "home"), "OPENAI_API_KEY_FILE": str(key)},
    )
    assert get_secret(settings, "OPENAI_API_KEY") == "sk-from-secret-file-9z8y7x"


def test_a_missing_file_is_a_clear_error_naming_variable_and_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(
            cwd=tmp_path,
            environ={
                "DEXTER_HOME": str(tmp_path / "home"),
                "OPENAI_API_KEY_FILE": "/run/secrets/not-mounted",
            },
        )
    message = str(caught.value)
    assert "OPENAI_API_KEY_FILE" in message and "/run/secrets/not-mounted" in message
    assert "mounted" in message


def test_both_the_variable_and_its_file_is_refused_without_showing_either(tmp_path: Path) -> None:
    key = secret(tmp_path, "openai", "sk-the-file-one-5566778899")
    with pytest.raises(ConfigError) as caught:
        load_settings(
            cwd=tmp_path,
            environ={
                "DEXTER_HOME": str(tmp_path / "home"),
                "OPENAI_API_KEY": "sk-the-env-one-1122334455",
                "OPENAI_API_KEY_FILE": str(key),
            },
        )
    message = str(caught.value)
    assert "Both OPENAI_API_KEY and OPENAI_API_KEY_FILE" in message
    assert "sk-the" not in message


@pytest.mark.parametrize(("text", "problem"), [("\n", "empty"), ("x" * 70_000, "larger")])
def test_an_empty_or_huge_file_is_refused(tmp_path: Path, text: str, problem: str) -> None:
    key = secret(tmp_path, "key", text)
    with pytest.raises(ConfigError, match=problem):
        load_settings(
            cwd=tmp_path,
            environ={"DEXTER_HOME": str(tmp_path / "home"), "OPENAI_API_KEY_FILE": str(key)},
        )


def test_unrelated_file_variables_keep_their_meaning(tmp_path: Path) -> None:
    # SSL_CERT_FILE names a certificate bundle for OpenSSL, not a secret for Dexter to read.
    cert = secret(tmp_path, "ca.pem", "-----BEGIN CERTIFICATE-----\n")
    settings = load_settings(
        cwd=tmp_path,
        environ={"DEXTER_HOME": str(tmp_path / "home"), "SSL_CERT_FILE": str(cert)},
    )
    assert "SSL_CERT" not in settings.env
    assert settings.env["SSL_CERT_FILE"] == str(cert)


def test_one_password_file_serves_the_database_server_and_dexter(tmp_path: Path) -> None:
    """compose.yaml hands Postgres and Dexter the same secret: the URL itself has no password."""
    from psycopg.conninfo import conninfo_to_dict

    password = secret(tmp_path, "postgres_password", "p@ss/w:rd%42\n")
    settings = load_settings(
        cwd=tmp_path,
        environ={
            "DEXTER_HOME": str(tmp_path / "home"),
            "DEXTER_DATABASE_URL": "postgresql://dexter@db:5432/dexter",
            "DEXTER_DATABASE_PASSWORD_FILE": str(password),
        },
    )
    target = database_target(settings)
    assert target.url is not None
    parsed = conninfo_to_dict(target.url)
    assert (parsed["user"], parsed["password"], parsed["host"]) == ("dexter", "p@ss/w:rd%42", "db")
    assert target.describe() == "postgresql://dexter:***@db:5432/dexter"
    # A URL that carries its own password keeps it.
    explicit = database_target(
        None,
        {
            "DEXTER_DATABASE_URL": "postgresql://dexter:own@db/dexter",
            "DEXTER_DATABASE_PASSWORD": "other",
        },
    )
    assert explicit.url == "postgresql://dexter:own@db/dexter"
