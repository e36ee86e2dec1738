"""What a parsed shell command does: read-only or not, write-capable flags, and the deny floor.

The read-only classifier is an allowlist: a segment is read-only only when its program is a known
reader (named plainly or by a standard bin path) whose arguments carry no write-capable flag, it
has no output redirection to a file, and it sets no environment variable beyond a few harmless
ones. Anything else is "might change something" and is asked about.

The deny floor cannot be overridden by any rule: secret files, environment injection, deleting or
re-permissioning `/` or home, formatting disks, writing devices, fork bombs, piping downloaded or
decoded text into a shell, and writing shell startup files or Dexter's own settings.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence

from dexter.permissions.readonly import words_reason
from dexter.permissions.secrets import (
    SHELL_RC_FILES,
    is_dexter_settings,
    is_protected_path,
    is_shell_rc,
    mentions_secret,
)
from dexter.permissions.shell import (
    ASSIGNMENT,
    MAX_COMMAND_CHARS,
    ParsedCommand,
    Redirect,
    Segment,
    command_name,
    parse_command,
)

__all__ = [
    "SHELL_RC_FILES",
    "command_is_read_only",
    "command_not_read_only_reason",
    "floor_reason",
    "is_dexter_settings",
    "is_protected_path",
    "is_read_only",
    "is_shell_rc",
    "mentions_secret",
    "not_read_only_reason",
    "write_flag_positions",
]

# --- environment -------------------------------------------------------------------------------

_SENSITIVE_ENV = frozenset(
    {
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "PATH",
        "IFS",
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "CDPATH",
        "PERL5LIB",
        "PERL5OPT",
        "PERLLIB",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PYTHONINSPECT",
        "NODE_OPTIONS",
        "NODE_PATH",
        "RUBYOPT",
        "RUBYLIB",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_EXTERNAL_DIFF",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_DIR",
        "GIT_CONFIG",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_PROXY_COMMAND",
        "PAGER",
        "MANPAGER",
        "EDITOR",
        "VISUAL",
        "LESSOPEN",
        "LESSCLOSE",
        "BROWSER",
        "HOME",
        "ZDOTDIR",
    }
)
_SENSITIVE_ENV_PATTERN = re.compile(r"(DYLD_.*|GIT_CONFIG_(KEY|VALUE)_\d+|LD_.*)")
# Assignments that only change formatting; any other makes a command "not read-only".
_HARMLESS_ENV = frozenset(
    {"LANG", "LANGUAGE", "TZ", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "COLUMNS", "LINES", "TERM"}
)


def sensitive_env(name: str) -> bool:
    """A variable that can make an ordinary program load or run someone else's code."""
    upper = name.upper()
    return upper in _SENSITIVE_ENV or bool(_SENSITIVE_ENV_PATTERN.fullmatch(upper))


def env_is_harmless(env: Sequence[tuple[str, str]]) -> bool:
    return all(name in _HARMLESS_ENV or name.startswith("LC_") for name, _ in env)


# --- secrets and protected files (one policy: dexter.permissions.secrets) ------------------------

_protected_write_target = is_protected_path


# --- write-capable flags (for prefix rules) ----------------------------------------------------


def _short_cluster(arg: str) -> bool:
    return len(arg) > 1 and arg[0] == "-" and arg[1] != "-"


def _long_names(arg: str) -> str:
    return arg.split("=", 1)[0]


def _long_hit(arg: str, names: frozenset[str]) -> bool:
    """`arg` is one of `names` or an abbreviation of one (GNU and git accept unique prefixes)."""
    if not arg.startswith("--") or len(arg) < 3:
        return False
    key = _long_names(arg)
    return any(name.startswith(key) for name in names)


def write_flag_positions(words: Sequence[str]) -> list[int]:
    """Indexes of words that make a command write, run programs, or print secrets.

    Used so a prefix rule such as `Bash(sort:*)` never covers `sort -o ~/.bashrc` (or
    `sort --out=~/.bashrc`, or `sort -uo …`). Abbreviated long options count as the option they
    abbreviate; short options are read in clusters.
    """
    if not words:
        return []
    name = command_name(words[0]) or ""
    positions: list[int] = []
    for index, arg in enumerate(words[1:], start=1):
        if _long_hit(arg, _GENERIC_WRITE_LONG):
            positions.append(index)
    specific = _WRITE_FLAGS.get(name)
    if specific is not None:
        positions.extend(specific(words))
    return sorted(set(positions))


