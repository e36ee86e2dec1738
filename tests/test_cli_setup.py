"""Setting Dexter up as a new user does: keys, the default model, a mistyped provider."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.config import ConfigError, load_settings
from dexter.providers import resolve_model
from tests import test_cli_keys_models_config as keys_tests

# The same temporary Dexter home, with no provider variables, as the keys and models tests.
home = keys_tests.home


def piped_bytes(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    # As a pipe arrives: bytes under a text layer that would decode them with surrogateescape.
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdin", stream)


@pytest.mark.parametrize(
    "typed",
    ["sk-...", "sk-…", "your-api-key", "<OPENAI_API_KEY>", "changeme"],
)
def test_keys_set_refuses_a_placeholder_from_the_docs(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], typed: str
) -> None:
    piped_bytes(monkeypatch, f"{typed}\n".encode())
    assert main(["keys", "set", "openai"]) == 2
    err = capsys.readouterr().err
    assert "placeholder" in err and "Nothing stored" in err and err.count("\n") == 1
    assert not (home / "keys.json").exists()


def test_keys_set_refuses_bytes_that_are_not_utf8_or_not_a_key(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    piped_bytes(monkeypatch, b"sk-abc\xff\xfedef\n")
    assert main(["keys", "set", "openai"]) == 2
    assert "not valid UTF-8 (byte 0xff at offset 6)" in capsys.readouterr().err
    piped_bytes(monkeypatch, "sk-abc déf\n".encode())
    assert main(["keys", "set", "openai"]) == 2
    assert "which no API key contains" in capsys.readouterr().err
    assert not (home / "keys.json").exists()

    piped_bytes(monkeypatch, b"sk-proj-Abc_123-xyz\n")
    assert main(["keys", "set", "openai"]) == 0
    assert json.loads((home / "keys.json").read_text()) == {"OPENAI_API_KEY": "sk-proj-Abc_123-xyz"}


def test_models_default_warns_about_a_model_the_provider_does_not_list(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "default", "nonsense"]) == 0
    captured = capsys.readouterr()
    assert "openai:nonsense" in captured.out  # saved, as asked
    assert "warning: 'nonsense' is not a model Dexter knows for OpenAI" in captured.err
    assert "a name without `provider:`" in captured.err

    assert main(["models", "default", "openai:gpt-5.6-sul"]) == 0
    assert "Did you mean openai:gpt-5.6-sol?" in capsys.readouterr().err

    assert main(["models", "default", "anthropic:claude-sonnet-4-6"]) == 0
    assert capsys.readouterr().err == ""


def test_a_local_server_model_is_not_doubted(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["models", "default", "openai:qwen3-8b"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["ask", "-m", "antropic:claude-sonnet-4-6", "hi"], "anthropic:claude-sonnet-4-6"),
        (["ask", "-m", "antropic", "hi"], "'anthropic'"),
        (["models", "default", "antropic:claude-sonnet-4-6"], "anthropic:claude-sonnet-4-6"),
        (["doctor", "-m", "olama:llama3"], "ollama:llama3"),
        (["keys", "set", "antropic"], "'anthropic'"),
    ],
)
def test_a_mistyped_provider_gets_the_same_did_you_mean_everywhere(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], suggestion: str
) -> None:
    code = main(argv)
    captured = capsys.readouterr()
    assert code in (1, 2)
    assert f"Did you mean {suggestion}" in " ".join((captured.out + captured.err).split())
    assert not (home / "settings.json").exists()


def test_the_model_switch_resolves_through_the_same_suggestion(home: Path) -> None:
    # `/model SPEC` in the interactive session switches through `resolve_model`.
    with pytest.raises(ConfigError, match="Did you mean deepseek:deepseek-v4-pro"):
        resolve_model("deepsek:deepseek-v4-pro", load_settings())
    # Names that are models, not typos of a provider, still resolve.
    assert resolve_model("deepseek-chat", load_settings()).provider.id == "deepseek"
    assert resolve_model("openrouter/auto", load_settings()).provider.id == "openai"


def _completions(script: str, *lines: str, env: dict[str, str]) -> list[str]:
    probe = [script, 't() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _dexter_complete; '
             'echo "${COMPREPLY[*]}"; }', *lines]  # fmt: skip
    result = subprocess.run(
        ["bash", "-c", "\n".join(probe)], capture_output=True, text=True, check=True, env=env
    )
    return result.stdout.splitlines()


def test_bash_completion_goes_past_positionals_into_option_values_and_ids(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter.store import open_store
    from dexter.store.sessions import SessionStore

    script = subprocess.run(
        [sys.executable, "-m", "dexter", "completion", "bash"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    # The script runs `dexter completion --ids …` for ids: a `dexter` on PATH, as installed.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dexter").write_text(f'#!/bin/sh\nexec {sys.executable} -m dexter "$@"\n')
    (bin_dir / "dexter").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    assert _completions(script, "t dexter report ''", env=env) == [""]
    assert not home.exists()  # asking for ids created nothing

    with open_store(home) as store:
        first = SessionStore(store).create("openai:gpt-test", "first")
        second = SessionStore(store).create("openai:gpt-test", "second")
    assert main(["cron", "add", "NVDA watch", "--every", "1h", "--message", "Check NVDA."]) == 0
    with open_store(home) as store:
        (job,) = [row[0] for row in store.query("SELECT id FROM cron_jobs WHERE kind = 'job'")]

    lines = _completions(
        script,
        "t dexter data in",
        "t dexter data income AAPL --pe",  # an option after a positional argument
        "t dexter data income AAPL --period ''",  # an option's choices
        "t dexter usage --by d",
        "t dexter report -f ''",
        "t dexter --resume ''",  # session ids
        "t dexter sessions rm ''",
        "t dexter report ''",
        "t dexter cron rm ''",  # job ids
        "t dexter ask --output ''",  # a file name: left to the shell's default
        env=env,
    )
    assert lines[:5] == [
        "income insider-trades",
        "--period",
        "annual quarterly ttm",
        "day",
        "md html pdf xlsx",
    ]
    for line in lines[5:8]:
        assert sorted(line.split()) == sorted([first, second])
    assert lines[8:] == [job, ""]


def test_fish_completion_offers_choices_and_ids() -> None:
    script = subprocess.run(
        [sys.executable, "-m", "dexter", "completion", "fish"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert (
        "complete -c dexter -n '__fish_seen_subcommand_from data; and "
        "__fish_seen_subcommand_from income' -l period -x -a 'annual quarterly ttm'"
    ) in script
    assert "-a '(dexter completion --ids sessions)'" in script
    assert "-a '(dexter completion --ids jobs)'" in script


def _on_a_terminal(
    argv: list[str], env: dict[str, str], *, typed: str = "", status: int = 0
) -> str:
    """What `dexter ARGV` writes to a terminal (a pseudo-terminal here), escape codes and all;
    `typed` is what the user types."""
    import pty

    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "dexter", *argv],
            stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True,
        )  # fmt: skip
        os.close(follower)
        if typed:
            os.write(leader, typed.encode())  # the terminal holds it until it is read
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is done
                break
            if not data:
                break
            chunks.append(data)
        assert process.wait(timeout=60) == status
    finally:
        os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("how", ["--no-color", "NO_COLOR=1"])
def test_no_color_means_no_escape_codes_at_all(home: Path, how: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env |= {"COLUMNS": "80", "TERM": "xterm-256color"}
    styled = _on_a_terminal(["keys", "list"], env)
    assert "\x1b[1m" in styled  # bold headers on a terminal, by default
    if how == "--no-color":
        plain = _on_a_terminal(["--no-color", "keys", "list"], env)
    else:
        plain = _on_a_terminal(["keys", "list"], {**env, "NO_COLOR": "1"})
    assert "\x1b[" not in plain
    assert "OPENAI_API_KEY" in plain


def _every_help(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    import argparse

    from dexter.cli.main import _parser

    monkeypatch.setenv("COLUMNS", "80")
    helps: dict[str, str] = {}

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        helps[path] = parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")

    walk(_parser(), "dexter")
    return helps


def test_every_help_fits_80_columns_and_wraps_whole_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    helps = _every_help(monkeypatch)
    assert len(helps) > 60
    for path, text in helps.items():
        lines = text.splitlines()
        assert [line for line in lines if len(line) > 80] == [], path
        # A line ending in a hyphen inside a word is a word cut in two (`YYYY-` / `MM-DD.md`).
        cut = [line for line in lines if re.search(r"\w-$", line)]
        assert cut == [], path
    memory = " ".join(helps["dexter memory"].split())
    assert "YYYY-MM-DD.md" in memory


def test_help_names_the_real_home_and_starts_sentences_with_capitals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import argparse

    from dexter.cli.main import _parser

    helps = _every_help(monkeypatch)
    everything = "\n".join(helps.values())
    assert "./.dexter" not in everything and ".dexter/settings.json" not in everything
    assert "~/.dexter" in " ".join(helps["dexter config"].split())

    def descriptions(parser: argparse.ArgumentParser) -> list[str]:
        found = [parser.description or ""]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found += descriptions(sub)
        return [text for text in found if text]

    for text in descriptions(_parser()):
        assert text[0].isupper() or text[0] in "`$", text
        # A new sentence starts with a capital too ("happened. exactly one of …" did not).
        assert not re.search(r"(?<!e\.g)(?<!i\.e)\. [a-z]", text), text


def test_config_edit_without_an_editor_or_a_terminal_says_so_instead_of_hanging(
    home: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VISUAL", "EDITOR")}
    result = subprocess.run(
        [sys.executable, "-m", "dexter", "config", "edit"],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60,  # a guard: before the fix, vi waited for keys forever
    )  # fmt: skip
    assert result.returncode == 2
    assert "no editor: set VISUAL or EDITOR" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not (home / "settings.json").exists()


def test_sessions_rm_asks_on_a_terminal_as_permissions_reset_does(home: Path) -> None:
    from dexter.store import open_store
    from dexter.store.sessions import SessionStore

    with open_store(home) as store:
        kept = SessionStore(store).create("openai:gpt-test", "Apple margins")
        gone = SessionStore(store).create("openai:gpt-test", "NVDA guidance")
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    declined = _on_a_terminal(["sessions", "rm", kept], env, typed="n\n", status=1)
    assert "Apple margins" in declined and "[y/N]" in declined and "Nothing deleted." in declined
    accepted = _on_a_terminal(["sessions", "rm", gone], env, typed="y\n")
    assert f"Removed session {gone}" in accepted
    with open_store(home) as store:
        assert [info.id for info in SessionStore(store).list()] == [kept]
    # --yes, and a script (stdin not a terminal), delete without asking.
    assert main(["sessions", "rm", kept, "--yes"]) == 0
