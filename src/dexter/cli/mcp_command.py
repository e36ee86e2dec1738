"""`dexter mcp serve|list|test|install`: Dexter as an MCP server, and the MCP servers it uses."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from dexter.cli.open_runtime import open_runtime

if TYPE_CHECKING:
    from pathlib import Path

    from dexter.agent.events import Event
    from dexter.config import Settings
    from dexter.mcp.server import Served
    from dexter.principal import Principal
    from dexter.runtime import Runtime

# The hosts `dexter mcp install` knows (mcp_install.HOSTS, kept here so the parser stays cheap).
HOSTS = ("claude-desktop", "claude-code", "cursor", "vscode")


def add_mcp_parser(commands: Any) -> None:
    """Register `dexter mcp` on the top-level subparsers (stdlib only)."""
    parser = commands.add_parser(
        "mcp",
        help="serve Dexter's data and research over MCP; list and test MCP servers Dexter uses",
        description="Dexter speaks the Model Context Protocol both ways: `dexter mcp serve` offers "
        "its finance data calls and a research tool to Claude Desktop, Claude Code, Cursor, "
        "VS Code and "
        'other hosts; servers listed under "mcpServers" in settings.json become tools '
        "inside Dexter (named server__tool, asking before they run).",
    )
    actions = parser.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="run Dexter as an MCP server (stdio by default)",
        description="Serve over stdio (what desktop hosts start), or with --http over "
        "streamable HTTP at http://HOST:PORT/mcp. HTTP binds to 127.0.0.1 unless --host says "
        "otherwise; on any other address a bearer token is required (--token, DEXTER_MCP_TOKEN, "
        "or one generated and printed at start). On loopback, requests must name this server "
        "in Host and, from a browser, come from its own origin (--allow-host/--allow-origin "
        "add others).",
    )
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks one)")
    serve.add_argument("--token", help="bearer token clients must send (default: DEXTER_MCP_TOKEN)")
    serve.add_argument(
        "--require-token",
        action="store_true",
        help="require the token on loopback too (always required on other addresses)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST:PORT",
        help="also accept this Host header (exact; repeatable), e.g. localhost:9000 for a tunnel",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also accept requests from this web origin (exact, e.g. https://app.example.com)",
    )
    serve.add_argument("-m", "--model", dest="mcp_model", help="model for the research tool")
    serve.add_argument("--no-research", action="store_true", help="serve the data tools only")
    serve.add_argument(
        "--workspace",
        metavar="DIR",
        help="the only folder research may read files in (default: the working directory, "
        "unless that is / or your home folder: then no files at all)",
    )
    serve.add_argument(
        "--name",
        metavar="NAME",
        help="who the host is, e.g. claude-desktop: its own memory and sessions, as principal "
        "mcp:NAME (default: host)",
    )
    listing = actions.add_parser("list", help="the configured MCP servers, their tools and errors")
    listing.add_argument("--json", action="store_true", help="print JSON")
    test = actions.add_parser("test", help="start one configured server and list its tools")
    test.add_argument("name", help="server name from mcpServers")
    install = actions.add_parser(
        "install",
        help="print (or write) the config that makes a host start `dexter mcp serve`",
    )
    install.add_argument("host", choices=HOSTS, help="the MCP host")
    install.add_argument(
        "--write", action="store_true", help="merge it into the host's config file"
    )
    install.add_argument(
        "--project",
        action="store_true",
        help="claude-code / cursor / vscode: the project's file (.mcp.json, .cursor/mcp.json, "
        ".vscode/mcp.json)",
    )
    install.add_argument(
        "--workspace",
        metavar="DIR",
        help="the folder the host's research may read (default: the folder you run this in; "
        "never / or your home folder)",
    )


def run_mcp_command(args: argparse.Namespace) -> int:
    from dexter.config import load_settings

    settings = load_settings()
    if args.mcp_command == "serve":
        return _serve(settings, args)
    if args.mcp_command == "list":
        return _list(settings, as_json=args.json)
    if args.mcp_command == "test":
        return _test(settings, args.name)
    from dexter.cli.mcp_install import install

    return install(
        settings, args.host, write=args.write, project=args.project, workspace=args.workspace
    )


# ---------------------------------------------------------------------------------------------
# serve


def served(runtime: Runtime, model: str | None, *, research: bool, host: Principal) -> Served:
    """What `dexter mcp serve` offers `host`: the data tools, and research run as that host (its
    own memory and sessions, files only in the folder its grants name)."""
    from dexter.mcp.server import Served
    from dexter.runtime import MCP, AgentSpec

    async def run(question: str, max_iterations: int | None) -> AsyncIterator[Event]:
        # The mcp channel: nobody to ask, no shell, no writes; anything needing approval is
        # refused. One runtime serves every call, so store, router and models are shared.
        spec = AgentSpec(model=model, channel=MCP, max_iterations=max_iterations, principal=host)
        agent = runtime.agent(spec)
        async for event in agent.run(question):
            yield event

    from dexter.skills import discover_skills

    return Served(
        tools=runtime.data_tools(),
        policy=runtime.policy(host),
        research=run if research else None,
        skills=discover_skills(runtime.settings.home),
        workspace=next(iter(host.grants.files.readable), None),
    )


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    import asyncio

    from dexter import __version__
    from dexter.config import ConfigError
    from dexter.mcp.host import host_principal, serve_workspace
    from dexter.mcp.server import build_server
    from dexter.mcp.transport import MCP_PATH, TOKEN_ENV, bind, choose_token, is_loopback

    err = sys.stderr
    token: str | None = None
    sock = None
    if args.http:
        if not 0 <= args.port <= 65535:
            raise ConfigError(f"--port must be between 0 and 65535, not {args.port}")
        loopback = is_loopback(args.host)
        given = args.token or settings.env.get(TOKEN_ENV) or None
        token, generated = choose_token(args.host, given, require=args.require_token)
        try:
            sock = bind(args.host, args.port)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}. Choose another "
                "--port (0 picks a free one)."
            ) from None
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        print(f"Dexter MCP server on http://{shown}:{port}{MCP_PATH}", file=err, flush=True)
        if token and generated:
            print(f"Bearer token (send as Authorization: Bearer …): {token}", file=err, flush=True)
        elif token:
            print("Bearer token required (the one you gave).", file=err, flush=True)
        if not loopback:
            print(f"Listening beyond this machine on {args.host}.", file=err, flush=True)
    elif args.token or args.require_token or args.allow_host or args.allow_origin:
        raise ConfigError(
            "--token, --require-token, --allow-host and --allow-origin apply to --http only "
            "(stdio has no network)"
        )

    workspace = serve_workspace(args.workspace, settings.cwd)
    host = host_principal(args.name, workspace)
    runtime = open_runtime(settings)
    if not args.no_research:
        runtime.resolve(args.mcp_model)  # a missing key is said now, not on the first question
        if workspace is None:
            print(
                f"No workspace (started in {settings.cwd}): research reads no files. Pass "
                "--workspace DIR to let it read one folder.",
                file=err,
                flush=True,
            )
    offered = served(runtime, args.mcp_model, research=not args.no_research, host=host)
    server = build_server(offered, version=__version__)

    async def main() -> None:
        from dexter.mcp.transport import http_app, serve_http, serve_stdio

        async with runtime:
            if sock is not None:
                app = http_app(
                    server,
                    sock,
                    host=args.host,
                    token=token,
                    allow_hosts=args.allow_host,
                    allow_origins=[origin.rstrip("/") for origin in args.allow_origin],
                )
                # Said once requests are answered: a script (or a test) can wait for it.
                await serve_http(app, sock, ready=lambda: print(READY, file=err, flush=True))
            else:
                await serve_stdio(server)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return 130  # Ctrl+C, as for every command
    return 0


READY = "Ready: answering requests (Ctrl+C stops)."


# ---------------------------------------------------------------------------------------------
# list / test


async def _probe(settings: Settings, names: list[str] | None) -> list[dict[str, Any]]:
    import asyncio

    from dexter.mcp.client import McpUnavailable
    from dexter.mcp.config import mcp_servers, tool_name
    from dexter.mcp.tools import McpToolset, left_out

    configs = [c for c in mcp_servers(settings) if names is None or c.name in names]
    # Listing live also refreshes the cached listing agents are built from.
    toolset = McpToolset(configs, home=settings.home)

    async def one(config: Any) -> dict[str, Any]:
        connection = toolset.connections[config.name]
        log = connection.stderr_log
        row: dict[str, Any] = {
            "name": config.name,
            "transport": config.transport,
            "target": config.target,
            "tools": [],
            "left_out": [],
            "notes": list(config.notes),
            "error": None,
            "stderr": [],
            "stderr_log": str(log) if log is not None else None,
        }
        if config.command:
            row["command"] = [config.command, *config.args]
        # What the server writes to stderr during this probe, for `mcp test` to show.
        start = _size(log)
        try:
            tools = await connection.tools()
            row["tools"] = [
                {
                    "name": tool_name(config.name, t.name),
                    # The first line, whole: the listing shortens it at a word for the screen.
                    "description": (t.description or "").strip().split("\n", 1)[0],
                    "read_only_hint": bool(t.annotations and t.annotations.read_only_hint),
                }
                for t in tools
                if left_out(config, t) is None
            ]
            row["left_out"] = [
                {"name": tool_name(config.name, t.name), "reason": reason}
                for t in tools
                if (reason := left_out(config, t)) is not None
            ]
        except McpUnavailable as exc:
            row["error"] = connection.problem() if connection.last_error else str(exc)
        finally:
            await connection.aclose()
        row["stderr"] = _written_since(log, start)
        return row

    return list(await asyncio.gather(*(one(c) for c in configs)))


def _size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def _written_since(path: Path | None, offset: int, *, lines: int = 15) -> list[str]:
    """The last `lines` lines appended to `path` after `offset` (the server's error output)."""
    if path is None:
        return []
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]


