"""One secret policy for every tool: which paths hold secrets, which paths are protected from
writes, which environment a child process gets, and redaction of known secret values.

- Secret paths (`mentions_secret`, `is_secret_path`): `.env` files and their variants (`.env~`,
  `.env-production`, `prod.env`; not `.env.example`), `*secret*` files, private keys, credential
  files under home (ssh, aws, gcloud, docker, gh, kube, netrc, npmrc, pypirc, git-credentials …),
  `/proc/*/environ`, and Dexter's own secrets: its settings file, the keys `dexter keys set`
  stored (`keys.json`), the gateway's bot tokens and sessions (`gateway.json`, `gateway/`) and its
  database. Read by nobody but Dexter.
- Protected paths (`is_protected_path`): Dexter's state directory (`.dexter/`: settings, rules,
  database, memory), shell start-up files, and `.git/hooks` and `.git/config` (both run code).
  Written only by Dexter's own commands, whatever tool or shell command asks.
- Child environment (`child_env`): an allowlist of harmless variables, never a scrub list.
- Redaction (`Redactor`): known secret values (from the environment and the settings file)
  replaced before text reaches the model, the scratchpad, the database or logs.
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# --- secret paths ------------------------------------------------------------------------------

_SECRET_DIRS = frozenset(
    {".ssh", ".aws", ".gnupg", ".kube", ".azure", ".password-store", ".docker", ".gcloud"}
)
_SECRET_NAMES = frozenset(
    {".envrc", ".netrc", "_netrc", ".pgpass", ".git-credentials", ".pypirc", ".npmrc", ".my.cnf",
     ".boto", ".s3cfg", ".vault-token", "dexter.db", "dexter.db-wal", "dexter.db-shm",
     "dexter.db-journal", "hosts.yml", "credentials.tfrc.json", ".htpasswd", "auth.json",
     "keys.json"}
)  # fmt: skip
# Files in Dexter's home that hold secrets, wherever the home is (`DEXTER_HOME` may have any
# name): its settings, the keys stored by `dexter keys set`, the gateway's tokens.
DEXTER_SECRET_FILES = ("settings.json", "keys.json", "gateway.json")
# The gateway's folder: pairing codes and the WhatsApp Web session (a logged-in device).
DEXTER_SECRET_DIRS = ("gateway",)
_SAFE_ENV_SUFFIXES = frozenset({"example", "sample", "template", "dist", "defaults"})
_KEY_NAME = re.compile(r"id_(rsa|dsa|ecdsa|ed25519)(_sk)?(\..*)?")
_CREDENTIALS_NAME = re.compile(r"credentials(\.[a-z0-9]+)?")
_KEY_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".kdbx")
_SECRET_PATHS = re.compile(
    r"(^|/)etc/(g?shadow|sudoers|master\.passwd)(\W|$)|(^|/)proc/[^/]+/(environ|cmdline)"
    r"|\.config/(gcloud|gh|hub|op)(/|$)|\.cargo/credentials"
    r"|\.dexter/(settings|keys|gateway)\.json|\.dexter/gateway(/|$)"
)
_PIECE_SPLIT = re.compile(r"[/=:,@\s<>;|&()'\"]+")


def _env_file(piece: str) -> bool:
    if piece.endswith(".env") and len(piece) > 4:
        return True  # prod.env, secrets.env
    if not piece.startswith(".env"):
        return False
    rest = piece[len(".env") :]
    if not rest:
        return True
    if rest[0] == ".":
        return rest[1:] not in _SAFE_ENV_SUFFIXES
    # .env~, .env-production, .env_bak, .env2, .envrc
    return rest[0] in "~-_#0123456789" or rest == "rc" or rest.startswith(".")


# Data files whose name says "secret" hold secrets; code files so named (secrets.py) do not.
_SECRET_DATA_SUFFIXES = frozenset(
    {"json", "yaml", "yml", "toml", "txt", "env", "ini", "cfg", "conf", "properties", "xml",
     "csv", "key", "pem", "gpg", "asc", "enc", "age", "bak", "old", "tfvars", "plist"}
)  # fmt: skip


def is_secret_data_name(name: str) -> bool:
    """`name` contains "secret" and is a data file (not `secrets.py` or `secret_santa.md`)."""
    lowered = name.lower()
    stripped = lowered.strip(".")
    if "secret" not in stripped:
        return False
    if "." not in stripped:
        # `.secrets`, `secrets`: yes; a directory such as `test_secret_handling`: no.
        return lowered.startswith(".") or stripped in ("secret", "secrets")
    return stripped.rsplit(".", 1)[1] in _SECRET_DATA_SUFFIXES


def _secret_piece(piece: str) -> bool:
    piece = piece.strip("'\"")
    if not piece:
        return False
    if piece in _SECRET_DIRS or piece in _SECRET_NAMES or _env_file(piece):
        return True
    if _KEY_NAME.fullmatch(piece) or _CREDENTIALS_NAME.fullmatch(piece):
        return True
    if "secret" in piece and is_secret_data_name(piece):
        return True  # secrets.yaml, client_secret.json (not secrets.py: that is code)
    return piece.endswith(_KEY_SUFFIXES) and len(piece) > 4


def mentions_secret(word: str) -> bool:
    """Does a word name (or contain a path to) a secret file? Case- and look-alike-insensitive,
    and `.dexter/./keys.json` or `.dexter//x/../keys.json` count as what they name."""
    lowered = {word.lower(), unicodedata.normalize("NFKC", word).casefold()}
    for variant in lowered | {posixpath.normpath(v) for v in lowered if "/" in v}:
        if _SECRET_PATHS.search(variant):
            return True
        # A directory of secrets (`secrets/`, `.secret/`).
        for component in variant.split("/")[:-1]:
            if component.strip(".") in ("secret", "secrets"):
                return True
        for piece in _PIECE_SPLIT.split(variant):
            if _secret_piece(piece):
                return True
            # `-f.env`, `-i~/.ssh/id_rsa`: a short option with its value attached.
            if piece.startswith("-") and not piece.startswith("--") and len(piece) > 2:
                if _secret_piece(piece[2:]):
                    return True
    return False


def is_secret_path(path: Path | str, *, extra: Iterable[Path] = ()) -> bool:
    """`mentions_secret` for a path, also true for any of the `extra` files (settings, database)."""
    text = str(path)
    if mentions_secret(text):
        return True
    resolved = _real(text)
    return any(resolved == _real(str(item)) for item in extra)


def _real(text: str) -> str:
    try:
        return os.path.realpath(text)
    except (OSError, ValueError):
        return text


# --- protected paths ---------------------------------------------------------------------------

SHELL_RC_FILES = frozenset(
    {
        ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
        ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc",
        ".mkshrc", "config.fish", ".inputrc", ".bash_aliases", ".login", ".logout",
    }
)  # fmt: skip
DEXTER_DIR = ".dexter"


def is_shell_rc(path: str) -> bool:
    return posixpath.basename(path.rstrip("/")).lower() in SHELL_RC_FILES


def is_dexter_settings(path: str) -> bool:
    parts = posixpath.normpath(path).lower().split("/")
    return len(parts) >= 2 and parts[-1] == "settings.json" and parts[-2] == DEXTER_DIR


def is_protected_path(path: str) -> bool:
    """A path only Dexter's own commands may write (lexical: normalised, not resolved)."""
    text = unicodedata.normalize("NFKC", path).casefold().strip()
    if not text:
        return False
    normal = posixpath.normpath(text)
    parts = [p for p in normal.split("/") if p not in ("", ".")]
    if not parts:
        return False
    if is_shell_rc(normal) or DEXTER_DIR in parts or parts[-1].startswith("dexter.db"):
        return True
    for index, part in enumerate(parts[:-1]):
        if part == ".git" and parts[index + 1] in ("hooks", "config", "info"):
            return True
    return normal.endswith(".git/config")


