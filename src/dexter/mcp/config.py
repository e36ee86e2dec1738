"""`mcpServers` in settings.json: a server entry from Claude Desktop, Claude Code, Cursor or VS Code
(and the keys Cline and Roo Code add) works pasted as it is.

    "mcpServers": {
      "notes":  {"command": "uvx", "args": ["notes-mcp"], "env": {"NOTES_DIR": "~/notes"}},
      "broker": {"type": "http", "url": "http://127.0.0.1:9000/mcp",
                 "headers": {"Authorization": "Bearer ${BROKER_TOKEN}"}}
    }

Every key falls in one of three groups:
- read: `command`, `args`, `env`, `envFile`, `cwd` (a program on stdio); `url`, `headers` (a
  running server over streamable HTTP or SSE); `type` / `transportType` / `transport`,
  `disabled`, `timeout`, `disabledTools`;
- known from a host but meaningless here (`autoApprove`, `alwaysAllow`, `description`, VS Code's
  `dev` and `sandbox` …): ignored, with a note `dexter doctor` and `dexter mcp list` show;
- anything else: an error naming the key, with the closest known key.

Parsed here (standard library only; variables by `expand.py`) into typed records, with one
message per problem that names the server and the key. `dexter doctor` parses with this same
code, so it never calls settings fine that the commands refuse.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dexter.config import ConfigError, Settings, json_type
from dexter.mcp.expand import Expander

SETTINGS_KEY = "mcpServers"
# Tool names reach model providers, which accept [A-Za-z0-9_-] up to 64 characters.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
DEFAULT_CALL_TIMEOUT = 60.0
# Cline and Roo Code write "timeout" in seconds (an hour at most); Claude Code in milliseconds.
MAX_TIMEOUT_SECONDS = 3600

Transport = Literal["stdio", "http", "sse"]
# Claude Code and VS Code write "http", Roo Code "streamable-http", Cline "streamableHttp".
_TRANSPORTS: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "streamable_http": "http",
    "sse": "sse",
}
_TYPE_KEYS = ("type", "transportType", "transport")
_COMMON_KEYS = frozenset({*_TYPE_KEYS, "disabled", "timeout", "disabledTools"})
_STDIO_KEYS = frozenset({"command", "args", "env", "envFile", "cwd"})
_HTTP_KEYS = frozenset({"url", "headers"})

_ASKS = (
    "Dexter asks before every MCP tool runs; let one run unasked with "
    "`dexter permissions allow {name}__TOOL`"
)
_NO_OAUTH = 'Dexter does not sign in with OAuth; send a token in "headers" (${VAR} works)'
_NO_SANDBOX = "VS Code's sandbox; Dexter starts MCP servers without one"
# Keys hosts write that mean nothing to Dexter, and what to tell the user about each.
IGNORED_KEYS: dict[str, str] = {
    "autoApprove": _ASKS,  # Cline
    "alwaysAllow": _ASKS,  # Roo Code, Kilo Code
    "description": "a label for people",
    "watchPaths": "Roo Code restarts the server when these change; Dexter does not",
    "dev": "VS Code's development mode (watch and debug)",
    "sandbox": _NO_SANDBOX,
    "sandboxEnabled": _NO_SANDBOX,  # only when false: true is refused below
    "auth": _NO_OAUTH,  # Cursor's static OAuth client
    "oauth": _NO_OAUTH,  # Claude Code
    "headersHelper": 'Claude Code runs it to make headers; Dexter does not: list them in "headers"',
}
_KNOWN_KEYS = sorted(_COMMON_KEYS | _STDIO_KEYS | _HTTP_KEYS | IGNORED_KEYS.keys())
# The whole of a host's file pasted as one server: its servers are one level too deep.
_FILE_KEYS = ("mcpServers", "servers", "mcp")


@dataclass(frozen=True)
class McpServerConfig:
    name: str
    # stdio: command/args/env/cwd; http and sse: url/headers. Exactly one of command and url is
    # set. Values are expanded (`${VAR}`); `shown` is the target as written, for messages.
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout: float = DEFAULT_CALL_TIMEOUT
    sse: bool = False
    # Tools the user turned off ("disabledTools" in Roo Code and Windsurf): never offered.
    disabled_tools: frozenset[str] = frozenset()
    shown: str = field(default="", repr=False)
    notes: tuple[str, ...] = ()

    @property
    def transport(self) -> Transport:
        if self.command:
            return "stdio"
        return "sse" if self.sse else "http"

    @property
    def target(self) -> str:
        """What the user configured, as written (never expanded variables, headers or env)."""
        if self.shown:
            return self.shown
        if self.command:
            return " ".join([self.command, *self.args])
        return self.url or ""


@dataclass(frozen=True)
class McpSetup:
    """Everything under "mcpServers": the enabled servers, the disabled ones' names, and one
    note per ignored key (for `dexter doctor` and `dexter mcp list`)."""

    servers: tuple[McpServerConfig, ...] = ()
    disabled: tuple[str, ...] = ()

    @property
    def notes(self) -> list[str]:
        return [note for server in self.servers for note in server.notes]


def load_mcp(settings: Settings) -> McpSetup:
    """Parse "mcpServers"; the first bad entry raises one ConfigError naming server and key."""
    raw = settings.file_data.get(SETTINGS_KEY)
    if raw is None:
        return McpSetup()
    where = f'"{SETTINGS_KEY}" in {settings.settings_path}'
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{where} must be an object mapping server names to their settings, e.g. "
            '{"notes": {"command": "uvx", "args": ["notes-mcp"]}}.'
        )
    servers: list[McpServerConfig] = []
    disabled: list[str] = []
    for name, entry in raw.items():
        config = parse_server(str(name), entry, where=where, settings=settings)
        if config is None:
            disabled.append(str(name))
        else:
            servers.append(config)
    return McpSetup(servers=tuple(servers), disabled=tuple(disabled))


def mcp_servers(settings: Settings) -> list[McpServerConfig]:
    """The enabled servers in settings, in file order. Bad entries raise one ConfigError."""
    return list(load_mcp(settings).servers)


def parse_server(
    name: str, entry: Any, *, where: str, settings: Settings
) -> McpServerConfig | None:
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
    has_command, has_url = "command" in entry, "url" in entry
    if not has_command and not has_url and name in _FILE_KEYS:
        raise ConfigError(
            f"{label} looks like a whole host config file pasted in: move the servers inside "
            f'"{name}" up, directly under "{SETTINGS_KEY}".'
        )
    if has_command == has_url:
        raise ConfigError(
            f'{label} needs exactly one of "command" (a program Dexter starts, talking over '
            'stdio) or "url" (a running server, over streamable HTTP or SSE).'
        )
    transport = _transport(entry, label, has_command=has_command)
    notes = _check_keys(entry, name, label, stdio=has_command)
    timeout, note = _timeout(entry.get("timeout", DEFAULT_CALL_TIMEOUT), name, label)
    notes += [note] if note else []
    common: dict[str, Any] = {
        "name": name,
        "timeout": timeout,
        "disabled_tools": _names(entry.get("disabledTools", []), label),
        "notes": tuple(notes),
    }
    expand = Expander(env=settings.env, cwd=settings.cwd, label=label, dotenv=settings.dotenv_path)
    if has_command:
        config = _stdio(entry, expand, common)
    else:
        config = _remote(entry, expand, common, sse=transport == "sse")
    expand.register()
    return config


def _stdio(entry: Mapping[str, Any], expand: Expander, common: dict[str, Any]) -> McpServerConfig:
    from dexter.permissions.secrets import is_secret_name

    label = expand.label
    command = entry["command"]
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f'{label}: "command" must be a non-empty string.')
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f'{label}: "args" must be a list of strings.')
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f'{label}: "cwd" must be a string.')
    env_file = entry.get("envFile")
    if env_file is not None and not isinstance(env_file, str):
        raise ConfigError(f'{label}: "envFile" must be a path (a string).')
    # VS Code: variables in "env" win over those from "envFile".
    env = expand.env_file(env_file) if env_file else {}
    for key, value in _strings(entry.get("env", {}), "env", label).items():
        secret = is_secret_name(key)
        env[key] = expand(value, f'"env.{key}"', secret=secret)
        if secret:
            expand.secrets.add(env[key])
    return McpServerConfig(
        command=expand(command, '"command"').strip(),
        args=tuple(expand(arg, f'"args[{i}]"') for i, arg in enumerate(args)),
        env=env,
        cwd=str(expand.path(cwd, '"cwd"')) if cwd else None,
        shown=" ".join([command.strip(), *args]),
        **common,
    )


def _remote(
    entry: Mapping[str, Any], expand: Expander, common: dict[str, Any], *, sse: bool
) -> McpServerConfig:
    label = expand.label
    written = entry["url"]
    if not isinstance(written, str):
        raise ConfigError(f'{label}: "url" must be an http:// or https:// address.')
    url = expand(written, '"url"').strip()
    if not re.match(r"^https?://[^\s/]+", url):
        raise ConfigError(f'{label}: "url" must be an http:// or https:// address.')
    headers = {
        key: expand.header(key, value)
        for key, value in _strings(entry.get("headers", {}), "headers", label).items()
    }
    return McpServerConfig(url=url, headers=headers, sse=sse, shown=written.strip(), **common)


def _transport(entry: Mapping[str, Any], label: str, *, has_command: bool) -> Transport:
    """The transport named by `type` (VS Code, Claude Code, Cursor), `transportType` (Cline)
    or `transport`, checked against the keys given; without one, a URL ending in /sse is SSE."""
    named: dict[str, Transport] = {}
    for key in _TYPE_KEYS:
        if key not in entry:
            continue
        value = entry[key]
        kind = _TRANSPORTS.get(value) if isinstance(value, str) else None
        if kind is None:
            raise ConfigError(
                f'{label}: "{key}" must be "stdio", "http" (also written "streamable-http") or '
                f'"sse", not {value!r}.'
            )
        named[key] = kind
    if len(set(named.values())) > 1:
        said = ", ".join(f'"{key}" {entry[key]!r}' for key in named)
        raise ConfigError(f"{label}: {said} disagree; keep one.")
    if named:
        key, kind = next(iter(named.items()))
        if has_command and kind != "stdio":
            raise ConfigError(
                f'{label}: "{key}" is {entry[key]!r}, which needs "url", but the server has '
                '"command" (a program on stdio).'
            )
        if not has_command and kind == "stdio":
            raise ConfigError(
                f'{label}: "{key}" is "stdio", which needs "command", but the server has "url".'
            )
        return kind
    if has_command:
        return "stdio"
    url = entry.get("url")
    path = url.split("?", 1)[0].rstrip("/") if isinstance(url, str) else ""
    return "sse" if path.endswith("/sse") else "http"


def _check_keys(entry: Mapping[str, Any], name: str, label: str, *, stdio: bool) -> list[str]:
    """Notes for the keys Dexter ignores; an error for the other transport's keys, a sandbox
    Dexter cannot give, or a key nobody knows (with the closest known one)."""
    own, other = (_STDIO_KEYS, _HTTP_KEYS) if stdio else (_HTTP_KEYS, _STDIO_KEYS)
    notes: list[str] = []
    unknown: list[str] = []
    for key in entry:
        if key in _COMMON_KEYS or key in own:
            continue
        if key in other:
            kind = '"url" (a running server)' if stdio else '"command" (a program on stdio)'
            this = 'starts a program with "command"' if stdio else 'is reached at its "url"'
            raise ConfigError(f'{label}: "{key}" is for servers with {kind}; this one {this}.')
        if key == "sandboxEnabled" and entry[key] is True:
            raise ConfigError(
                f'{label}: "sandboxEnabled" is true, but Dexter cannot sandbox an MCP server. '
                "Set it to false to run this server without a sandbox, or leave it out of Dexter."
            )
        if key in IGNORED_KEYS:
            why = IGNORED_KEYS[key].replace("{name}", name)
            notes.append(f'server {name!r}: "{key}" ignored ({why})')
        else:
            unknown.append(key)
    if unknown:
        named = []
        for key in unknown:
            close = difflib.get_close_matches(key, _KNOWN_KEYS, n=1)
            named.append(repr(key) + (f' (did you mean "{close[0]}"?)' if close else ""))
        plural = "s" if len(unknown) > 1 else ""
        raise ConfigError(
            f"{label}: unknown key{plural} {', '.join(named)}. Dexter reads "
            f"{', '.join(sorted(_COMMON_KEYS | own))} here."
        )
    return notes


def _strings(value: Any, key: str, label: str) -> dict[str, str]:
    """An object of strings; numbers are written as text and null leaves a variable out (VS
    Code allows both in "env")."""
    if not isinstance(value, dict):
        raise ConfigError(f'{label}: "{key}" must be an object of strings, not {json_type(value)}.')
    result: dict[str, str] = {}
    for name, item in value.items():
        if item is None:
            continue
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise ConfigError(f'{label}: "{key}.{name}" must be a string, not {json_type(item)}.')
        result[str(name)] = str(item)
    return result


def _names(value: Any, label: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{label}: "disabledTools" must be a list of tool names.')
    return frozenset(value)


def _timeout(value: Any, name: str, label: str) -> tuple[float, str | None]:
    """Seconds, and a note when the number was read as Claude Code's milliseconds."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f'{label}: "timeout" must be a positive number of seconds.')
    if value <= MAX_TIMEOUT_SECONDS:
        return float(value), None
    seconds = value / 1000
    return seconds, (
        f'server {name!r}: "timeout" {value:g} read as milliseconds ({seconds:g} s), as Claude '
        f"Code writes it; Dexter reads numbers up to {MAX_TIMEOUT_SECONDS} as seconds"
    )


def tool_name(server: str, tool: str) -> str:
    """`server__tool`, with characters providers reject replaced and the length capped."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", tool)
    return f"{server}__{safe}"[:64]
