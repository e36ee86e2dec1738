"""`dexter web`: the browser app on 127.0.0.1, entered through a printed one-time login link.

Only argparse here at import; the server and its dependencies (the `web` extra) load when the
command runs."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

if TYPE_CHECKING:
    import socket

    from dexter.config import Settings

EXIT_OK = 0
DEFAULT_PORT = 8765
# What the app needs at run time, by import name: the first one missing is named.
_NEEDS = ("starlette", "sse_starlette", "uvicorn", "jinja2", "multipart")


def add_web_parser(commands: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        "web",
        help="the browser app: ask and watch answers stream, sessions, exports",
        description="Serve Dexter in the browser on 127.0.0.1 and print a link that logs you in "
        "once, as the operator. To serve beyond this machine (--host 0.0.0.0), add a password "
        'account first: "web": {"users": {"NAME": {"passwordHash": "…", "operator": true}}} '
        "in settings.json, the hash from `dexter web --hash-password`; accounts without "
        '"operator" are web users who see only their own sessions, memory and jobs.',
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to serve on (default: 127.0.0.1)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0: any free one)",
    )
    parser.add_argument(
        "-m", "--model", dest="web_model", metavar="MODEL", help="model for every run"
    )
    parser.add_argument(
        "--hash-password",
        action="store_true",
        help="read a password (typed, or from stdin) and print its hash for settings.json",
    )
    parser.set_defaults(command_run=run_web_command)
    return parser


def run_web_command(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if args.hash_password:
        return _hash_password(out)
    _require_extra()
    from dexter.config import ConfigError, load_settings

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0 to 65535, got {args.port}.")
    settings = load_settings()
    from dexter.web.accounts import load_accounts

    accounts = load_accounts(settings)
    if not is_loopback(args.host) and not accounts.any_password:
        raise ConfigError(
            f"refusing to serve on {args.host} without a password: anyone who can reach it could "
            "use your keys and files. Add an account (`dexter web --hash-password`, then "
            '"web": {"users": {"NAME": {"passwordHash": "…", "operator": true}}} in '
            f"{settings.settings_path}, or that users object in DEXTER_WEB_USERS), or serve on "
            "127.0.0.1."
        )
    sock = bind(args.host, args.port)
    return serve(settings, accounts, sock, model=args.web_model or args.model, out=out)


def _require_extra() -> None:
    import importlib.util

    from dexter.install import missing_extra

    for module in _NEEDS:
        if importlib.util.find_spec(module) is None:
            raise missing_extra("`dexter web`", "web", module.replace("_", "-"))


def is_loopback(host: str) -> bool:
    import ipaddress

    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, bound before the server starts so the printed link has the real
    port (also for --port 0)."""
    import socket

    from dexter.config import ConfigError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle off only on sockets that say TCP; with it on,
    # each streamed event waits ~40 ms for the browser's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as error:
        sock.close()
        raise ConfigError(
            f"cannot serve on {host}:{port}: {error.strerror or error}. Choose another --port."
        ) from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def link_host(host: str) -> str:
    if host in ("0.0.0.0", "::", "[::]"):
        return "127.0.0.1"  # a link that works on this machine; others use its address
    return f"[{host.strip('[]')}]" if ":" in host else host


# A NamedTuple, not a dataclass: `dexter --help` imports this module, and dataclasses costs
# ~6 ms of start-up.
class Served(NamedTuple):
    """What `dexter web` serves on one socket: the app, its state, and the addresses to print."""

    app: Any
    state: Any
    base: str
    openbb_url: str
    openbb_keyed: bool


def build(settings: Settings, accounts: Any, sock: socket.socket, *, model: str | None) -> Served:
    """The app `dexter web` serves on `sock` (tests serve exactly this)."""
    from dexter.cli.open_runtime import open_runtime
    from dexter.web.app import create_app
    from dexter.web.auth import LOOPBACK_NAMES
    from dexter.web.openbb import MOUNT_PATH, openbb_config, openbb_mount
    from dexter.web.state import WebState

    host, port = sock.getsockname()[:2]
    openbb = openbb_config(settings)
    runtime = open_runtime(settings)
    runtime.client(model)  # an unknown model or a missing key fails now, not on a page
    state = WebState(runtime, accounts, cookie=f"dexter_web_{port}", model=model)
    # On loopback only this machine's own names are answered (no DNS rebinding); beyond it,
    # whatever name people reach it by (logins guard it there).
    hosts = (*LOOPBACK_NAMES, link_host(str(host))) if is_loopback(str(host)) else None
    # The OpenBB endpoint is called by Workspace, not by a logged-in page: it checks its own
    # key and origins (dexter.web.openbb_access), so the login gate lets it through.
    app = create_app(
        state, hosts=hosts, mounts=[openbb_mount(runtime, openbb)], own_auth=(MOUNT_PATH,)
    )
    base = f"http://{link_host(str(host))}:{port}"
    return Served(app, state, base, base + MOUNT_PATH, openbb.api_key is not None)


def serve(
    settings: Settings, accounts: Any, sock: socket.socket, *, model: str | None, out: TextIO
) -> int:
    import asyncio

    import uvicorn

    served = build(settings, accounts, sock, model=model)
    base = served.base
    print(f"Dexter is serving at {base}/", file=out)
    print(f"Log in (this link works once): {base}/login?token={served.state.token.value}", file=out)
    if accounts.any_password:
        print("Or log in with a name and password from settings.json.", file=out)
    from dexter.store.database_url import database_target, display_url

    team = database_target(settings)
    if team.is_postgres and team.url is not None:
        print(
            f"Team mode ({display_url(team.url)}): questions go on the queue; "
            "`dexter worker` answers them.",
            file=out,
        )
    keyed = "" if served.openbb_keyed else " (no key set: it answers no query; see README)"
    print(f"OpenBB Workspace custom agent: {served.openbb_url}{keyed}", file=out)
    print("Ctrl+C stops it.", file=out, flush=True)
    config = uvicorn.Config(served.app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    try:
        asyncio.run(server.serve(sockets=[sock]))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return EXIT_OK


def _hash_password(out: TextIO) -> int:
    from dexter.config import ConfigError
    from dexter.web.passwords import hash_password

    if sys.stdin is not None and sys.stdin.isatty():
        import getpass

        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Again: "):
            raise ConfigError("the two passwords differ; nothing was printed.")
        password = first
    else:
        password = (sys.stdin.readline() if sys.stdin is not None else "").rstrip("\r\n")
    if len(password) < 8:
        raise ConfigError("the password is shorter than 8 characters; choose a longer one.")
    print(hash_password(password), file=out)
    return EXIT_OK
