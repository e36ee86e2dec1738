"""Linking Dexter as a device of your WhatsApp account (`dexter gateway setup whatsapp_web`) and
unlinking it (`dexter gateway logout whatsapp_web`), through neonize's client."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from dexter.gateway.types import ChannelError
from dexter.gateway.whatsapp_web import NeonizeApi, field_of, secure_session, session_linked

log = logging.getLogger("dexter.gateway")

LINK_TIMEOUT = 180.0
# neonize's PairStatus.PStatus
PAIR_SUCCESS = 2


@dataclass(frozen=True, slots=True)
class LinkedAccount:
    phone: str  # "+15551234567"
    name: str = ""


def render_qr(code: str, out: TextIO) -> None:
    """The QR code in the terminal (segno comes with the whatsapp extra), else the raw string."""
    try:
        import segno
    except ImportError:
        print(f"QR data (render it with any QR tool): {code}", file=out)
        return
    segno.make_qr(code).terminal(out=out, compact=True)


async def link_device(
    session_path: Path,
    out: TextIO,
    *,
    api: NeonizeApi,
    phone: str | None = None,
    wait: float = LINK_TIMEOUT,
) -> LinkedAccount:
    """Link Dexter as a device of your WhatsApp account: QR code, or a pairing code for `phone`
    (digits with country code). Returns the linked number; the session stays in `session_path`."""
    await asyncio.to_thread(secure_session, session_path, create=True)
    client = api.new_client(str(session_path))
    done = asyncio.Event()
    failure: list[str] = []
    shown: list[str] = []

    async def on_qr(c: Any, data: bytes) -> None:
        code = data.decode() if isinstance(data, bytes) else str(data)
        if phone:
            if shown:
                return
            pair_code = await c.PairPhone(phone, True)
            shown.append(pair_code)
            print(
                f"On your phone: WhatsApp → Settings → Linked devices → Link a device → "
                f"Link with phone number instead, and enter: {pair_code}",
                file=out,
                flush=True,
            )
            return
        print(
            "Scan this with your phone: WhatsApp → Settings → Linked devices → Link a device"
            + (" (a new code; the last one expired)" if shown else ""),
            file=out,
            flush=True,
        )
        shown.append(code)
        render_qr(code, out)
        out.flush()

    async def on_pair(_c: Any, event: Any) -> None:
        if int(getattr(event, "Status", 0)) != PAIR_SUCCESS:
            failure.append(str(getattr(event, "Error", "") or "pairing failed"))
            done.set()

    async def on_connected(_c: Any, _event: Any) -> None:
        done.set()

    async def on_logged_out(_c: Any, _event: Any) -> None:
        failure.append("WhatsApp logged the new device out")
        done.set()

    client.qr(on_qr)
    client.event(api.pair_status_ev)(on_pair)
    client.event(api.connected_ev)(on_connected)
    client.event(api.logged_out_ev)(on_logged_out)
    task: asyncio.Future[Any] | None = None
    try:
        task = await client.connect()
        try:
            await asyncio.wait_for(_first(done, task), wait)
        except TimeoutError:
            raise ChannelError(
                f"no phone was linked within {int(wait)} s; run the setup again"
            ) from None
        if failure:
            raise ChannelError(f"linking failed: {failure[0]}")
        if not done.is_set():
            raise ChannelError("the WhatsApp connection ended before a phone was linked")
        me = await client.get_me()
        jid = field_of(me, "JID")
        number = str(jid.User) if jid is not None else ""
        return LinkedAccount(f"+{number}" if number else "", str(getattr(me, "PushName", "")))
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.stop(), 3.0)
        if task is not None and not task.done():
            task.cancel()
        await asyncio.to_thread(secure_session, session_path, create=False)


async def unlink_device(session_path: Path, *, api: NeonizeApi, wait: float = 20.0) -> bool:
    """Tell WhatsApp to remove this linked device. False when it could not be reached."""
    if not session_linked(session_path):
        return False
    client = api.new_client(str(session_path))
    connected = asyncio.Event()

    async def on_connected(_c: Any, _event: Any) -> None:
        connected.set()

    async def on_qr(_c: Any, _data: bytes) -> None:
        connected.clear()
        await client.stop()  # nothing is linked: nothing to unlink

    client.qr(on_qr)
    client.event(api.connected_ev)(on_connected)
    task: asyncio.Future[Any] | None = None
    try:
        task = await client.connect()
        await asyncio.wait_for(_first(connected, task), wait)
        if not connected.is_set():
            return False
        await client.logout()
        return True
    except Exception as exc:
        log.debug("unlinking failed: %s", exc)
        return False
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.stop(), 3.0)
        if task is not None and not task.done():
            task.cancel()


async def _first(event: asyncio.Event, task: Awaitable[Any] | None) -> None:
    """Until `event` is set or the connection task ends."""
    waiter = asyncio.ensure_future(event.wait())
    tasks: list[asyncio.Future[Any]] = [waiter]
    if task is not None:
        tasks.append(asyncio.ensure_future(task))
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