_GENERIC_WRITE_LONG = frozenset(
    {"--output", "--output-file", "--outfile", "--out-file", "--output-document", "--in-place"}
)
_FIND_ACTIONS = frozenset(
    {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}
)


def _flags(
    *,
    exact: frozenset[str] = frozenset(),
    long: frozenset[str] = frozenset(),
    letters: str = "",
) -> Callable[[Sequence[str]], list[int]]:
    def positions(words: Sequence[str]) -> list[int]:
        found: list[int] = []
        for index, arg in enumerate(words[1:], start=1):
            if arg == "--":
                break
            if arg in exact or _long_hit(arg, long):
                found.append(index)
            elif _short_cluster(arg) and any(
                c in letters or f"-{c}" in exact for c in _cluster_letters(arg)
            ):
                found.append(index)
        return found

    return positions


def _cluster_letters(arg: str) -> str:
    return arg[1:]


def _find_flags(words: Sequence[str]) -> list[int]:
    return [i for i, arg in enumerate(words) if i > 0 and arg in _FIND_ACTIONS]


_GIT_WRITE_LONG = frozenset(
    {
        "--output",
        "--ext-diff",
        "--open-files-in-pager",
        "--upload-pack",
        "--receive-pack",
        "--exec",
        "--textconv",
        "--filters",
        "--exec-path",
        "--git-dir",
        "--work-tree",
        "--config-env",
        "--paginate",
    }
)


def _git_flags(words: Sequence[str]) -> list[int]:
    found: list[int] = []
    i = 1
    while i < len(words) and words[i].startswith("-"):
        if words[i] == "-C":
            i += 2
            continue
        if words[i] not in ("--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs"):
            found.append(i)
        i += 2 if words[i] in ("-c", "--config-env", "--git-dir", "--work-tree") else 1
    sub = words[i] if i < len(words) else ""
    for index in range(i + 1, len(words)):
        arg = words[index]
        if _long_hit(arg, _GIT_WRITE_LONG):
            found.append(index)
        elif sub == "grep" and _short_cluster(arg) and "O" in _grep_letters(arg):
            found.append(index)
    return found


def _grep_letters(arg: str) -> str:
    # Letters before one that takes a value (`-e`, `-f`, `-A` …) are options; the rest is a value.
    letters = ""
    for char in arg[1:]:
        letters += char
        if char in "efABCm":
            break
    return letters


def _uniq_flags(words: Sequence[str]) -> list[int]:
    positional = [i for i, arg in enumerate(words) if i > 0 and not arg.startswith("-")]
    return positional[1:2]  # `uniq IN OUT` writes OUT


def _env_reading(words: Sequence[str]) -> list[int]:
    return [i for i, arg in enumerate(words) if i > 0 and "env" in arg.lower()]


_WRITE_FLAGS: dict[str, Callable[[Sequence[str]], list[int]]] = {
    "find": _find_flags,
    "sort": _flags(
        exact=frozenset({"-o"}),
        long=frozenset({"--output", "--compress-program", "--temporary-directory"}),
        letters="oT",
    ),
    "git": _git_flags,
    "sed": _flags(long=frozenset({"--in-place", "--file"}), letters="if"),
    "perl": _flags(letters="i"),
    "yq": _flags(long=frozenset({"--inplace"}), letters="i"),
    "tree": _flags(exact=frozenset({"-o"})),
    "file": _flags(exact=frozenset({"-C"}), long=frozenset({"--compile"})),
    "date": _flags(long=frozenset({"--set"}), letters="s"),
    "rg": _flags(long=frozenset({"--pre", "--pre-glob", "--search-zip"}), letters="z"),
    "ag": _flags(long=frozenset({"--pager"})),
    "uniq": _uniq_flags,
    "curl": _flags(
        long=frozenset({"--remote-name", "--upload-file", "--config", "--remote-name-all"}),
        letters="oOTK",
    ),
    "wget": _flags(long=frozenset({"--output-file", "--append-output"}), letters="oOa"),
    "tar": _flags(
        long=frozenset(
            {
                "--extract",
                "--create",
                "--append",
                "--update",
                "--delete",
                "--to-command",
                "--use-compress-program",
                "--checkpoint-action",
                "--get",
                "--info-script",
                "--new-volume-script",
                "--rsh-command",
            }
        ),
        letters="xcruAIF",
    ),
    "jq": _env_reading,
    "tail": _flags(long=frozenset({"--follow"}), letters="fF"),
    "npm": _flags(long=frozenset({"--registry", "--userconfig", "--globalconfig", "--prefix"})),
    "printf": _flags(letters="v"),
}