def _list(settings: Settings, *, as_json: bool) -> int:
    import asyncio

    from dexter.mcp.config import SETTINGS_KEY

    rows = asyncio.run(_probe(settings, None))
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0 if all(r["error"] is None for r in rows) else 1
    if not rows:
        print(
            f'No MCP servers configured. Add them under "{SETTINGS_KEY}" in '
            f"{settings.settings_path} (see README: Adding MCP servers to Dexter)."
        )
        return 0
    for row in rows:
        _print_server(row)
        if row["error"]:
            print(f"  `dexter mcp test {row['name']}` shows what the server said, if anything.")
    return 0 if all(r["error"] is None for r in rows) else 1


# A tool's description on screen: its first line, shortened at a word to this many characters.
_DESCRIPTION_CHARS = 160


def _print_server(row: dict[str, Any]) -> None:
    import textwrap

    width = max(40, min(shutil.get_terminal_size().columns, 100))

    def show(text: str, first: str, rest: str) -> None:
        print(
            textwrap.fill(
                text,
                width,
                initial_indent=first,
                subsequent_indent=rest,
                break_on_hyphens=False,
                break_long_words=False,
            )
        )

    status = "error" if row["error"] else f"{len(row['tools'])} tools"
    if row.get("left_out"):
        status += f", {len(row['left_out'])} not offered"
    print(f"{row['name']}: {status}")
    show(f"{row['transport']}: {row['target']}", "  ", "    ")
    if row["error"]:
        show(row["error"], "  ", "  ")
    for tool in row["tools"]:
        hint = " [says read-only]" if tool["read_only_hint"] else ""
        about = textwrap.shorten(tool["description"], _DESCRIPTION_CHARS, placeholder=" …")
        show(f"{tool['name']}  {about}{hint}", "  - ", "    ")
    for tool in row.get("left_out", []):
        show(f"{tool['name']}  not offered: {tool['reason']}", "  - ", "    ")
    for note in row.get("notes", []):
        show(note.split(": ", 1)[-1], "  ! ", "    ")


