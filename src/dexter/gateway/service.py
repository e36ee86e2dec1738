"""`dexter gateway run` assembled: channels from the config, the pipeline, the dispatcher over
runtime-built agents, and the manager that keeps every account connected."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from dexter.config import ConfigError
from dexter.gateway.config import AccountConfig, ConfigSource, GatewayConfig, config_path
from dexter.gateway.dispatch import AgentRunner, Dispatcher, InProcessDispatcher
from dexter.gateway.manager import ChannelManager
from dexter.gateway.pairing import PairingStore
from dexter.gateway.pipeline import Gateway
from dexter.gateway.types import Channel

if TYPE_CHECKING:
    from dexter.cron.runner import Runner
    from dexter.gateway.queued import ReplyRelay
    from dexter.runtime import Runtime
    from dexter.work.engine import PgQueue

log = logging.getLogger("dexter.gateway")


class _ConsoleFormatter(logging.Formatter):
    """One line per event for the terminal `dexter gateway run` was started in: the time and
    the message, secrets redacted; tracebacks stay in the log file."""

    def format(self, record: logging.LogRecord) -> str:
        from dexter.log import redact

        at = datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        return redact(f"{at} {record.getMessage()}")


def console_log(stream: TextIO) -> logging.Handler:
    """A handler showing the gateway's events (connects, reconnects, refused or failed replies,
    config reloads) as they happen."""
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.INFO)
    handler.setFormatter(_ConsoleFormatter())
    return handler


def gateway_dir(home: Path) -> Path:
    return home / "gateway"


def pairing_store(home: Path) -> PairingStore:
    return PairingStore(gateway_dir(home) / "pairing.json")


def status_path(home: Path) -> Path:
    return gateway_dir(home) / "status.json"


def build_channel(home: Path, name: str, account_id: str, account: AccountConfig) -> Channel:
    """The channel object for one configured account; optional libraries load only here."""
    if name == "telegram":
        from dexter.gateway.telegram import TelegramChannel

        return TelegramChannel(
            account_id,
            account.token or "",
            offset_path=gateway_dir(home) / "telegram" / f"{account_id}.offset",
            api_base=account.api_base,
        )
    if name == "whatsapp_cloud":
        from dexter.gateway.whatsapp_cloud import WhatsAppCloudChannel

        return WhatsAppCloudChannel.from_config(account_id, account)
    if name == "slack":
        from dexter.gateway.slack import SlackChannel

        return SlackChannel.from_config(account_id, account)
    if name == "whatsapp_web":
        from dexter.gateway.whatsapp_web import WhatsAppWebChannel

        return WhatsAppWebChannel.from_config(gateway_dir(home), account_id, account)
    raise ConfigError(f"unknown gateway channel {name!r}")


@dataclass
class GatewayService:
    home: Path
    config: ConfigSource
    runner: AgentRunner
    channels: list[Channel] = field(default_factory=list)
    # The schedules runner, when the gateway runs schedules too (it does from `build_service`):
    # alerts go out through these channels, and jobs made in a chat answer in that chat.
    schedules: Runner | None = None
    # Team mode: turns go on this queue (opened by `start`) and the relay sends the answers
    # workers recorded. None: runs happen in this process.
    queue: PgQueue | None = None
    relay: ReplyRelay | None = None
    _schedule_stop: asyncio.Event = field(default_factory=asyncio.Event)
    _schedule_task: asyncio.Task[None] | None = None
    _relay_task: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.dispatcher: Dispatcher
        if self.queue is not None:
            from dexter.gateway.queued import QueueDispatcher

            self.dispatcher = QueueDispatcher(self.queue)
        else:
            self.dispatcher = InProcessDispatcher(self.runner)
        self.pairing = pairing_store(self.home)
        self.gateway = Gateway(self.config, self.pairing, self.dispatcher)
        self.manager = ChannelManager(
            self.channels,
            self.gateway.handle,
            policy=self.config.get().reconnect_policy(),
            status_path=status_path(self.home),
            on_connected=self._connected,
        )

    def _connected(self, channel: Channel, identity: str) -> None:
        key = (channel.name, channel.account_id)
        self.gateway.connected_at[key] = datetime.now(UTC)
        self_id = getattr(channel, "self_id", "")
        if self_id:
            self.gateway.self_ids[key] = self_id
        workspace = getattr(channel, "team_id", "")
        if workspace:
            self.gateway.workspaces[key] = workspace

    async def start(self) -> None:
        if self.queue is not None:
            await self.queue.__aenter__()
        else:
            # A runner that builds agents (RuntimeRunner) warms up before the first chat waits.
            prepare = getattr(self.runner, "prepare", None)
            if prepare is not None:
                await prepare()
        if self.relay is not None:
            self._relay_task = asyncio.create_task(
                self.relay.run(self._schedule_stop), name="dexter-gateway-replies"
            )
        await self.manager.start()
        if self.schedules is not None:
            self._schedule_stop.clear()
            self._schedule_task = asyncio.create_task(
                self.schedules.run_forever(self._schedule_stop), name="dexter-gateway-schedules"
            )

    async def stop(self, grace: float = 4.5) -> None:
        self._schedule_stop.set()
        # Runs first: a reply cut off by its connection closing would be logged as a failed
        # delivery; cancelled, it simply ends.
        await self.dispatcher.close()
        await self.manager.stop(grace * 0.6)
        if self._schedule_task is not None:
            try:
                await asyncio.wait_for(self._schedule_task, grace * 0.3)
            except (TimeoutError, asyncio.CancelledError):
                self._schedule_task.cancel()
            except Exception:  # a failing runner must not keep the gateway from stopping
                log.warning("schedules runner stopped with an error", exc_info=True)
            self._schedule_task = None
        await self.dispatcher.close()  # anything that arrived while the channels closed
        if self._relay_task is not None:
            try:
                await asyncio.wait_for(self._relay_task, grace * 0.3)
            except (TimeoutError, asyncio.CancelledError):
                self._relay_task.cancel()
            except Exception:
                log.warning("the reply relay stopped with an error", exc_info=True)
            self._relay_task = None
        if self.queue is not None:
            await self.queue.__aexit__(None, None, None)
        close = getattr(self.runner, "close", None)
        if close is not None:
            close()


def build_service(
    runtime: Runtime,
    config: ConfigSource | None = None,
    *,
    runner: AgentRunner | None = None,
    schedules: bool = True,
) -> GatewayService:
    from dexter.gateway.runs import RuntimeRunner

    home = runtime.settings.home
    source = config or ConfigSource(config_path(home))
    current: GatewayConfig = source.get()
    accounts = current.accounts()
    if not accounts:
        raise ConfigError(
            f"No gateway channel is configured in {config_path(home)}. "
            "Run `dexter gateway setup` first."
        )
    channels = [build_channel(home, name, aid, account) for name, aid, account in accounts]
    runner = runner or RuntimeRunner(
        runtime, model=current.model, max_iterations=current.max_iterations
    )
    from dexter.work.team import team_queue

    queue = team_queue(runtime.settings)
    relay = None
    if queue is not None:
        from dexter.gateway.queued import ReplyRelay

        relay = ReplyRelay(queue.url, channels, source.get)
    service = GatewayService(home, source, runner, channels, queue=queue, relay=relay)
    if schedules:
        from dexter.cron.owners import principal_for_job
        from dexter.cron.service import make_runner
        from dexter.gateway.delivery import deliverers
        from dexter.gateway.principals import job_principals

        service.schedules = make_runner(
            runtime,
            queue=queue,
            deliverers=deliverers(service.channels, source.get, service.pairing),
            # A chat user's job runs as them, with what gateway.json grants them.
            principal_for=job_principals(
                lambda owner: principal_for_job(runtime.store, owner), source.get
            ),
        )
    return service


async def run_until_stopped(service: GatewayService, stop: asyncio.Event) -> None:
    await service.start()
    try:
        await stop.wait()
    finally:
        await service.stop()