def protected_paths_under(workspace: Path, home: Path | None = None) -> list[Path]:
    """Existing protected files and directories to mount read-only in a sandbox."""
    candidates = [
        workspace / DEXTER_DIR,
        workspace / ".git" / "hooks",
        workspace / ".git" / "config",
    ]
    if home is not None:
        candidates += [home / name for name in sorted(SHELL_RC_FILES)]
        candidates.append(home / DEXTER_DIR)
    return [path for path in candidates if path.exists()]


# --- the environment a child process gets ------------------------------------------------------

_SECRET_NAME = re.compile(
    r"(?:^|_)API_?KEY$|_TOKEN$|^TOKEN$|SECRET|PASSWORD|PASSWD|_PAT$|PRIVATE_KEY|_KEY$|^KEY$"
    r"|WEBHOOK|CREDENTIAL|_DSN$|DATABASE_URL|_AUTH$|^AUTH_|COOKIE|SESSION_ID",
    re.IGNORECASE,
)
# Passed to tools when set; nothing else is.
CHILD_ENV_ALLOWLIST = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
     "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "PWD", "SHLVL", "HOSTNAME",
     "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "VIRTUAL_ENV",
     "PYTHONIOENCODING", "PYTHONUTF8", "SOURCE_DATE_EPOCH"}
)  # fmt: skip
# Keep commands from waiting on a pager or a credential prompt nobody can answer.
QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "LESSSECURE": "1"}