# --- the read-only classifier ------------------------------------------------------------------

# Sinks that are not files: the only write redirection a read-only command may have.
_NULL = "/dev/null"
# Readable devices that are not files, sockets or other processes' descriptors.
_READABLE_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"})
# Wrappers that make the command outlive the call or leave its process group.
BACKGROUND_WRAPPERS = frozenset({"nohup", "setsid", "disown"})


def redirect_reason(redirect: Redirect) -> str | None:
    """Why a redirection makes a segment not read-only, or None."""
    target = redirect.target
    if redirect.op in (">&", "<&") and (target.isdigit() or target == "-"):
        return None  # duplicating or closing a descriptor opens nothing
    normal = posixpath.normpath(target) if target.startswith("/") else target
    if redirect.is_write:
        if target == _NULL:
            return None
        return f"writes {target} through redirection"
    if target.startswith(("/dev/", "/proc/")) or normal.startswith(("/dev/", "/proc/")):
        if target in _READABLE_DEVICES:
            return None
        return f"redirects from {target}, which is not a plain file"
    return None


def not_read_only_reason(segment: Segment) -> str | None:
    """None when the segment is read-only, else a short reason it isn't."""
    for redirect in segment.redirects:
        reason = redirect_reason(redirect)
        if reason is not None:
            return reason
    if not segment.words:
        return "only a redirection or an assignment"
    if not env_is_harmless(segment.env):
        return "sets environment variables"
    wrappers = {command_name(word) for word in segment.wrappers}
    background = wrappers & BACKGROUND_WRAPPERS
    if background:
        return f"`{sorted(w for w in background if w)[0]}` keeps the command running after the call"
    name = command_name(segment.command)
    if name is None:
        return f"runs a program by path ({segment.command})"
    if not name.isascii():
        return "program name has non-ASCII characters"
    if name in BACKGROUND_WRAPPERS:
        return f"`{name}` keeps the command running after the call"
    return words_reason(name, segment.words)


def is_read_only(segment: Segment) -> bool:
    return not_read_only_reason(segment) is None


def command_not_read_only_reason(parsed: ParsedCommand) -> str | None:
    """Why a whole command is not read-only (segments, background operators, length), or None."""
    if not parsed.parseable:
        return parsed.error or "unparseable"
    if len(parsed.text) > MAX_COMMAND_CHARS:
        return f"longer than {MAX_COMMAND_CHARS // 1024} KiB"
    if "&" in parsed.operators or parsed.background:
        return "runs in the background (`&`)"
    for segment in parsed.segments:
        reason = not_read_only_reason(segment)
        if reason is not None:
            return reason
    return None


def command_is_read_only(parsed: ParsedCommand) -> bool:
    return command_not_read_only_reason(parsed) is None


# --- the deny floor ----------------------------------------------------------------------------

# Words after which the next words may be a command that runs (`sudo rm`, `xargs rm`).
RUNNERS = frozenset(
    {
        "sudo",
        "doas",
        "su",
        "runuser",
        "xargs",
        "exec",
        "find",
        "watch",
        "nice",
        "nohup",
        "timeout",
        "env",
        "time",
        "command",
        "builtin",
        "strace",
        "ltrace",
        "chroot",
        "unshare",
        "nsenter",
        "flock",
        "parallel",
        "setsid",
        "stdbuf",
        "ionice",
        "script",
        "busybox",
        "eval",
        "then",
        "do",
        "else",
        "if",
        "while",
        "until",
    }
)
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "csh", "tcsh"})
INTERPRETERS = SHELLS | {
    "python", "python3", "python2", "perl", "ruby", "node", "php", "lua", "deno", "bun", "pwsh",
    "osascript", "source", ".",
}  # fmt: skip
FETCHERS = frozenset(
    {
        "curl",
        "wget",
        "fetch",
        "nc",
        "ncat",
        "netcat",
        "socat",
        "aria2c",
        "http",
        "https",
        "lwp-request",
        "GET",
        "ftp",
        "tftp",
        "scp",
        "rsync",
        "ssh",
    }
)
DECODERS = frozenset(
    {
        "base64",
        "base32",
        "basenc",
        "xxd",
        "openssl",
        "uudecode",
        "gunzip",
        "zcat",
        "gzip",
        "bzip2",
        "bunzip2",
        "xz",
        "unxz",
        "rev",
        "tr",
        "echo",
        "printf",
    }
)
_DISK_FORMATTERS = re.compile(r"mkfs(\..*)?|mke2fs|mkswap|wipefs|fdisk|sfdisk|parted|newfs.*")
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_DANGEROUS_TARGETS = frozenset(
    {
        "/",
        "~",
        "*",
        "/*",
        "~/*",
        "$HOME",
        "${HOME}",
        "/home",
        "/Users",
        "/usr",
        "/etc",
        "/var",
        "/bin",
        "/sbin",
        "/lib",
        "/boot",
        "/System",
        "/Library",
        "/opt",
        "/root",
        "/dev",
        "/proc",
    }
)
_SAFE_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty"})
FORK_BOMB = re.compile(r"(\S+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1")


