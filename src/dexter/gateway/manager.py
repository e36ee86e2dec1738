"""Runs every configured account: one task each, reconnecting forever with capped backoff.

Status snapshots are kept in memory and written to `$DEXTER_HOME/gateway/status.json` (with the
process id), so `dexter gateway status` in another terminal sees the live state.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dexter.atomicfile import PRIVATE, private_dir, write_json
from dexter.gateway.backoff import ReconnectPolicy
from dexter.gateway.types import (
    Channel,
    ChannelError,
    ChannelStatus,
    CredentialsRejected,
    InboundMessage,
)
from dexter.processes import process_alive

log = logging.getLogger("dexter.gateway")

STOP_TIMEOUT = 4.0
OnMessage = Callable[[Channel, InboundMessage], Awaitable[object]]
Sleep = Callable[[float], Awaitable[None]]


@dataclass
class _Hooks:
    manager: ChannelManager
    channel: Channel
    connected_at: float | None = None

    def connected(self, identity: str = "") -> None:
        self.connected_at = self.manager._clock()
        log.info(
            "%s/%s connected%s",
            self.channel.name,
            self.channel.account_id,
            f" as {identity}" if identity else "",
        )
        self.manager._update(
            self.channel,
            connected=True,
            identity=identity,
            last_connected_at=datetime.now(UTC),
        )
        if self.manager.on_connected is not None:
            self.manager.on_connected(self.channel, identity)

    async def message(self, message: InboundMessage) -> None:
        self.manager._update(self.channel, quiet=True, last_message_at=datetime.now(UTC))
        try:
            await self.manager.on_message(self.channel, message)
        except asyncio.CancelledError:
            raise
        except Exception:  # one bad message must not drop the connection
            log.exception("handling a %s message failed", self.channel.name)


class ChannelManager:
    def __init__(
        self,
        channels: Sequence[Channel],
        on_message: OnMessage,
        *,
        policy: ReconnectPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        rand: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
        status_path: Path | None = None,
        on_connected: Callable[[Channel, str], None] | None = None,
    ) -> None:
        self.channels = list(channels)
        self.on_message = on_message
        self.on_connected = on_connected
        self.policy = (policy or ReconnectPolicy()).clamped()
        self._sleep = sleep
        self._rand = rand
        self._clock = clock
        self.status_path = status_path
        self._status: dict[tuple[str, str], ChannelStatus] = {
            (c.name, c.account_id): ChannelStatus(c.name, c.account_id) for c in self.channels
        }
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._stopping = False
        self._written_at = float("-inf")
        self._flush: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------ status

    def snapshot(self) -> list[ChannelStatus]:
        return list(self._status.values())

    def _update(self, channel: Channel, *, quiet: bool = False, **changes: Any) -> None:
        key = (channel.name, channel.account_id)
        self._status[key] = replace(self._status[key], **changes)
        # "Last message" changes with every message: write it at most once a second, but do
        # write it (a dropped write left `gateway status` saying "none" until the next event).
        wait = 1.0 - (self._clock() - self._written_at)
        if quiet and wait > 0:
            if self._flush is None:
                self._flush = asyncio.get_running_loop().call_later(wait, self._write_status)
            return
        self._write_status()

    def _write_status(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        self._written_at = self._clock()
        if self.status_path is None:
            return
        payload = {
            "pid": os.getpid(),
            "updated_at": datetime.now(UTC).isoformat(),
            "accounts": [s.to_dict() for s in self.snapshot()],
        }
        try:
            private_dir(self.status_path.parent)
            write_json(self.status_path, payload, mode=PRIVATE)
        except OSError as exc:  # status is informational; never stop a channel for it
            log.debug("could not write gateway status: %s", exc)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self._stopping = False
        for channel in self.channels:
            key = (channel.name, channel.account_id)
            if key in self._tasks and not self._tasks[key].done():
                continue
            self._update(channel, running=True, last_error=None)
            self._tasks[key] = asyncio.create_task(
                self._supervise(channel), name=f"gateway:{channel.name}:{channel.account_id}"
            )

    async def _supervise(self, channel: Channel) -> None:
        attempts = 0
        try:
            while not self._stopping:
                hooks = _Hooks(self, channel)
                error: str
                try:
                    await channel.start(hooks)
                    error = "connection closed"
                except asyncio.CancelledError:
                    raise
                except CredentialsRejected as exc:
                    if not self._stopping:
                        self._rejected(channel, str(exc))
                    return
                except ChannelError as exc:
                    error = str(exc) or type(exc).__name__
                except Exception as exc:  # an adapter bug: report it and keep trying
                    log.exception("%s channel crashed", channel.name)
                    error = f"{type(exc).__name__}: {exc}"
                if self._stopping:
                    break
                lived = (
                    self._clock() - hooks.connected_at if hooks.connected_at is not None else 0.0
                )
                if lived >= self.policy.healthy_after:
                    attempts = 0
                attempts += 1
                self._update(
                    channel, connected=False, last_error=error, reconnect_attempts=attempts
                )
                delay = self.policy.delay(attempts, self._rand)
                log.warning(
                    "%s/%s disconnected (%s); reconnecting in %.1fs (attempt %d)",
                    channel.name,
                    channel.account_id,
                    error,
                    delay,
                    attempts,
                )
                await self._sleep(delay)
        finally:
            self._update(channel, running=False, connected=False)

    def _rejected(self, channel: Channel, reason: str) -> None:
        """Stop trying: the same credentials would be refused again on every attempt."""
        self._update(channel, connected=False, last_error=reason)
        log.error(
            "%s/%s stopped: %s (the other accounts keep running)",
            channel.name,
            channel.account_id,
            reason,
        )

    async def stop(self, grace: float = STOP_TIMEOUT) -> None:
        """Close every connection, then end every task, within `grace` seconds."""
        self._stopping = True
        closers = [asyncio.create_task(_quietly(c.stop())) for c in self.channels]
        if closers:
            _, late = await asyncio.wait(closers, timeout=grace / 2)
            for task in late:
                task.cancel()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=grace / 2)
        self._tasks.clear()


async def _quietly(awaitable: Awaitable[None]) -> None:
    try:
        await awaitable
    except Exception as exc:
        log.debug("closing a channel failed: %s", exc)


def read_status(path: Path) -> dict[str, Any] | None:
    """The last status a gateway process wrote, with `alive` telling whether it still runs."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    data["alive"] = isinstance(pid, int) and process_alive(pid)
    return data
