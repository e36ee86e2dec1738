"""`mcpServers` in settings.json: the JSON shape Claude Desktop, Claude Code and Cursor use.

    "mcpServers": {
      "notes":  {"command": "uvx", "args": ["notes-mcp"], "env": {"NOTES_DIR": "~/notes"}},
      "broker": {"url": "http://127.0.0.1:9000/mcp", "headers": {"Authorization": "Bearer …"}}
    }

Parsed here (standard library only) into typed records, with one message per problem that names
the server and the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dexter.config import ConfigError, Settings

SETTINGS_KEY = "mcpServers"
# Tool names reach model providers, which accept [A-Za-z0-9_-] up to 64 characters.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
_STDIO_KEYS = frozenset({"command", "args", "env", "cwd", "type", "disabled", "timeout"})
_HTTP_KEYS = frozenset({"url", "headers", "type", "disabled", "timeout"})
DEFAULT_CALL_TIMEOUT = 60.0


@dataclass(frozen=True)
class McpServerConfig:
    name: str
    # stdio: command/args/env/cwd; http: url/headers. Exactly one of command and url is set.
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout: float = DEFAULT_CALL_TIMEOUT

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    @property
    def target(self) -> str:
        """What the user configured, for lists and messages (never headers or env values)."""
        if self.command:
            return " ".join([self.command, *self.args])
        return self.url or ""


def mcp_servers(settings: Settings) -> list[McpServerConfig]:
    """The enabled servers in settings, in file order. Bad entries raise one ConfigError."""
    raw = settings.file_data.get(SETTINGS_KEY)
    if raw is None:
        return []
    where = f'"{SETTINGS_KEY}" in {settings.settings_path}'
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{where} must be an object mapping server names to their settings, e.g. "
            '{"notes": {"command": "uvx", "args": ["notes-mcp"]}}.'
        )
    servers = []
    for name, entry in raw.items():
        config = parse_server(str(name), entry, where=where)
        if config is not None:
            servers.append(config)
    return servers


def parse_server(name: str, entry: Any, *, where: str) -> McpServerConfig | None:
    """One server's settings, or None when it is `"disabled": true`."""
    label = f"{where}: server {name!r}"
    if not _NAME.match(name):
        raise ConfigError(
            f"{label}: names may use letters, digits, '_' and '-' (at most 32, starting with a "
            "letter or digit), because they prefix the server's tool names."
        )
    if "__" in name:
        raise ConfigError(f"{label}: the name may not contain '__' (it separates server and tool).")
    if not isinstance(entry, dict):
        raise ConfigError(f'{label} must be an object with "command" or "url".')
    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        raise ConfigError(f'{label}: "disabled" must be true or false.')
    if disabled:
        return None
    timeout = _timeout(entry.get("timeout", DEFAULT_CALL_TIMEOUT), label)
    kind = entry.get("type")
    if kind is not None and kind not in ("stdio", "http", "streamable-http", "streamableHttp"):
        raise ConfigError(f'{label}: "type" must be "stdio" or "http", not {kind!r}.')
    has_command, has_url = "command" in entry, "url" in entry
    if has_command == has_url:
        raise ConfigError(
            f'{label} needs exactly one of "command" (a program Dexter starts, talking over '
            'stdio) or "url" (a running server, over streamable HTTP).'
        )
    if has_command:
        _unknown(entry, _STDIO_KEYS, label)
        command = entry["command"]
        if not isinstance(command, str) or not command.strip():
            raise ConfigError(f'{label}: "command" must be a non-empty string.')
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f'{label}: "args" must be a list of strings.')
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f'{label}: "cwd" must be a string.')
        return McpServerConfig(
            name=name,
            command=command.strip(),
            args=tuple(args),
            env=_strings(entry.get("env", {}), "env", label),
            cwd=cwd,
            timeout=timeout,
        )
    _unknown(entry, _HTTP_KEYS, label)
    url = entry["url"]
    if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
        raise ConfigError(f'{label}: "url" must be an http:// or https:// address.')
    return McpServerConfig(
        name=name,
        url=url,
        headers=_strings(entry.get("headers", {}), "headers", label),
        timeout=timeout,
    )


def _unknown(entry: Mapping[str, Any], allowed: frozenset[str], label: str) -> None:
    extra = sorted(set(entry) - allowed)
    if extra:
        raise ConfigError(
            f"{label}: unknown key {extra[0]!r} (allowed: {', '.join(sorted(allowed))})."
        )


def _strings(value: Any, key: str, label: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f'{label}: "{key}" must be an object of strings.')
    return dict(value)


def _timeout(value: Any, label: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f'{label}: "timeout" must be a positive number of seconds.')
    return float(value)


def tool_name(server: str, tool: str) -> str:
    """`server__tool`, with characters providers reject replaced and the length capped."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", tool)
    return f"{server}__{safe}"[:64]