def _test(settings: Settings, name: str) -> int:
    import asyncio

    from dexter.config import ConfigError
    from dexter.mcp.config import mcp_servers

    known = [c.name for c in mcp_servers(settings)]
    if name not in known:
        raise ConfigError(
            f"no MCP server named {name!r} in {settings.settings_path}. "
            + (f"Configured: {', '.join(known)}." if known else "None are configured.")
        )
    rows = asyncio.run(_probe(settings, [name]))
    row = rows[0]
    _print_server(row)
    if row["error"] is None:
        print(f"Every call asks first; allow a tool with `dexter permissions allow {name}__TOOL`.")
        return 0
    _explain_failure(row)
    return 1


def _explain_failure(row: dict[str, Any]) -> None:
    """After a failed `mcp test`: what the server wrote to stderr, and what to try next (never
    `mcp test` itself, which is what just ran)."""
    import shlex
    import textwrap

    width = max(40, min(shutil.get_terminal_size().columns, 100))

    def say(text: str, indent: str = "  ") -> None:
        print(
            textwrap.fill(
                text,
                width,
                initial_indent=indent,
                subsequent_indent=indent + "  ",
                break_on_hyphens=False,
                break_long_words=False,
            )
        )

    if row["stderr"]:
        say("The server's error output:")
        for line in row["stderr"]:
            print(f"    {line}")
    command = row.get("command")
    if not command:
        say(f"Check the server is running and answers at {row['target']}.")
        return
    if shutil.which(command[0]) is None:
        say(
            f"{command[0]} is not a command here: install it, or give its full path as "
            '"command" in the server\'s settings.'
        )
        return
    if not row["stderr"]:
        say("The server wrote nothing to its error output.")
    say(
        "Run the command yourself to see whether it starts (a working server waits for input; "
        f"Ctrl+C ends it): {shlex.join(command)}"
    )
    if row["stderr_log"]:
        say(f"Every start's error output is kept in {row['stderr_log']}.")
