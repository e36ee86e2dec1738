"""`dexter gateway setup|run|status|pair|logout`: talk to Dexter from Telegram, WhatsApp, Slack."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from typing import Any, TextIO

from dexter.cli.open_runtime import open_runtime

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CANCELLED = 130

CHANNEL_CHOICES = ("telegram", "whatsapp_cloud", "slack", "whatsapp_web")


def add_gateway_parser(commands: Any) -> argparse.ArgumentParser:
    """Register `dexter gateway` (stdlib only); dispatch with `args.gateway_run(args)`."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "gateway",
        help="answer messages from Telegram, WhatsApp and Slack (setup, run, status, pairing)",
        description="The messaging gateway: people message your bot, Dexter answers. Configure "
        "it with `dexter gateway setup`, then keep `dexter gateway run` running.",
    )
    actions = parser.add_subparsers(dest="gateway_command", metavar="ACTION", required=True)
    setup = actions.add_parser("setup", help="configure a channel step by step")
    setup.add_argument(
        "channel", nargs="?", type=_channel, choices=CHANNEL_CHOICES, help="channel to set up"
    )
    setup.add_argument("--account", default="default", help="account name (default: default)")
    actions.add_parser(
        "run",
        help="connect every configured channel and answer (Ctrl+C stops)",
        description="Connect every configured channel and answer in the foreground; connects, "
        "reconnects and failed replies are shown as they happen. Ctrl+C (or SIGTERM) stops "
        "every channel within 5 seconds. Run it under systemd or launchd to keep it up.",
    )
    status = actions.add_parser(
        "status",
        help="connected, last error, last message per account",
        description="Per channel and account: connected or not, the last message, reconnect "
        "attempts and the last error, as the running gateway last wrote them.",
    )
    status.add_argument("--json", action="store_true", help="print JSON")
    pair = actions.add_parser("pair", help="pairing requests from people not yet allowed")
    pair_actions = pair.add_subparsers(dest="pair_command", metavar="ACTION", required=True)
    pair_actions.add_parser("list", help="pending requests and approved senders")
    for name, text in (("approve", "let this sender talk to Dexter"), ("deny", "drop it")):
        sub = pair_actions.add_parser(name, help=text)
        sub.add_argument("code", help="the six-digit code the sender received")
    logout = actions.add_parser(
        "logout",
        help="forget a channel's credentials",
        description="Forget a channel's credentials (and disable it) in gateway.json.",
    )
    logout.add_argument("channel", type=_channel, choices=CHANNEL_CHOICES)
    logout.add_argument("--account", default=None, help="only this account (default: all)")
    parser.set_defaults(gateway_run=run_gateway_command)
    return parser


def _channel(value: str) -> str:
    """`whatsapp-web` and `whatsapp_web` name the same channel."""
    return value.strip().lower().replace("-", "_")


def run_gateway_command(
    args: argparse.Namespace,
    *,
    out: TextIO | None = None,
    ask: Callable[[str], str] | None = None,
) -> int:
    from dexter.config import load_settings

    out = out or sys.stdout
    settings = load_settings()
    home = settings.home
    command = args.gateway_command
    if command == "run":
        return _run(settings, out)
    if command == "status":
        return _status(home, out, as_json=args.json)
    if command == "pair":
        return _pair(home, args, out)
    if command == "logout":
        return _logout(home, args, out)
    # Tokens are not echoed on a terminal; answers from a caller (tests, scripts) are used as is.
    secret = ask or (_hidden_input if sys.stdin.isatty() else input)
    try:
        return _setup(home, args, out, ask or input, secret)
    except (EOFError, KeyboardInterrupt):  # input ended (piped, Ctrl+D) or Ctrl+C mid-way
        print("\ndexter: setup cancelled; nothing was saved.", file=sys.stderr)
        return EXIT_CANCELLED


def _hidden_input(prompt: str) -> str:
    import getpass

    return getpass.getpass(prompt)


