"""`dexter mcp install HOST`: the command or file entry each host accepts as it is, for Claude
Desktop, Claude Code, Cursor and VS Code, printed (or merged into the host's file with --write).

Each host's documented shape:
- Claude Desktop: `{"mcpServers": {NAME: {"command", "args", "env"}}}`.
- Claude Code: `claude mcp add NAME --scope S --env K=V … -- COMMAND ARGS…`; the name comes right
  after `add` because `--env` takes several values and swallows a name written after it. Its
  `.mcp.json` entries carry `"type": "stdio"`.
- Cursor: `{"mcpServers": {NAME: {"type": "stdio", "command", "args", "env"}}}`.
- VS Code: `{"servers": {NAME: {"type": "stdio", "command", "args", "env"}}}` in
  `.vscode/mcp.json` or the user profile's `mcp.json`, or `code --add-mcp '{"name": NAME, …}'`.
Every value on a printed command line is shell-quoted (the SEC user agent has a space).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dexter.config import Settings

HOSTS = ("claude-desktop", "claude-code", "cursor", "vscode")
SERVER_NAME = "dexter"
# The key a host's file keeps its servers under, and the hosts whose entries name the transport.
_SERVERS_KEY = {"vscode": "servers"}
_TYPED = frozenset({"claude-code", "cursor", "vscode"})
_LABELS = {
    "claude-desktop": "Claude Desktop",
    "claude-code": "Claude Code",
    "cursor": "Cursor",
    "vscode": "VS Code",
}


def launch(settings: Settings, host: str, workspace: Path) -> dict[str, Any]:
    """How a host should start this Dexter: absolute paths, the same home and settings, the
    folder its research may read, and the host's name (its own memory and sessions)."""
    exe = shutil.which("dexter")
    command, args = (exe, []) if exe else (sys.executable, ["-m", "dexter"])
    env = {"DEXTER_HOME": str(settings.home.resolve())}
    agent = settings.env.get("DEXTER_SEC_USER_AGENT")
    if agent:
        env["DEXTER_SEC_USER_AGENT"] = agent
    serve = ["mcp", "serve", "--workspace", str(workspace), "--name", host]
    return {"command": command, "args": [*args, *serve], "env": env}


def servers_key(host: str) -> str:
    return _SERVERS_KEY.get(host, "mcpServers")


def host_entry(host: str, started: dict[str, Any]) -> dict[str, Any]:
    """Dexter's entry in `host`'s file."""
    return {"type": "stdio", **started} if host in _TYPED else dict(started)


def host_snippet(host: str, started: dict[str, Any]) -> dict[str, Any]:
    """The whole file `host` reads, holding only Dexter."""
    return {servers_key(host): {SERVER_NAME: host_entry(host, started)}}


def claude_code_argv(started: dict[str, Any], *, project: bool) -> list[str]:
    """`claude mcp add` with the name first, one `--env` per variable, then `--` and the command."""
    argv = ["claude", "mcp", "add", SERVER_NAME, "--scope", "project" if project else "user"]
    for key, value in started["env"].items():
        argv += ["--env", f"{key}={value}"]
    return [*argv, "--", started["command"], *started["args"]]


def vscode_argv(started: dict[str, Any]) -> list[str]:
    """`code --add-mcp JSON`: VS Code adds the server to the user profile's mcp.json."""
    entry = {"name": SERVER_NAME, **host_entry("vscode", started)}
    return ["code", "--add-mcp", json.dumps(entry, separators=(",", ":"))]


def host_file(host: str, *, project: bool, cwd: Path) -> Path:
    home = Path.home()
    appdata = Path(os.environ.get("APPDATA", home))
    if host == "claude-desktop":
        if sys.platform == "darwin":
            return home / "Library/Application Support/Claude/claude_desktop_config.json"
        if sys.platform == "win32":
            return appdata / "Claude/claude_desktop_config.json"
        return home / ".config/Claude/claude_desktop_config.json"
    if host == "claude-code":
        return cwd / ".mcp.json" if project else home / ".claude.json"
    if host == "vscode":
        if project:
            return cwd / ".vscode/mcp.json"
        if sys.platform == "darwin":
            return home / "Library/Application Support/Code/User/mcp.json"
        if sys.platform == "win32":
            return appdata / "Code/User/mcp.json"
        return home / ".config/Code/User/mcp.json"
    return cwd / ".cursor/mcp.json" if project else home / ".cursor/mcp.json"


def install(
    settings: Settings, host: str, *, write: bool, project: bool, workspace: str | None = None
) -> int:
    from dexter.config import ConfigError
    from dexter.mcp.host import chosen_workspace

    folder = chosen_workspace(workspace, settings.cwd)
    started = launch(settings, host, folder)
    target = host_file(host, project=project, cwd=settings.cwd)
    if write:
        if host == "claude-code" and not project:
            raise ConfigError(
                "Claude Code keeps user-level servers in its own state file; add Dexter there "
                "with the `claude mcp add …` line that `dexter mcp install claude-code` prints, "
                "or write the project's .mcp.json with --project --write."
            )
        _merge(target, host, started)
        print(f"Wrote the dexter server to {target}. Restart {_LABELS[host]} to load it.")
        print(_reads_only(host, folder))
        return 0
    command = None
    if host == "claude-code":
        command = claude_code_argv(started, project=project)
    elif host == "vscode" and not project:
        command = vscode_argv(started)
    if command is not None:
        print(f"Run this once ({_LABELS[host]}'s own command):")
        print("  " + shlex.join(command))
        print(f"\nor put this in {target}:")
    else:
        print(f"Add this to {target} (then restart {_LABELS[host]}):")
    print(json.dumps(host_snippet(host, started), indent=2))
    print(
        "\nFor the research tool, add your model key (e.g. OPENAI_API_KEY) to env: hosts do "
        "not read your shell's environment or .env.",
        file=sys.stderr,
    )
    print(_reads_only(host, folder), file=sys.stderr)
    how = "--project --write" if host == "claude-code" else "--write"
    print(f"`dexter mcp install {host} {how}` merges it for you.", file=sys.stderr)
    return 0


def _merge(target: Path, host: str, started: dict[str, Any]) -> None:
    """Add Dexter to the host's file, keeping everything else in it (and its mode)."""
    from dexter.atomicfile import write_json
    from dexter.config import ConfigError, read_settings_file

    # The host's own file: the message names it as the host's, and says to fix it there
    # (`dexter doctor` checks Dexter's settings, not another program's).
    existing = read_settings_file(target, what=f"{_LABELS[host]}'s config")
    key = servers_key(host)
    servers = existing.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise ConfigError(f'"{key}" in {target} is not an object; fix it by hand first.')
    existing[key] = {**(servers or {}), SERVER_NAME: host_entry(host, started)}
    target.parent.mkdir(parents=True, exist_ok=True)
    # The host's file may carry keys in "env": whatever mode the user gave it stays.
    write_json(target, existing, keep_mode=True)


def _reads_only(host: str, folder: Path) -> str:
    return (
        f"{host}'s research may read files in {folder} only (choose another folder with "
        f"--workspace DIR); it has its own memory and sessions, as mcp:{host}."
    )
