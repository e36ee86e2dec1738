"""Deliverers that need no messaging gateway: a desktop notification and a file."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from dexter.atomicfile import open_private, private_dir
from dexter.cron.delivery import Alert, Deliverer, DeliveryError, target_address

_NOTIFY_TIMEOUT = 10.0
_NOTIFY_BODY_CHARS = 600
DEFAULT_ALERTS_FILE = "alerts.md"


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
    """Appends each alert as a Markdown section to the file the target names
    (`file:PATH`, relative to the Dexter home; plain `file` means alerts.md there)."""

    scheme = "file"

    def __init__(self, home: Path) -> None:
        self.home = home

    def path_for(self, target: str) -> Path:
        raw = target_address(target)
        path = Path(raw).expanduser() if raw else Path(DEFAULT_ALERTS_FILE)
        return path if path.is_absolute() else self.home / path

    async def deliver(self, alert: Alert) -> None:
        path = self.path_for(alert.target)
        stamp = alert.created_at.isoformat(timespec="seconds")
        block = f"## {alert.job_name} ({stamp})\n\n{alert.text.strip()}\n\n"

        def append() -> None:
            private_dir(path.parent)
            with open_private(path) as handle:
                handle.write(block)

        try:
            await asyncio.to_thread(append)
        except OSError as exc:
            raise DeliveryError(f"Cannot append to {path}: {exc.strerror or exc}.") from exc


def local_deliverers(home: Path) -> dict[str, Deliverer]:
    return {"desktop": DesktopDeliverer(), "file": FileDeliverer(home)}
