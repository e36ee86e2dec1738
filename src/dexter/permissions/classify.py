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
import unicodedata
from collections.abc import Callable, Sequence

from dexter.permissions.shell import (
    ASSIGNMENT,
    ParsedCommand,
    Segment,
    command_name,
    parse_command,
)

# --- environment -------------------------------------------------------------------------------

_SENSITIVE_ENV = frozenset(
    {
        "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PATH", "IFS", "BASH_ENV", "ENV",
        "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH", "PERL5LIB", "PERL5OPT",
        "PERLLIB", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT",
        "NODE_OPTIONS", "NODE_PATH", "RUBYOPT", "RUBYLIB", "GIT_SSH", "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXTERNAL_DIFF", "GIT_PAGER",
        "GIT_EDITOR", "GIT_DIR", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_PROXY_COMMAND", "PAGER", "MANPAGER",
        "EDITOR", "VISUAL", "LESSOPEN", "LESSCLOSE", "BROWSER", "HOME", "ZDOTDIR",
    }
)  # fmt: skip
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


# --- secrets and protected files ---------------------------------------------------------------

_SECRET_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".kube", ".azure", ".password-store"})
_SECRET_NAMES = frozenset(
    {".envrc", ".netrc", ".pgpass", ".git-credentials", ".pypirc", ".npmrc", ".my.cnf"}
)
_SAFE_ENV_SUFFIXES = frozenset({"example", "sample", "template", "dist"})
_KEY_NAME = re.compile(r"id_(rsa|dsa|ecdsa|ed25519)(_sk)?(\..*)?")
_CREDENTIALS_NAME = re.compile(r"credentials(\.[a-z0-9]+)?")
_KEY_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore")
_SECRET_PATHS = re.compile(
    r"(^|/)etc/(g?shadow|sudoers|master\.passwd)(\W|$)|(^|/)proc/[^/]+/environ|\.config/gcloud"
)
_PIECE_SPLIT = re.compile(r"[/=:,@\s<>;|&()'\"]+")
SHELL_RC_FILES = frozenset(
    {
        ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
        ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc",
        ".mkshrc", "config.fish", ".inputrc",
    }
)  # fmt: skip


def _secret_piece(piece: str) -> bool:
    piece = piece.strip("'\"")
    if not piece:
        return False
    if piece in _SECRET_DIRS or piece in _SECRET_NAMES:
        return True
    if piece == ".env" or (
        piece.startswith(".env.") and piece[len(".env.") :] not in _SAFE_ENV_SUFFIXES
    ):
        return True
    if _KEY_NAME.fullmatch(piece) or _CREDENTIALS_NAME.fullmatch(piece):
        return True
    return piece.endswith(_KEY_SUFFIXES) and len(piece) > 4


def mentions_secret(word: str) -> bool:
    """Does a word name (or contain a path to) a secret file? Case- and look-alike-insensitive."""
    for variant in {word.lower(), unicodedata.normalize("NFKC", word).casefold()}:
        if _SECRET_PATHS.search(variant):
            return True
        for piece in _PIECE_SPLIT.split(variant):
            if _secret_piece(piece):
                return True
            # `-f.env`, `-i~/.ssh/id_rsa`: a short option with its value attached.
            if piece.startswith("-") and not piece.startswith("--") and len(piece) > 2:
                if _secret_piece(piece[2:]):
                    return True
    return False


def is_shell_rc(path: str) -> bool:
    return posixpath.basename(path.rstrip("/")).lower() in SHELL_RC_FILES


def is_dexter_settings(path: str) -> bool:
    parts = posixpath.normpath(path).lower().split("/")
    return len(parts) >= 2 and parts[-1] == "settings.json" and parts[-2] == ".dexter"


def _protected_write_target(path: str) -> bool:
    return is_shell_rc(path) or is_dexter_settings(path)


# --- the read-only classifier ------------------------------------------------------------------

Checker = Callable[[Sequence[str]], bool]


