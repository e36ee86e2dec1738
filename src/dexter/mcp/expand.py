"""Variables in an MCP server's settings, the way the hosts write them.

- `${VAR}` and `${VAR:-default}` (Claude Code's `.mcp.json`): the environment, then `.env`; the
  default when VAR is unset or empty.
- `${env:VAR}` (VS Code and Cursor), with the same optional `:-default`.
- `${userHome}`, `${workspaceFolder}` (the folder Dexter runs in), `${workspaceFolderBasename}`,
  `${pathSeparator}` and `${/}` (VS Code's and Cursor's predefined variables).

A variable that is unset and has no default is an error naming it, never an empty string sent
to a server. `${input:…}` (VS Code asks the user) cannot be answered here and is an error too.
A bare `$VAR` is left alone, as the hosts leave it.

Values that end up somewhere secret (a header, an env entry named like a key) or that come from a
variable named like a key are registered for redaction, so they never reach a log or the model.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dexter.config import ConfigError

_REFERENCE = re.compile(r"\$\{([^{}]*)\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Header names whose values are credentials.
_SECRET_HEADER = re.compile(r"authorization|cookie|key|token|secret|password|session", re.I)


@dataclass
class Expander:
    """Expands one server's values; `secrets` collects what must be redacted."""

    env: Mapping[str, str]
    cwd: Path
    label: str
    dotenv: Path | None = None
    secrets: set[str] = field(default_factory=set)

    def __call__(self, text: str, where: str, *, secret: bool = False) -> str:
        """`text` with its variables replaced; `where` names the key in messages."""

        def one(match: re.Match[str]) -> str:
            value, from_secret_name = self._resolve(match.group(1), where)
            if secret or from_secret_name:
                self.secrets.add(value)
            return value

        return _REFERENCE.sub(one, text)

    def header(self, name: str, text: str) -> str:
        """A header value: expanded, and kept secret when the header carries a credential."""
        secret = _SECRET_HEADER.search(name) is not None
        value = self(text, f'"headers.{name}"', secret=secret)
        if secret:
            self.secrets.add(value)
            scheme, _, credential = value.partition(" ")
            if credential and scheme.isalpha():  # "Bearer sk-…": the token alone too
                self.secrets.add(credential.strip())
        return value

    def _resolve(self, reference: str, where: str) -> tuple[str, bool]:
        from dexter.permissions.secrets import is_secret_name

        predefined = self._predefined(reference)
        if predefined is not None:
            return predefined, False
        body = reference.removeprefix("env:")
        name, has_default, default = body.partition(":-")
        if body == reference and ":" in name:
            scope = name.split(":", 1)[0]
            if scope == "input":
                raise ConfigError(
                    f"{self.label}: {where} uses ${{{reference}}}, which VS Code asks you for; "
                    "Dexter cannot ask. Put the value in the environment or .env and write "
                    "${env:NAME} instead."
                )
            raise ConfigError(
                f"{self.label}: {where} uses ${{{reference}}}; Dexter understands ${{VAR}}, "
                "${VAR:-default}, ${env:VAR}, ${userHome} and ${workspaceFolder}."
            )
        if not _NAME.match(name):
            raise ConfigError(
                f"{self.label}: {where} has ${{{reference}}}, which is not a variable name "
                "(letters, digits and _, not starting with a digit)."
            )
        value = self.env.get(name)
        if has_default and not value:
            return default, is_secret_name(name)
        if value is None:
            where_env = f"the environment or {self.dotenv}" if self.dotenv else "the environment"
            raise ConfigError(
                f"{self.label}: {where} uses ${{{name}}}, which is not set in {where_env}. Set "
                f'it, give a default (${{{name}:-value}}), or mark the server "disabled": true.'
            )
        return value, is_secret_name(name)

    def _predefined(self, reference: str) -> str | None:
        if reference == "userHome":
            return str(Path.home())
        if reference == "workspaceFolder":
            return str(self.cwd)
        if reference == "workspaceFolderBasename":
            return self.cwd.name
        if reference in ("pathSeparator", "/"):
            return os.sep
        return None

    def path(self, text: str, where: str) -> Path:
        """A path setting (`cwd`, `envFile`): expanded, `~` allowed, relative to the cwd."""
        path = Path(self(text, where)).expanduser()
        return path if path.is_absolute() else self.cwd / path

    def env_file(self, text: str) -> dict[str, str]:
        """The variables in an `envFile`; those named like keys are kept secret."""
        from dotenv import dotenv_values

        from dexter.permissions.secrets import is_secret_name

        path = self.path(text, '"envFile"')
        if not path.is_file():
            raise ConfigError(f'{self.label}: "envFile" {path} does not exist.')
        try:
            values = dotenv_values(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f'{self.label}: "envFile" {path} cannot be read ({exc}).') from None
        loaded = {key: value for key, value in values.items() if value is not None}
        self.secrets.update(value for key, value in loaded.items() if is_secret_name(key))
        return loaded

    def register(self) -> None:
        """Make every secret value seen so far known to the redactor (logs, tool output)."""
        from dexter.permissions.secrets import register_secrets

        register_secrets(value.strip() for value in self.secrets if value.strip())
