from __future__ import annotations

import pytest

from dexter.permissions.classify import is_read_only, write_flag_positions
from dexter.permissions.shell import Redirect, parse_command


def words(command: str) -> list[tuple[str, ...]]:
    parsed = parse_command(command)
    assert parsed.parseable, parsed.error
    return [segment.words for segment in parsed.segments]


def test_simple_words_quotes_and_escapes() -> None:
    assert words("ls -la /tmp") == [("ls", "-la", "/tmp")]
    assert words("cat 'a b' \"c d\" e\\ f") == [("cat", "a b", "c d", "e f")]
    assert words("c''at x") == [("cat", "x")]
    assert words("\\rm x") == [("rm", "x")]
    assert parse_command("/usr/bin/rm x").segments[0].base == "rm"


def test_compound_commands_split_on_every_operator() -> None:
    parsed = parse_command("a && b || c | d ; e & f |& g")
    assert [s.words[0] for s in parsed.segments] == ["a", "b", "c", "d", "e", "f", "g"]
    assert parsed.operators == ("&&", "||", "|", ";", "&", "|&")
    assert words("ls;") == [("ls",)]
    assert words("sleep 1 &") == [("sleep", "1")]


def test_quoted_operators_stay_inside_words() -> None:
    assert words("echo 'a;b' \"c|d\" e\\&f") == [("echo", "a;b", "c|d", "e&f")]
    assert words("grep '$(x)' f") == [("grep", "$(x)", "f")]
    assert words("find . ';' ls -delete") == [("find", ".", ";", "ls", "-delete")]


def test_redirections_are_recorded_not_words() -> None:
    segment = parse_command("ls -la > out.txt").segments[0]
    assert segment.words == ("ls", "-la")
    assert segment.redirects == (Redirect(">", "out.txt"),)
    assert segment.has_write_redirect
    segment = parse_command("ls 2>>err.log").segments[0]
    assert segment.words == ("ls",)
    assert segment.redirects == (Redirect(">>", "err.log", "2"),)
    assert parse_command("ls &> all").segments[0].has_write_redirect
    assert parse_command("echo x >| f").segments[0].has_write_redirect
    assert parse_command("cat x >& file").segments[0].has_write_redirect
    assert not parse_command("wc -l < data.csv").segments[0].has_write_redirect
    assert not parse_command("ls 2>/dev/null").segments[0].has_write_redirect


def test_fd_duplication_is_not_a_write_and_does_not_split() -> None:
    parsed = parse_command("ls 2>&1 | grep x")
    assert [s.words for s in parsed.segments] == [("ls",), ("grep", "x")]
    assert not parsed.segments[0].has_write_redirect
    assert parse_command("ls > out 2>&1").segments[0].has_write_redirect
    parsed = parse_command("ls 2>&1 && rm x")
    assert parsed.segments[1].words == ("rm", "x")
    # A quoted or attached digit is an argument, not a descriptor.
    assert words('echo "2">x') == [("echo", "2")]
    assert words("echo a2>x") == [("echo", "a2")]


def test_env_assignments_and_wrappers_are_stripped_per_segment() -> None:
    parsed = parse_command("FOO=1 BAR=2 ls -l && LANG=C sort x")
    first, second = parsed.segments
    assert first.env == (("FOO", "1"), ("BAR", "2")) and first.words == ("ls", "-l")
    assert second.env == (("LANG", "C"),) and second.words == ("sort", "x")
    for command in (
        "time ls",
        "nice -n 5 ls",
        "nice -5 ls",
        "nohup ls",
        "timeout 5 ls",
        "timeout 5s ls",
        "timeout -s KILL 1m ls",
        "command ls",
        "env ls",
        "stdbuf -oL ls",
        "ionice -c 3 ls",
    ):
        assert words(command) == [("ls",)], command
    segment = parse_command("env -i FOO=bar ls").segments[0]
    assert segment.env == (("FOO", "bar"),) and segment.words == ("ls",)
    # Unknown wrapper options: the wrapper is the command (and not read-only).
    assert words("env -S 'rm x'") == [("env", "-S", "rm x")]
    assert words("env") == [("env",)]


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("echo $(id)", "substitution"),
        ("echo `id`", "substitution"),
        ("echo ${HOME}", "substitution"),
        ("echo $HOME", "substitution"),
        ('echo "$HOME"', "substitution"),
        ("$'\\x72m' x", "substitution"),
        ("diff <(ls) x", "process substitution"),
        ("tee >(sh)", "process substitution"),
        ("cat <<EOF", "here-document"),
        ("cat <<<x", "here-document"),
        ("{ ls; }", "brace"),
        ("(ls)", "subshell"),
        ("ls # c", "comment"),
        ("ls 'x", "unterminated"),
        ('ls "x', "unterminated"),
        ("", "empty"),
        ("  ", "empty"),
        ("ls\nrm", "newline"),
        ("ls \\\nrm", "newline"),
        ("ls *.py", "glob"),
        ("ls\u200b", "invisible"),
        ("ls ~root", "tilde"),
        ("ls ;; x", "operator"),
        ("ls >", "redirection"),
        ("ls > | x", "redirection"),
    ],
)
def test_fail_closed(command: str, reason: str) -> None:
    parsed = parse_command(command)
    assert not parsed.parseable
    assert parsed.error is not None and reason in parsed.error


def test_quoted_metacharacters_are_literal() -> None:
    assert words("echo '$x' '*.py' '# no' '~root'") == [("echo", "$x", "*.py", "# no", "~root")]
    assert words("find . -name '*.ts'") == [("find", ".", "-name", "*.ts")]


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "find . -name x",
        "git diff HEAD",
        "git log --oneline",
        "npm ls",
        "du -sh .",
        "sort -k2 x",
        "grep -r x .",
        "/usr/bin/cat x",
        "LANG=C ls",
        "awk 1 x",
        "sed -n 1p x",
    ],
)
def test_read_only(command: str) -> None:
    assert is_read_only(parse_command(command).segments[0])


@pytest.mark.parametrize(
    "command",
    [
        "rm x",
        "mv a b",
        "cp a b",
        "touch x",
        "mkdir x",
        "chmod 600 x",
        "ln -s a b",
        "python3 x.py",
        "node x.js",
        "bash x.sh",
        "eval ls",
        "xargs ls",
        "awk '{print > \"out\"}' x",
        "sed -n 'w out' x",
        "tee x",
        "dd if=a of=b",
        "git push",
        "git commit -m x",
        "git -c a=b log",
        "npm install",
        "find . -delete",
        "find . -exec ls ';'",
        "find . -fprint0 x",
        "sort -o x y",
        "sort --output=x y",
        "sort -uox y",
        "echo hi > x",
        "curl https://x",
        "wget https://x",
        "unknowncmd",
        "./ls",
        "FOO=1 ls",
        "tail -f log",
        "printenv",
        "git diff --output=x",
        "git branch -d x",
    ],
)
def test_not_read_only(command: str) -> None:
    assert not is_read_only(parse_command(command).segments[0])


def test_write_flag_positions_point_at_the_flag() -> None:
    assert write_flag_positions(("sort", "-u", "-o", "x")) == [2]
    assert write_flag_positions(("git", "-c", "a=b", "log")) == [1]
    assert write_flag_positions(("git", "log", "-c")) == []
    assert write_flag_positions(("find", ".", "-name", "x", "-delete")) == [4]
    assert write_flag_positions(("ls", "-la")) == []