def _short_cluster(arg: str) -> bool:
    return len(arg) > 1 and arg[0] == "-" and arg[1] != "-"


def _long_names(arg: str) -> str:
    return arg.split("=", 1)[0]


def write_flag_positions(words: Sequence[str]) -> list[int]:
    """Indexes of words that make a command write, run programs, or print secrets.

    Used so a prefix rule such as `Bash(sort:*)` never covers `sort -o ~/.bashrc`, and by the
    read-only classifier.
    """
    if not words:
        return []
    name = command_name(words[0]) or ""
    positions: list[int] = []
    for index, arg in enumerate(words[1:], start=1):
        if _long_names(arg) in _GENERIC_WRITE_LONG:
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
            if arg in exact or _long_names(arg) in long:
                found.append(index)
            elif letters and _short_cluster(arg) and any(c in letters for c in arg[1:]):
                found.append(index)
        return found

    return positions


def _find_flags(words: Sequence[str]) -> list[int]:
    return [i for i, arg in enumerate(words) if i > 0 and arg in _FIND_ACTIONS]


_GIT_SAFE_GLOBALS = frozenset(
    {"--no-pager", "-P", "--no-optional-locks", "--no-replace-objects", "--paginate", "-p",
     "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs"}
)  # fmt: skip
_GIT_WRITE_LONG = frozenset(
    {"--output", "--ext-diff", "--open-files-in-pager", "--upload-pack", "--receive-pack",
     "--exec", "--textconv", "--filters"}
)  # fmt: skip


def _git_subcommand(words: Sequence[str]) -> tuple[int | None, list[int]]:
    """(index of the subcommand or None, indexes of unsafe global options)."""
    unsafe: list[int] = []
    i = 1
    while i < len(words) and words[i].startswith("-"):
        arg = words[i]
        if arg in _GIT_SAFE_GLOBALS:
            i += 1
        elif arg == "-C":
            i += 2
        else:
            # -c, --config-env, --git-dir, --work-tree, --exec-path, ...
            unsafe.append(i)
            i += 2 if arg in ("-c", "--config-env", "--git-dir", "--work-tree") else 1
    return (i if i < len(words) else None), unsafe


def _git_flags(words: Sequence[str]) -> list[int]:
    sub, found = _git_subcommand(words)
    if sub is None:
        return found
    for index in range(sub + 1, len(words)):
        arg = words[index]
        if _long_names(arg) in _GIT_WRITE_LONG:
            found.append(index)
        elif words[sub] == "grep" and arg.startswith("-O"):
            found.append(index)
    return found


def _uniq_flags(words: Sequence[str]) -> list[int]:
    positional = [i for i, arg in enumerate(words) if i > 0 and not arg.startswith("-")]
    return positional[1:2]  # `uniq IN OUT` writes OUT


def _env_reading(words: Sequence[str]) -> list[int]:
    return [i for i, arg in enumerate(words) if i > 0 and "env" in arg.lower()]


_WRITE_FLAGS: dict[str, Callable[[Sequence[str]], list[int]]] = {
    "find": _find_flags,
    "sort": _flags(
        exact=frozenset({"-o"}), long=frozenset({"--output", "--compress-program"}), letters="o"
    ),
    "git": _git_flags,
    "sed": _flags(long=frozenset({"--in-place"}), letters="i"),
    "perl": _flags(letters="i"),
    "yq": _flags(long=frozenset({"--inplace"}), letters="i"),
    "tree": _flags(exact=frozenset({"-o"})),
    "file": _flags(exact=frozenset({"-C"}), long=frozenset({"--compile"})),
    "date": _flags(long=frozenset({"--set"}), letters="s"),
    "rg": _flags(long=frozenset({"--pre", "--pre-glob"})),
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
            }
        ),
        letters="xcruAI",
    ),
    "jq": _env_reading,
    "tail": _flags(long=frozenset({"--follow"}), letters="fF"),
}


def _always(args: Sequence[str]) -> bool:
    return True