def is_secret_name(name: str) -> bool:
    """True for names like OPENAI_API_KEY, GITHUB_PAT, AWS_SECRET_ACCESS_KEY, DATABASE_URL."""
    return _SECRET_NAME.search(name) is not None


def child_env(env: Mapping[str, str], *, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a tool's child process: allowlisted names only, plus quiet settings."""
    kept = {
        name: value
        for name, value in env.items()
        if (name in CHILD_ENV_ALLOWLIST or name.startswith("LC_")) and not is_secret_name(name)
    }
    return kept | QUIET_ENV | dict(extra or {})


# --- redaction ---------------------------------------------------------------------------------

REDACTED = "[redacted secret]"
# Shorter values are too likely to appear by chance (and too weak to be worth hiding).
MIN_SECRET_LENGTH = 8
_SETTINGS_SECRET_KEY = re.compile(r"api_?key|token|secret|password|passwd|credential", re.I)


def secret_values_from_env(env: Mapping[str, str]) -> set[str]:
    return {
        value.strip()
        for name, value in env.items()
        if is_secret_name(name) and len(value.strip()) >= MIN_SECRET_LENGTH
    }


def secret_values_from_settings(data: Any) -> set[str]:
    """Values under keys like `apiKey`, `token`, `password` anywhere in parsed settings."""
    found: set[str] = set()

    def walk(node: Any, key_is_secret: bool) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                walk(value, bool(_SETTINGS_SECRET_KEY.search(str(key))))
        elif isinstance(node, list):
            for item in node:
                walk(item, key_is_secret)
        elif isinstance(node, str) and key_is_secret and len(node.strip()) >= MIN_SECRET_LENGTH:
            found.add(node.strip())

    walk(data, False)
    return found


class Redactor:
    """Replaces known secret values in text (longest first, so overlapping keys both vanish)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self.add(values)

    def add(self, values: Iterable[str]) -> None:
        new = {v for v in values if len(v) >= MIN_SECRET_LENGTH} - self._values
        if not new:
            return
        self._values |= new
        ordered = sorted(self._values, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in ordered))

    def __bool__(self) -> bool:
        return bool(self._values)

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(REDACTED, text)


_PROCESS_REDACTOR = Redactor()
_seeded = False


def register_secrets(values: Iterable[str]) -> None:
    """Make values known to `redact` for the rest of the process (settings loading calls this)."""
    _PROCESS_REDACTOR.add(values)


def process_redactor() -> Redactor:
    """The process-wide redactor, seeded from the process environment on first use."""
    global _seeded
    if not _seeded:
        _PROCESS_REDACTOR.add(secret_values_from_env(os.environ))
        _seeded = True
    return _PROCESS_REDACTOR


def redact(text: str) -> str:
    return process_redactor()(text)
