"""How the long-running commands (`dexter daemon`, `dexter gateway run`) are stopped, and the
status they exit with: Ctrl+C is 130, as for every other command (a script can tell an
interrupted run from a finished one); SIGTERM is a supervisor's ordinary stop (systemd,
launchd, `kill`), so it exits 0 and is not recorded as a failure."""

from __future__ import annotations

import asyncio
import signal

EXIT_OK = 0
EXIT_CANCELLED = 130


class StopSignals:
    """Sets `stop` on SIGINT or SIGTERM (call `install` inside the running loop) and remembers
    which came first."""

    def __init__(self, stop: asyncio.Event) -> None:
        self.stop = stop
        self.received: signal.Signals | None = None

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._received, sig)

    def _received(self, sig: signal.Signals) -> None:
        if self.received is None:
            self.received = sig
        self.stop.set()

    @property
    def exit_status(self) -> int:
        return EXIT_CANCELLED if self.received == signal.SIGINT else EXIT_OK