def _normalise_target(arg: str) -> str:
    if arg.startswith("~"):
        rest = posixpath.normpath("/" + arg[1:].lstrip("/"))
        return "~" if rest == "/" else "~" + rest
    if arg.startswith("/"):
        normal = posixpath.normpath(arg)
        return "/" if normal == "//" else normal
    return arg


def _command_positions(words: Sequence[str]) -> list[int]:
    positions = [0]
    runner_seen = False
    for index, word in enumerate(words):
        if index > 0 and runner_seen:
            positions.append(index)
        if posixpath.basename(word) in RUNNERS or word in ("-exec", "-execdir", "-ok", "-okdir"):
            runner_seen = True
    return positions


def command_suffixes(words: Sequence[str]) -> list[tuple[str, ...]]:
    """Every word list that may be a command run by this segment (`sudo rm x` -> also `rm x`)."""
    return [tuple(words[index:]) for index in _command_positions(words)]


def _destructive_reason(words: Sequence[str]) -> str | None:
    for index in _command_positions(words):
        if index >= len(words):
            continue
        name = posixpath.basename(words[index])
        args = words[index + 1 :]
        targets = [_normalise_target(arg) for arg in args if not arg.startswith("-")]
        if name == "rm":
            if "--no-preserve-root" in args:
                return "deletes with --no-preserve-root"
            hit = next((t for t in targets if t in _DANGEROUS_TARGETS), None)
            if hit is not None:
                return f"deletes {hit}"
        elif name in ("chmod", "chown", "chgrp"):
            hit = next((t for t in targets if t in _DANGEROUS_TARGETS), None)
            if hit is not None:
                return f"changes permissions or ownership of {hit}"
        elif _DISK_FORMATTERS.fullmatch(name):
            return "formats or repartitions a disk"
        elif name in _POWER:
            return "shuts down or restarts the machine"
        elif name == "dd":
            for arg in args:
                if arg.startswith("of=/dev/") and arg[3:] not in _SAFE_DEVICES:
                    return "writes directly to a device"
        elif name == "shred" and any(t.startswith("/dev/") for t in targets):
            return "shreds a device"
        elif name in ("export", "declare", "typeset", "readonly", "local"):
            for arg in args:
                match = ASSIGNMENT.fullmatch(arg)
                if match and sensitive_env(match.group(1)):
                    return f"sets {match.group(1)}, which can make programs run other code"
    return None


def _nested_scripts(words: Sequence[str]) -> list[str]:
    """Command strings run by this segment: `bash -c "…"`, `eval …`, `su -c …`, `env -S …`."""
    scripts: list[str] = []
    for index, word in enumerate(words):
        name = posixpath.basename(word)
        rest = words[index + 1 :]
        if name == "eval" and rest:
            scripts.append(" ".join(rest))
        elif name in SHELLS or name in ("su", "runuser"):
            for offset, arg in enumerate(rest[:-1]):
                if _short_cluster(arg) and "c" in arg[1:]:
                    scripts.append(rest[offset + 1])
                    break
        elif name == "env":
            for offset, arg in enumerate(rest[:-1]):
                if arg in ("-S", "--split-string"):
                    scripts.append(rest[offset + 1])
                    break
            scripts.extend(
                arg.split("=", 1)[1] for arg in rest if arg.startswith("--split-string=")
            )
    return scripts


def _reads_program_from_stdin(segment: Segment) -> bool:
    for index, word in enumerate(segment.words):
        if posixpath.basename(word) in INTERPRETERS:
            rest = segment.words[index + 1 :]
            return all(arg.startswith("-") for arg in rest) or "-s" in rest or "-" in rest
    return False


def _path_candidates(word: str) -> list[str]:
    """The paths a word may name: itself, `--opt=PATH`, `of=PATH`, `-oPATH`."""
    found = [word]
    if "=" in word:
        found.append(word.split("=", 1)[1])
    if len(word) > 2 and word[0] == "-" and word[1] != "-":
        found.append(word[2:])
    return found


