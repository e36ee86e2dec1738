"""The WhatsApp Web steps of `dexter gateway setup` and `dexter gateway logout`: link this
computer as a device of your WhatsApp account (QR code or pairing code), choose who may talk
to Dexter, and unlink it again."""

from __future__ import annotations

import asyncio
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from dexter.gateway.config import AccountConfig, ChannelConfig, GatewayConfig

EXIT_OK = 0
EXIT_FAILED = 1
WARNING = (
    "WhatsApp Web links Dexter to your own number as a linked device, through neonize, an "
    "unofficial client. WhatsApp's terms do not allow unofficial clients and the number can be "
    "banned: use a number you can afford to lose, and prefer the WhatsApp Cloud API "
    "(`dexter gateway setup whatsapp_cloud`) for business use. Dexter only replies on this "
    "number; it never writes first unless you turn `proactive` on."
)
_E164 = re.compile(r"\+\d{7,15}")


def session_path_of(home: Path, account_id: str, account: AccountConfig | None) -> Path:
    from dexter.gateway.service import gateway_dir
    from dexter.gateway.whatsapp_web import default_session_path

    if account is not None and account.session_path:
        return Path(account.session_path).expanduser()
    return default_session_path(gateway_dir(home), account_id)


def _number(raw: str) -> str:
    return "+" + re.sub(r"\D", "", raw) if raw.strip() else ""


def setup_whatsapp_web(
    home: Path,
    account_id: str,
    config: GatewayConfig,
    config_file: Path,
    out: TextIO,
    ask: Callable[[str], str],
) -> int:
    from dexter.cli.gateway_command import ask_access
    from dexter.gateway.config import AccountConfig, ChannelConfig, save_config
    from dexter.gateway.types import ChannelError
    from dexter.gateway.whatsapp_web import load_neonize
    from dexter.gateway.whatsapp_web_link import LINK_TIMEOUT, link_device

    print(textwrap.fill(WARNING, 78), file=out)
    if not ask("Continue? [y/N]: ").strip().lower().startswith("y"):
        print("Nothing changed.", file=out)
        return EXIT_OK
    api = load_neonize()  # ConfigError: one line naming the extra
    channel: ChannelConfig = config.channels.setdefault("whatsapp_web", ChannelConfig())
    session = session_path_of(home, account_id, channel.accounts.get(account_id))
    method = ask("Link with 1) a QR code or 2) a pairing code for your phone number? [1]: ")
    phone: str | None = None
    if method.strip() == "2":
        number = _number(ask("Your WhatsApp number: "))
        while not _E164.fullmatch(number):
            print("Type the number with its country code, like +15551234567.", file=out)
            number = _number(ask("Your WhatsApp number: "))
        phone = number.lstrip("+")
    print(f"Waiting for your phone (up to {int(LINK_TIMEOUT // 60)} minutes)…", file=out)
    try:
        linked = asyncio.run(link_device(session, out, api=api, phone=phone))
    except ChannelError as exc:
        print(f"WhatsApp Web was not linked: {exc}.", file=out)
        return EXIT_FAILED
    print(f"Linked to {linked.phone or 'your account'}. Session data: {session.parent}", file=out)

    account = AccountConfig(
        session_path=str(session) if _custom(home, account_id, session) else None
    )
    mode = ask(
        "How will you use it? 1) message yourself (self-chat: only you)  2) let other people "
        "message this number [1]: "
    ).strip()
    if mode != "2" and linked.phone:
        account.allow_from = [linked.phone]
        account.dm_policy = "allowlist"
        account.group_policy = "disabled"
        print("Self-chat: open your own chat (“Message yourself”) and write to Dexter.", file=out)
    else:
        ask_access(
            account,
            ask,
            out,
            "Who may message Dexter? +E.164 numbers separated by commas, `*` for anyone, or "
            "leave empty to approve people one by one with pairing codes.",
            "Answer in groups when @mentioned or replied to? [y/N]: ",
        )
    channel.accounts[account_id] = account
    save_config(config_file, config)
    print(f"Saved whatsapp_web/{account_id} to {config_file} (mode 0600).", file=out)
    print("Start the gateway with: dexter gateway run", file=out)
    return EXIT_OK


def _custom(home: Path, account_id: str, session: Path) -> bool:
    return session != session_path_of(home, account_id, None)


def forget_sessions(home: Path, channel: ChannelConfig, names: list[str], out: TextIO) -> None:
    """Unlink each account's device from WhatsApp (when neonize can reach it) and delete its
    session data either way."""
    from dexter.config import ConfigError
    from dexter.gateway.whatsapp_web import delete_session, load_neonize, session_linked
    from dexter.gateway.whatsapp_web_link import unlink_device as unlink

    for name in names:
        account = channel.accounts.get(name)
        path = session_path_of(home, name, account)
        if session_linked(path):
            try:
                api = load_neonize()
            except ConfigError as exc:
                print(f"{exc} WhatsApp was not told;", end=" ", file=out)
                told = False
            else:
                told = asyncio.run(unlink(path, api=api))
            if told:
                print(f"Unlinked {name} from WhatsApp.", file=out)
            else:
                print(
                    f"Could not unlink {name} through WhatsApp: remove the device on your phone "
                    "under Settings → Linked devices.",
                    file=out,
                )
        if delete_session(path):
            print(f"Deleted the WhatsApp Web session data in {path.parent}.", file=out)
        if account is not None:
            account.session_path = None
