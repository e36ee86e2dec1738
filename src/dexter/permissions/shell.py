"""A fail-closed lexer for shell commands.

It never expands anything. A pre-scan walks the text with the shell's quoting rules and refuses
(marks *unparseable*) everything whose meaning depends on expansion or on syntax we do not model:
`$` outside single quotes (variables, `$(...)`, `${...}`, `$'...'`), backticks, here-documents,
process substitution and other parentheses, braces, unquoted globs, comments, unbalanced quotes,
newlines (so line continuations too) and invisible or control characters. Unparseable commands are
never auto-allowed and never cached for the session.

The pre-scan also splits the text at unquoted operators, so a quoted `;` or `|` can never be
mistaken for one; each stretch of text between operators is split into words the way a POSIX
shell would (quotes and backslashes removed), in one linear pass (`shlex` builds tokens by string
concatenation, which is quadratic on long words).
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

SEPARATORS = frozenset({"|", "||", "&&", ";", "&", "|&"})
WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
REDIRECTS = WRITE_REDIRECTS | {"<", ">&", "<&"}
_OPERATOR_CHARS = frozenset(";<>|&")
# Redirecting to this never changes a file. Not /dev/stdout or /dev/fd/N: after `1<file` those
# *are* the file (`1<f >/dev/stdout` truncates f).
HARMLESS_SINKS = frozenset({"/dev/null"})
# Longer commands are refused unread (the lexer is linear, but nobody reviews 128 KiB of shell).
MAX_COMMAND_CHARS = 128 * 1024

ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)
_DURATION = re.compile(r"\d+(?:\.\d+)?[smhd]?")
_NUMBER = re.compile(r"-?\d+")
# Where a command named by an absolute path is still the standard program of that name.
STANDARD_BIN_DIRS = frozenset(
    {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/opt/homebrew/bin"}
)


class Unparseable(Exception):
    """The command uses shell syntax the lexer refuses to interpret."""


@dataclass(frozen=True, slots=True)
class Redirect:
    op: str
    target: str
    fd: str | None = None

    @property
    def is_write(self) -> bool:
        if self.op in ("<", "<&"):
            return False
        if self.op == ">&":
            # `>&2` duplicates a descriptor; `>&file` is bash for `&>file`.
            return not (self.target.isdigit() or self.target == "-")
        return self.target not in HARMLESS_SINKS


@dataclass(frozen=True, slots=True)
class Segment:
    """One simple command of a pipeline or list."""

    # The command and its arguments, after leading env assignments and wrappers are removed.
    words: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    # Wrapper commands removed from the front, with their options (`timeout 5`, `nice -n 5`).
    wrappers: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    # Every word as lexed: assignments, wrappers, command, arguments (not redirect targets).
    all_words: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        return self.words[0] if self.words else ""

    @property
    def base(self) -> str:
        return posixpath.basename(self.command)

    @property
    def args(self) -> tuple[str, ...]:
        return self.words[1:]

    @property
    def has_write_redirect(self) -> bool:
        return any(redirect.is_write for redirect in self.redirects)


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    text: str
    segments: tuple[Segment, ...] = ()
    # operators[i] joins segments[i] and segments[i + 1].
    operators: tuple[str, ...] = ()
    # Why the command is unparseable; None when it parsed.
    error: str | None = None
    # Ended with `&`: the last command runs in the background.
    background: bool = False

    @property
    def parseable(self) -> bool:
        return self.error is None


def command_name(word: str) -> str | None:
    """The program a command word runs: bare names as-is, standard bin paths by basename.

    `./ls` or `/tmp/x/cat` are somebody's own programs, so they have no standard name (None).
    """
    if "/" not in word:
        return word
    directory, name = posixpath.split(word)
    if posixpath.normpath(directory) in STANDARD_BIN_DIRS and name:
        return name
    return None


def parse_command(text: str) -> ParsedCommand:
    """Lex `text` into segments, or report why it can't be trusted (`error`)."""
    if len(text) > MAX_COMMAND_CHARS:
        return ParsedCommand(text, error=f"longer than {MAX_COMMAND_CHARS // 1024} KiB")
    try:
        items = _prescan(text)
        segments, operators, background = _segments(items)
    except Unparseable as exc:
        return ParsedCommand(text, error=str(exc))
    return ParsedCommand(text, tuple(segments), tuple(operators), background=background)