def _run(settings: Any, out: TextIO) -> int:
    import asyncio
    import logging

    from dexter.cli.signals import StopSignals
    from dexter.gateway.service import build_service, console_log

    gateway_log = logging.getLogger("dexter.gateway")
    console = console_log(sys.stderr)
    gateway_log.addHandler(console)
    signals = StopSignals(asyncio.Event())

    async def main() -> None:
        signals.install()
        stop = signals.stop
        async with open_runtime(settings) as rt:
            service = build_service(rt)
            names = ", ".join(f"{c.name}/{c.account_id}" for c in service.channels)
            # Started first: a model that cannot be used fails here, in one line, not in
            # every chat's first answer.
            await service.start()
            print(f"Dexter gateway running ({names}). Press Ctrl+C to stop.", file=out, flush=True)
            try:
                await stop.wait()
            finally:
                print("Stopping…", file=out, flush=True)
                await service.stop()

    try:
        asyncio.run(main())
    finally:
        gateway_log.removeHandler(console)
    print("Gateway stopped.", file=out)
    return signals.exit_status


def _status(home: Any, out: TextIO, *, as_json: bool) -> int:
    import json

    from dexter.gateway.config import config_path, load_config
    from dexter.gateway.manager import read_status
    from dexter.gateway.service import status_path

    config = load_config(config_path(home))
    saved = read_status(status_path(home))
    if as_json:
        print(json.dumps(saved or {"alive": False, "accounts": []}, indent=2), file=out)
        return EXIT_OK
    configured = config.accounts()
    if not configured:
        print("No gateway channel is configured. Run `dexter gateway setup`.", file=out)
        return EXIT_OK
    alive = bool(saved and saved.get("alive"))
    if saved is None:
        print("The gateway has not run yet. Start it with `dexter gateway run`.", file=out)
    elif not alive:
        print(
            f"The gateway is not running (last update {_when(saved.get('updated_at'))}).", file=out
        )
    else:
        print(f"The gateway is running (pid {saved.get('pid')}).", file=out)
    rows = {(r["channel"], r["account_id"]): r for r in (saved or {}).get("accounts", [])}
    for channel, account_id, _ in configured:
        row = rows.get((channel, account_id), {})
        state = "connected" if alive and row.get("connected") else "not connected"
        if alive and row and not row.get("running", True):
            state += " (stopped, see the last error)"
        print(f"  {channel}/{account_id}: {state} {row.get('identity') or ''}".rstrip(), file=out)
        print(f"    last message: {_when(row.get('last_message_at'))}", file=out)
        print(f"    reconnect attempts: {row.get('reconnect_attempts', 0)}", file=out)
        if row.get("last_error"):
            if state == "connected":
                # Connected again since: the error is history, not the account's state.
                when = _when(row.get("last_connected_at"))
                print(f"    reconnected at {when} after: {row['last_error']}", file=out)
            else:
                print(f"    last error: {row['last_error']}", file=out)
    return EXIT_OK


def _when(iso: object) -> str:
    """A status time as a person reads it: local time to the second, or "none"."""
    from datetime import datetime

    if not isinstance(iso, str) or not iso:
        return "none"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    except ValueError:
        return iso


def _pair(home: Any, args: argparse.Namespace, out: TextIO) -> int:
    from dexter.gateway.service import pairing_store

    store = pairing_store(home)
    if args.pair_command == "list":
        pending, approved = store.pending(), store.approved()
        if not pending and not approved:
            print("No pairing requests.", file=out)
        if pending:
            print("Waiting for approval:", file=out)
            for p in pending:
                who = f"{p.sender_name} " if p.sender_name else ""
                print(f"  {p.code}  {p.channel}/{p.account_id}  {who}({p.sender_id})", file=out)
                print(f"          since {p.created_at}", file=out)
        if approved:
            print("Approved:", file=out)
            for a in approved:
                who = f"{a.sender_name} " if a.sender_name else ""
                print(f"  {a.channel}/{a.account_id}  {who}({a.sender_id})", file=out)
        return EXIT_OK
    if args.pair_command == "approve":
        request = store.approve(args.code)
        print(
            f"Approved {request.sender_name or request.sender_id} on {request.channel}: "
            "their next message will be answered.",
            file=out,
        )
        return EXIT_OK
    request = store.deny(args.code)
    print(f"Dropped the request from {request.sender_id} on {request.channel}.", file=out)
    return EXIT_OK


