"""What `dexter gateway run` shows on its terminal, captured while a test's block runs."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from dexter.gateway.service import console_log


class Console:
    def __init__(self) -> None:
        self.stream = io.StringIO()

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self, containing: str) -> list[str]:
        return [line for line in self.text.splitlines() if containing in line]


@contextmanager
def gateway_console() -> Iterator[Console]:
    """The gateway's console handler (one line per event, tracebacks left to the log file)."""
    console = Console()
    handler = console_log(console.stream)
    logger = logging.getLogger("dexter.gateway")
    # As `dexter gateway run` configures logging: everything reaches the handlers, and the
    # console handler shows INFO and up.
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield console
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