def split_words(text: str) -> list[str]:
    """Words of `text` with POSIX shell quoting removed (no expansion); ValueError when a quote
    is not closed. Linear in the length of `text`."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in " \t\n":
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
            i += 1
            continue
        in_word = True
        if char == "\\":
            if i + 1 >= n:
                raise ValueError("no escaped character")
            current.append(text[i + 1])
            i += 2
        elif char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ValueError("no closing quotation")
            current.append(text[i + 1 : end])
            i = end + 1
        elif char == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    current.append(text[i + 1])
                    i += 2
                else:
                    current.append(text[i])
                    i += 1
            if i >= n:
                raise ValueError("no closing quotation")
            i += 1
        else:
            current.append(char)
            i += 1
    if in_word:
        words.append("".join(current))
    return words


def _trailing_fd(raw: str) -> str | None:
    """The descriptor number written right before a redirection operator (`2>`), if any."""
    end = len(raw)
    start = end
    while start > 0 and raw[start - 1].isdigit():
        start -= 1
    if start == end or (start > 0 and raw[start - 1] not in " \t"):
        return None
    return raw[start:end]


def _check_characters(text: str) -> None:
    for char in text:
        if char in "\n\r":
            raise Unparseable("newline or line continuation")
        if char in " \t":
            continue
        category = unicodedata.category(char)
        if category[0] in "CZ":
            raise Unparseable(f"invisible or control character U+{ord(char):04X}")


def _prescan(text: str) -> list[tuple[str, str]]:
    """Split at unquoted operators into ("words", raw text) and ("op", operator) items."""
    _check_characters(text)
    items: list[tuple[str, str]] = []
    buf: list[str] = []
    quote: str | None = None
    i, n = 0, len(text)

    def word_start() -> bool:
        return not buf or buf[-1] in " \t"

    while i < n:
        char = text[i]
        if quote == "'":
            buf.append(char)
            quote = None if char == "'" else quote
            i += 1
            continue
        if quote == '"':
            if char == "\\":
                if i + 1 >= n:
                    raise Unparseable("unterminated quote")
                buf.append(text[i : i + 2])
                i += 2
                continue
            if char in "$`":
                raise Unparseable("variable or command substitution")
            buf.append(char)
            quote = None if char == '"' else quote
            i += 1
            continue
        if char == "\\":
            if i + 1 >= n:
                raise Unparseable("trailing backslash")
            buf.append(text[i : i + 2])
            i += 2
            continue
        if char in "'\"":
            quote = char
            buf.append(char)
        elif char in "$`":
            raise Unparseable("variable or command substitution")
        elif char in "()":
            raise Unparseable("subshell, grouping or process substitution")
        elif char in "{}":
            raise Unparseable("brace expansion or grouping")
        elif char in "*?[":
            raise Unparseable("glob pattern")
        elif char == "#" and word_start():
            raise Unparseable("comment")
        elif char == "~" and word_start() and i + 1 < n and text[i + 1] not in "/ \t;<>|&":
            raise Unparseable("tilde expansion")
        elif char in _OPERATOR_CHARS:
            j = i
            while j < n and text[j] in _OPERATOR_CHARS:
                j += 1
            if buf:
                items.append(("words", "".join(buf)))
                buf = []
            items.append(("op", text[i:j]))
            i = j
            continue
        else:
            buf.append(char)
        i += 1
    if quote is not None:
        raise Unparseable("unterminated quote")
    if buf:
        items.append(("words", "".join(buf)))
    return items


def _segments(items: list[tuple[str, str]]) -> tuple[list[Segment], list[str], bool]:
    segments: list[Segment] = []
    operators: list[str] = []
    words: list[str] = []
    redirects: list[Redirect] = []
    pending: tuple[str, str | None] | None = None
    previous_raw: str | None = None

    def close() -> None:
        if not words and not redirects:
            raise Unparseable("empty command")
        segments.append(_segment(words, redirects))
        words.clear()
        redirects.clear()

    for kind, value in items:
        if kind == "words":
            try:
                split = split_words(value)
            except ValueError as exc:
                raise Unparseable(f"cannot split words ({exc})") from exc
            if pending is not None:
                if not split:
                    raise Unparseable("redirection without a target")
                redirects.append(Redirect(pending[0], split[0], pending[1]))
                split = split[1:]
                pending = None
            words.extend(split)
            previous_raw = value
            continue
        op = value
        if pending is not None:
            raise Unparseable("redirection without a target")
        if "<<" in op:
            raise Unparseable("here-document or here-string")
        if op in REDIRECTS:
            fd: str | None = None
            number = _trailing_fd(previous_raw or "")
            if number is not None and words and words[-1] == number:
                fd = words.pop()
            pending = (op, fd)
        elif op in SEPARATORS:
            close()
            operators.append(op)
        else:
            raise Unparseable(f"unsupported operator {op!r}")
        previous_raw = None
    if pending is not None:
        raise Unparseable("redirection without a target")
    background = False
    if not words and not redirects:
        # `ls;` ends with a terminator; `sleep 1 &` with a background operator.
        if operators and operators[-1] in (";", "&"):
            background = operators.pop() == "&"
        else:
            raise Unparseable("empty command")
    else:
        close()
    return segments, operators, background


@dataclass(frozen=True, slots=True)
class _Wrapper:
    flags: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()
    numeric_flag: bool = False
    assignments: bool = False
    positional: re.Pattern[str] | None = None


_WRAPPERS: dict[str, _Wrapper] = {
    "time": _Wrapper(flags=frozenset({"-p"})),
    "nohup": _Wrapper(),
    "builtin": _Wrapper(),
    "command": _Wrapper(),
    "nice": _Wrapper(valued=frozenset({"-n", "--adjustment"}), numeric_flag=True),
    "timeout": _Wrapper(
        flags=frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
        valued=frozenset({"-s", "-k", "--signal", "--kill-after"}),
        positional=_DURATION,
    ),
    "stdbuf": _Wrapper(valued=frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "ionice": _Wrapper(flags=frozenset({"-t"}), valued=frozenset({"-c", "-n"})),
    "setsid": _Wrapper(flags=frozenset({"-f", "-w", "--fork", "--wait"})),
    "env": _Wrapper(
        flags=frozenset({"-i", "--ignore-environment", "-"}),
        valued=frozenset({"-u", "--unset"}),
        assignments=True,
    ),
}


def _skip_wrapper(
    spec: _Wrapper, words: list[str], i: int, record: Callable[[str, str], None]
) -> int | None:
    """Index of the wrapped command, or None when the wrapper's options aren't understood."""
    n = len(words)
    found: list[tuple[str, str]] = []
    while i < n:
        word = words[i]
        match = ASSIGNMENT.fullmatch(word) if spec.assignments else None
        if match:
            found.append((match.group(1), match.group(2)))
            i += 1
        elif word == "--":
            i += 1
            break
        elif not word.startswith("-") or (word == "-" and "-" not in spec.flags):
            break
        elif word in spec.flags or (spec.numeric_flag and _NUMBER.fullmatch(word)):
            i += 1
        elif word in spec.valued:
            if i + 1 >= n:
                return None
            i += 2
        elif word.startswith("--") and word.split("=", 1)[0] in spec.valued and "=" in word:
            i += 1
        elif not word.startswith("--") and len(word) > 2 and word[:2] in spec.valued:
            i += 1
        else:
            return None
    while spec.assignments and i < n and (match := ASSIGNMENT.fullmatch(words[i])):
        found.append((match.group(1), match.group(2)))
        i += 1
    if spec.positional is not None:
        if i >= n or not spec.positional.fullmatch(words[i]):
            return None
        i += 1
    if i >= n:
        return None  # nothing wrapped: the wrapper itself is the command (`env`, `time`)
    for name, value in found:
        record(name, value)
    return i


def _segment(words: list[str], redirects: list[Redirect]) -> Segment:
    env: list[tuple[str, str]] = []
    i = 0
    while i < len(words) and (match := ASSIGNMENT.fullmatch(words[i])):
        env.append((match.group(1), match.group(2)))
        i += 1
    start_wrappers = i
    while i < len(words):
        name = command_name(words[i])
        spec = _WRAPPERS.get(name) if name is not None else None
        if spec is None:
            break
        after = _skip_wrapper(spec, words, i + 1, lambda k, v: env.append((k, v)))
        if after is None:
            break
        i = after
    return Segment(
        words=tuple(words[i:]),
        env=tuple(env),
        wrappers=tuple(words[start_wrappers:i]),
        redirects=tuple(redirects),
        all_words=tuple(words),
    )
