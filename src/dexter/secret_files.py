"""Secrets by file: `NAME_FILE=/run/secrets/x` sets `NAME` to that file's contents.

The convention of Docker and compose `secrets:` (and of the Postgres image's
`POSTGRES_PASSWORD_FILE`): a key never sits in the environment, where `docker inspect` and child
processes would see it. Only names Dexter would treat as secrets (`OPENAI_API_KEY`,
`DEXTER_DATABASE_URL`, …) or its own `DEXTER_*` names are read this way, so unrelated variables
such as `SSL_CERT_FILE` keep their meaning. At the ground: settings loading calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from dexter.errors import ConfigError

SUFFIX = "_FILE"
# A secret is a line or a URL; anything this big is the wrong file, not a key.
MAX_BYTES = 64 * 1024

__all__ = ["MAX_BYTES", "SUFFIX", "read_secret_files"]


def _eligible(name: str, is_secret_name: Callable[[str], bool]) -> bool:
    return name.startswith("DEXTER_") or is_secret_name(name)


def read_secret_files(
    env: Mapping[str, str], *, where: str = "the environment"
) -> tuple[dict[str, str], set[str]]:
    """`env` with every eligible `NAME_FILE` read into `NAME`, and the names so filled.

    Setting both `NAME` and `NAME_FILE` in one place is an error (which one was meant?), as is a
    file that cannot be read: the process stops with a message naming the variable and the path,
    never the contents.
    """
    from dexter.permissions.secrets import is_secret_name

    result = dict(env)
    filled: set[str] = set()
    for file_name, path in env.items():
        if not file_name.endswith(SUFFIX) or not path.strip():
            continue
        name = file_name[: -len(SUFFIX)]
        if not name or not _eligible(name, is_secret_name):
            continue
        if (env.get(name) or "").strip():
            raise ConfigError(
                f"Both {name} and {file_name} are set in {where}; set only one of them "
                f"({file_name} names a file holding the value, e.g. a compose secret)."
            )
        result[name] = _read(file_name, path.strip())
        filled.add(name)
    return result, filled


def _read(file_name: str, path: str) -> str:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as error:
        raise ConfigError(
            f"{file_name} names {path}, which cannot be read ({error.strerror or error}). Check "
            "the path and that the file (a compose or Kubernetes secret) is mounted and "
            "readable by this user."
        ) from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(
            f"{file_name} names {path}, which is larger than {MAX_BYTES // 1024} KiB: that is "
            "not a key or a URL. Point it at the file holding only the secret."
        )
    try:
        # Files written by `echo` or an editor end with a newline that is not part of the key.
        value = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ConfigError(f"{file_name} names {path}, which is not UTF-8 text.") from None
    if not value:
        raise ConfigError(
            f"{file_name} names {path}, which is empty. Put the secret in it, or unset {file_name}."
        )
    return value