def _no_args(args: Sequence[str]) -> bool:
    return not args


def _git_read_only(words: Sequence[str]) -> bool:
    sub, unsafe = _git_subcommand(words)
    if sub is None or unsafe:
        return False
    name, rest = words[sub], list(words[sub + 1 :])
    if name in _GIT_READ_SUBCOMMANDS:
        if name == "reflog":
            first = next((arg for arg in rest if not arg.startswith("-")), None)
            return first in (None, "show")
        return True
    if name == "branch":
        return all(arg in _GIT_BRANCH_LIST_FLAGS for arg in rest)
    if name == "tag":
        return not rest or (rest[0] in ("-l", "--list") and not set(rest) & _GIT_TAG_WRITES)
    if name == "remote":
        return rest in ([], ["-v"], ["--verbose"])
    if name == "stash":
        return bool(rest) and rest[0] in ("list", "show")
    if name == "worktree":
        return rest[:1] == ["list"]
    return False


_GIT_READ_SUBCOMMANDS = frozenset(
    {"status", "log", "diff", "show", "rev-parse", "describe", "blame", "annotate", "shortlog",
     "reflog", "ls-files", "ls-tree", "cat-file", "whatchanged", "grep", "rev-list", "name-rev",
     "merge-base", "show-ref", "for-each-ref", "count-objects", "show-branch", "diff-tree",
     "diff-files", "diff-index", "check-ignore", "version"}
)  # fmt: skip
_GIT_BRANCH_LIST_FLAGS = frozenset(
    {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "-l",
     "--show-current", "--no-color", "--color", "--merged", "--no-merged"}
)  # fmt: skip
_GIT_TAG_WRITES = frozenset({"-d", "--delete", "-a", "--annotate", "-s", "--sign", "-f",
                             "--force", "-m", "-F", "-u", "--local-user"})  # fmt: skip
_NPM_READS = frozenset(
    {"ls", "list", "ll", "la", "view", "info", "show", "outdated", "ping", "whoami", "root",
     "prefix", "bin", "explain", "why"}
)  # fmt: skip


def _npm_read_only(words: Sequence[str]) -> bool:
    first = next((arg for arg in words[1:] if not arg.startswith("-")), None)
    return first in _NPM_READS


def _hostname_read_only(words: Sequence[str]) -> bool:
    return all(arg in ("-f", "-s", "-i", "-I", "-d", "--fqdn", "--short") for arg in words[1:])


_ALWAYS_READ_ONLY = frozenset(
    {"ls", "pwd", "cd", "echo", "printf", "cat", "head", "wc", "stat", "whoami", "uname", "id",
     "groups", "basename", "dirname", "realpath", "readlink", "cksum", "md5sum", "sha1sum",
     "sha256sum", "sha512sum", "b2sum", "shasum", "cut", "comm", "column", "diff", "cmp", "df",
     "du", "ps", "uptime", "free", "which", "type", "grep", "egrep", "fgrep", "nl", "tac", "rev",
     "od", "strings", "seq", "true", "false", "nproc", "arch", "locale", "tty", "tr", "expand",
     "unexpand", "fold", "fmt", "paste", "join", "look", "cal", "sleep", "test"}
)  # fmt: skip
# Readers whose write-capable flags are listed in _WRITE_FLAGS.
_READ_ONLY_UNLESS_FLAGGED = frozenset(
    {"sort", "find", "tree", "file", "date", "rg", "ag", "uniq", "jq", "yq", "tail"}
)
_SPECIAL_READ_ONLY: dict[str, Callable[[Sequence[str]], bool]] = {
    "git": _git_read_only,
    "npm": _npm_read_only,
    "hostname": _hostname_read_only,
}