def _join(base: str, path: str) -> str:
    if not base or path.startswith(("/", "~")):
        return path
    return posixpath.join(base, path)


def _protected_word(word: str, base: str) -> str | None:
    for candidate in _path_candidates(word):
        if not candidate:
            continue
        if is_protected_path(candidate):
            return candidate
        if is_protected_path(_join(base, candidate)):
            return _join(base, candidate)
    return None


_NETWORK_DEVICES = ("/dev/tcp/", "/dev/udp/")


def _segment_floor(segment: Segment, depth: int, base: str = "") -> str | None:
    for name, _ in segment.env:
        if sensitive_env(name):
            return f"sets {name}, which can make programs run other code"
    for word in (*segment.all_words, *(r.target for r in segment.redirects)):
        # `cd .dexter && cat keys.json`: a relative path is also read under the `cd` target.
        if mentions_secret(word) or (base and mentions_secret(_join(base, word))):
            return f"touches a secret file ({word})"
    for redirect in segment.redirects:
        target = posixpath.normpath(redirect.target) if redirect.target.startswith("/") else ""
        if redirect.target.startswith(_NETWORK_DEVICES) or target.startswith(_NETWORK_DEVICES):
            return f"opens a network connection through {redirect.target}"
        if not redirect.is_write:
            continue
        hit = _protected_word(redirect.target, base)
        if hit is not None:
            return f"writes {hit}, which only Dexter's own commands may change"
        if target.startswith("/dev/") and target not in _SAFE_DEVICES:
            if not target.startswith("/dev/fd/"):
                return "writes directly to a device"
    reason = _destructive_reason(segment.all_words)
    if reason is not None:
        return reason
    if not is_read_only(segment):
        for word in segment.all_words[1:]:
            hit = _protected_word(word, base)
            if hit is not None:
                return f"may modify {hit}, which only Dexter's own commands may change"
    if depth < 3:
        for script in _nested_scripts(segment.all_words):
            reason = floor_reason(parse_command(script), depth=depth + 1)
            if reason is not None:
                return reason
    return None


def floor_reason(parsed: ParsedCommand, *, depth: int = 0) -> str | None:
    """Why the built-in floor denies this command, or None. Works on unparseable text too."""
    if not parsed.parseable:
        return rough_floor_reason(parsed.text)
    # `cd .dexter && sort -o settings.json x`: later relative paths are under the `cd` target.
    base = ""
    for segment in parsed.segments:
        reason = _segment_floor(segment, depth, base)
        if reason is not None:
            return reason
        if segment.base == "cd" and len(segment.args) <= 1:
            base = _join(base, segment.args[0]) if segment.args else "~"
    # Downloaded or decoded text piped into a shell or interpreter.
    feeding = False
    for index, segment in enumerate(parsed.segments):
        piped = index > 0 and parsed.operators[index - 1] in ("|", "|&")
        if not piped:
            feeding = False
        if piped and feeding and _reads_program_from_stdin(segment):
            return "pipes downloaded or decoded text into a shell"
        names = {posixpath.basename(word) for word in segment.all_words[:3]}
        feeding = feeding or bool(names & (FETCHERS | DECODERS))
    return None


_ROUGH_SEGMENTS = re.compile(r"[;&|()`\n\r]+|\$\(")
_ROUGH_STRIP = str.maketrans("", "", "'\"\\")


def rough_floor_reason(text: str) -> str | None:
    """The floor for text the lexer refused: checks a crude split, erring towards deny."""
    if FORK_BOMB.search(text):
        return "fork bomb"
    all_names: set[str] = set()
    for chunk in _ROUGH_SEGMENTS.split(text):
        words = [w for w in chunk.translate(_ROUGH_STRIP).split() if w not in ("<", ">")]
        words = [w.lstrip("<>") or w for w in words]
        for word in words:
            if mentions_secret(word):
                return f"touches a secret file ({word})"
            match = ASSIGNMENT.fullmatch(word)
            if match and sensitive_env(match.group(1)):
                return f"sets {match.group(1)}, which can make programs run other code"
        reason = _destructive_reason(words)
        if reason is not None:
            return reason
        all_names.update(posixpath.basename(word) for word in words)
    if all_names & (FETCHERS | DECODERS - {"echo", "printf", "tr", "rev"}) and (
        all_names & (INTERPRETERS - {"."})
    ):
        return "downloads or decodes text and runs it"
    return None
