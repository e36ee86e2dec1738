"""Deliverers that need no messaging gateway: a desktop notification and a file."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from dexter.cron.alerts_file import AlertsPathError, alerts_path, append_alert
from dexter.cron.delivery import Alert, Deliverer, DeliveryError, target_address

_NOTIFY_TIMEOUT = 10.0
_NOTIFY_BODY_CHARS = 600


class DesktopDeliverer:
    """`notify-send` (libnotify), where the desktop has it; the outbox keeps the full text."""

    scheme = "desktop"

    def __init__(self, command: str = "notify-send") -> None:
        self.command = command

    @staticmethod
    def available(command: str = "notify-send") -> bool:
        return shutil.which(command) is not None

    async def deliver(self, alert: Alert) -> None:
        path = shutil.which(self.command)
        if path is None:
            raise DeliveryError(
                f"{self.command} is not installed, so desktop notifications cannot be shown "
                "(on Debian/Ubuntu: apt install libnotify-bin); the alert is in the outbox."
            )
        body = alert.text
        if len(body) > _NOTIFY_BODY_CHARS:
            body = body[: _NOTIFY_BODY_CHARS - 1].rstrip() + "…"
        try:
            process = await asyncio.create_subprocess_exec(
                path,
                "--app-name=Dexter",
                f"Dexter: {alert.job_name}",
                body,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(process.communicate(), _NOTIFY_TIMEOUT)
        except TimeoutError as exc:
            process.kill()
            raise DeliveryError(
                f"{self.command} did not finish in {_NOTIFY_TIMEOUT:.0f} s."
            ) from exc
        except OSError as exc:
            raise DeliveryError(f"Cannot run {self.command}: {exc}.") from exc
        if process.returncode != 0:
            detail = err.decode(errors="replace").strip()[:200] or f"exit {process.returncode}"
            raise DeliveryError(f"{self.command} failed: {detail}.")


class FileDeliverer:
    """Appends each alert as a Markdown section to the file the target names inside the alerts
    folder (`file:PATH` is DEXTER_HOME/alerts/PATH; plain `file` is alerts/alerts.md), never
    through a link out of it (see `alerts_file`)."""

    scheme = "file"

    def __init__(self, home: Path) -> None:
        self.home = home

    async def deliver(self, alert: Alert) -> None:
        stamp = alert.created_at.isoformat(timespec="seconds")
        block = f"## {alert.job_name} ({stamp})\n\n{alert.text.strip()}\n\n"
        address = target_address(alert.target)
        try:
            path = alerts_path(self.home, address)
            await asyncio.to_thread(append_alert, self.home, address, block)
        except AlertsPathError as exc:
            raise DeliveryError(str(exc)) from None
        except OSError as exc:
            raise DeliveryError(f"Cannot append to {path}: {exc.strerror or exc}.") from exc


def local_deliverers(home: Path) -> dict[str, Deliverer]:
    return {"desktop": DesktopDeliverer(), "file": FileDeliverer(home)}