def not_read_only_reason(segment: Segment) -> str | None:
    """None when the segment is read-only, else a short reason it isn't."""
    if not segment.words:
        return "only a redirection"
    if segment.has_write_redirect:
        return "writes a file through redirection"
    if not env_is_harmless(segment.env):
        return "sets environment variables"
    name = command_name(segment.command)
    if name is None:
        return f"runs a program by path ({segment.command})"
    if not name.isascii():
        return "program name has non-ASCII characters"
    if name in _SPECIAL_READ_ONLY:
        if not _SPECIAL_READ_ONLY[name](segment.words):
            return f"`{name}` with these arguments can change things"
    elif name not in _READ_ONLY_UNLESS_FLAGGED and name not in _ALWAYS_READ_ONLY:
        return f"`{name}` is not a known read-only command"
    flagged = write_flag_positions(segment.words)
    if flagged:
        return f"`{name} {segment.words[flagged[0]]}` can write, run programs or not finish"
    return None


def is_read_only(segment: Segment) -> bool:
    return not_read_only_reason(segment) is None


def command_is_read_only(parsed: ParsedCommand) -> bool:
    return parsed.parseable and all(is_read_only(segment) for segment in parsed.segments)


# --- the deny floor ----------------------------------------------------------------------------

# Words after which the next words may be a command that runs (`sudo rm`, `xargs rm`).
RUNNERS = frozenset(
    {"sudo", "doas", "su", "runuser", "xargs", "exec", "find", "watch", "nice", "nohup", "timeout",
     "env", "time", "command", "builtin", "strace", "ltrace", "chroot", "unshare", "nsenter",
     "flock", "parallel", "setsid", "stdbuf", "ionice", "script", "busybox", "eval", "then",
     "do", "else", "if", "while", "until"}
)  # fmt: skip
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "csh", "tcsh"})
INTERPRETERS = SHELLS | {
    "python", "python3", "python2", "perl", "ruby", "node", "php", "lua", "deno", "bun", "pwsh",
    "osascript", "source", ".",
}  # fmt: skip
FETCHERS = frozenset(
    {"curl", "wget", "fetch", "nc", "ncat", "netcat", "socat", "aria2c", "http", "https",
     "lwp-request", "GET", "ftp", "tftp", "scp", "rsync", "ssh"}
)  # fmt: skip
DECODERS = frozenset(
    {"base64", "base32", "basenc", "xxd", "openssl", "uudecode", "gunzip", "zcat", "gzip",
     "bzip2", "bunzip2", "xz", "unxz", "rev", "tr", "echo", "printf"}
)  # fmt: skip
_DISK_FORMATTERS = re.compile(r"mkfs(\..*)?|mke2fs|mkswap|wipefs|fdisk|sfdisk|parted|newfs.*")
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_DANGEROUS_TARGETS = frozenset(
    {"/", "~", "*", "/*", "~/*", "$HOME", "${HOME}", "/home", "/Users", "/usr", "/etc", "/var",
     "/bin", "/sbin", "/lib", "/boot", "/System", "/Library", "/opt", "/root", "/dev", "/proc"}
)  # fmt: skip
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


def _segment_floor(segment: Segment, depth: int) -> str | None:
    for name, _ in segment.env:
        if sensitive_env(name):
            return f"sets {name}, which can make programs run other code"
    for word in (*segment.all_words, *(r.target for r in segment.redirects)):
        if mentions_secret(word):
            return f"touches a secret file ({word})"
    for redirect in segment.redirects:
        if not redirect.is_write:
            continue
        if _protected_write_target(redirect.target):
            return f"writes {redirect.target}"
        target = posixpath.normpath(redirect.target) if redirect.target.startswith("/") else ""
        if target.startswith("/dev/") and target not in _SAFE_DEVICES:
            if not target.startswith("/dev/fd/"):
                return "writes directly to a device"
    reason = _destructive_reason(segment.all_words)
    if reason is not None:
        return reason
    if not is_read_only(segment):
        for word in segment.words[1:]:
            if _protected_write_target(word):
                return f"may modify {word}"
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
    for segment in parsed.segments:
        reason = _segment_floor(segment, depth)
        if reason is not None:
            return reason
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