def _logout(home: Any, args: argparse.Namespace, out: TextIO) -> int:
    from dexter.gateway.config import config_path, load_config, save_config

    path = config_path(home)
    config = load_config(path)
    channel = config.channels.get(args.channel)
    if channel is None or not channel.accounts:
        print(f"No {args.channel} account is configured; nothing to forget.", file=out)
        return EXIT_OK
    names = [args.account] if args.account else list(channel.accounts)
    for name in names:
        account = channel.accounts.get(name)
        if account is None:
            print(f"No {args.channel} account named {name!r}.", file=out)
            return EXIT_FAILED
        if args.channel == "whatsapp_web":
            from dexter.cli.gateway_whatsapp_web import forget_sessions

            forget_sessions(home, channel, [name], out)
        for key in (
            "token",
            "access_token",
            "app_secret",
            "verify_token",
            "bot_token",
            "app_token",
        ):
            setattr(account, key, None)
        account.enabled = False
    save_config(path, config)
    print(
        f"Forgot the {args.channel} credentials ({', '.join(names)}) in {path}. "
        "Run `dexter gateway setup` to connect again.",
        file=out,
    )
    return EXIT_OK


def _setup(
    home: Any,
    args: argparse.Namespace,
    out: TextIO,
    ask: Callable[[str], str],
    secret: Callable[[str], str],
) -> int:
    from dexter.gateway.config import (
        AccountConfig,
        ChannelConfig,
        config_path,
        load_config,
        save_config,
    )

    path = config_path(home)
    config = load_config(path)
    channel = args.channel
    while channel not in CHANNEL_CHOICES:
        print(
            "Which channel?\n"
            "  1) Telegram bot\n"
            "  2) WhatsApp Cloud API (business number)\n"
            "  3) Slack app\n"
            "  4) WhatsApp Web (your own number, linked device)",
            file=out,
        )
        channel = {"1": "telegram", "2": "whatsapp_cloud", "3": "slack", "4": "whatsapp_web"}.get(
            ask("> ").strip(), ""
        )
    if channel == "whatsapp_web":
        from dexter.cli.gateway_whatsapp_web import setup_whatsapp_web

        return setup_whatsapp_web(home, args.account, config, path, out, ask)
    from dexter.gateway import verify

    # Set up again (a rejected token), an account keeps where its platform's API is.
    previous = config.channels.get(channel)
    before = previous.accounts.get(args.account) if previous is not None else None
    account = AccountConfig(api_base=before.api_base if before is not None else None)
    base = account.api_base
    if channel == "telegram":
        print(
            "Create a bot with @BotFather in Telegram (/newbot) and paste its token here.",
            file=out,
        )
        while True:
            account.token = _ask_until(secret, "Bot token: ", lambda v: ":" in v, out)
            if _checked(partial(verify.check_telegram, account.token, base), "Telegram", ask, out):
                break
    elif channel == "slack":
        _setup_slack(account, secret, ask, out)
    else:
        print("From your Meta app's WhatsApp > API Setup page:", file=out)
        while True:
            number = _ask_until(ask, "Phone number ID: ", str.isdigit, out)
            access = _ask_until(secret, "Access token: ", bool, out)
            check = partial(verify.check_whatsapp_cloud, number, access, base)
            if _checked(check, "Meta", ask, out):
                break
        account.phone_number_id, account.access_token = number, access
        account.app_secret = _ask_until(secret, "App secret (App settings > Basic): ", bool, out)
        account.verify_token = _ask_until(ask, "A verify token of your choice: ", bool, out)
        listen = ask("Listen on [127.0.0.1:8787]: ").strip()
        account.listen = listen or "127.0.0.1:8787"
    ask_access(
        account,
        ask,
        out,
        "Who may talk to Dexter? Enter ids separated by commas (Telegram: numeric user ids; "
        "WhatsApp: +E.164 numbers; Slack: member ids like U012AB3CD), `*` for anyone, or leave "
        "empty to approve people one by one with pairing codes "
        "(`dexter gateway pair approve CODE`).",
        "Answer in groups (Slack: channels) when @mentioned? [y/N]: ",
    )
    config.channels.setdefault(channel, ChannelConfig()).accounts[args.account] = account
    save_config(path, config)
    print(f"Saved {channel}/{args.account} to {path} (mode 0600).", file=out)
    print("Start the gateway (or restart it, if it runs) with: dexter gateway run", file=out)
    return EXIT_OK


def _setup_slack(
    account: Any, secret: Callable[[str], str], ask: Callable[[str], str], out: TextIO
) -> None:
    from dexter.gateway import verify

    print(
        "Create a Slack app at api.slack.com/apps and turn on Socket Mode.\n"
        "Bot token scopes: app_mentions:read, chat:write, im:history, channels:history,\n"
        "  groups:history, reactions:write (users:read too, to see names).\n"
        "Bot events: app_mention, message.im, message.channels, message.groups.\n"
        "Install it to your workspace (the README's Slack section has every step).",
        file=out,
    )
    base = account.api_base
    while True:
        bot = _ask_until(
            secret,
            "Bot token (OAuth & Permissions, xoxb-…): ",
            lambda v: v.startswith("xoxb-"),
            out,
        )
        if _checked(partial(verify.check_slack_bot, bot, base), "Slack", ask, out):
            break
    while True:
        app = _ask_until(
            secret,
            "App-level token with connections:write (Basic Information, xapp-…): ",
            lambda v: v.startswith("xapp-"),
            out,
        )
        if _checked(partial(_app_token_ok, app, base), "Slack", ask, out):
            break
    account.bot_token, account.app_token = bot, app


def _app_token_ok(token: str, base: str | None) -> str:
    from dexter.gateway import verify

    verify.check_slack_app(token, base)
    return "the app-level token opens Socket Mode"


def _checked(
    check: Callable[[], str], platform: str, ask: Callable[[str], str], out: TextIO
) -> bool:
    """Ask the platform about what was pasted: True to keep it (confirmed, or unchecked when
    the platform cannot be reached and the user says so), False to ask again."""
    import textwrap

    from dexter.gateway.verify import CredentialsRefused, PlatformUnreachable

    def say(text: str) -> None:
        print(textwrap.fill(text, width=78, break_long_words=False), file=out)

    try:
        identity = check()
    except CredentialsRefused as exc:
        say(f"{exc} Try again.")
        return False
    except PlatformUnreachable as exc:
        say(str(exc))
        keep = ask("Save it without checking? [y/N]: ").strip().lower().startswith("y")
        if keep:
            say("Saved unchecked: `dexter gateway run` will say if it is refused.")
        return keep
    say(f"{platform} says: {identity}.")
    return True


def ask_access(
    account: Any,
    ask: Callable[[str], str],
    out: TextIO,
    intro: str,
    groups_prompt: str = "Answer in groups when @mentioned? [y/N]: ",
) -> None:
    """Who may message the account (an allowlist, or pairing when empty) and whether groups are
    answered."""
    import textwrap

    print(textwrap.fill(intro, width=78), file=out)
    allowed = [a.strip() for a in ask("Allowed: ").split(",") if a.strip()]
    account.allow_from = allowed
    account.dm_policy = "allowlist" if allowed else "pairing"
    groups = ask(groups_prompt).strip().lower()
    account.group_policy = "open" if groups.startswith("y") else "disabled"


def _ask_until(
    ask: Callable[[str], str], prompt: str, valid: Callable[[str], bool], out: TextIO
) -> str:
    while True:
        value = ask(prompt).strip()
        if value and valid(value):
            return value
        print("That doesn't look right; try again.", file=out)
