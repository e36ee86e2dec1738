"""The one root for every failure Dexter explains to a person.

`DexterError(message, hint=None)` carries what happened, optionally what to do, and the process
exit code the CLI uses when it reaches the top (`dexter.cli.main` maps it to one line on stderr).
Anything that is not a `DexterError` is a bug: the CLI prints "unexpected error" and points at the
log file instead of a traceback.

`ConfigError` (a usage or configuration problem, exit 2) is defined here, because both the
settings loader and the typed settings sections raise it. The other concrete classes live next to
the code that raises them (`data.errors.DataError`, `models.errors.ModelError`,
`tools.base.ToolFailure`, `store.migrations.StoreError`) and are re-exported here, so
`except DexterError` and the old import paths both keep working. This module imports only the
standard library: it is loaded on every CLI start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

EXIT_FAILED = 1
EXIT_USAGE = 2


class DexterError(Exception):
    """A failure with a message for a person, an optional hint, and an exit code."""

    exit_code: ClassVar[int] = EXIT_FAILED

    def __init__(self, message: str = "", hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}" if self.hint else self.message


class ConfigError(DexterError):
    """A usage or configuration problem: the CLI prints the message without a traceback, exit 2."""

    exit_code = EXIT_USAGE


if TYPE_CHECKING:
    from dexter.data.errors import DataError
    from dexter.models.errors import ModelError
    from dexter.store.migrations import StoreError
    from dexter.tools.base import ToolFailure

_HOMES = {
    "DataError": "dexter.data.errors",
    "ModelError": "dexter.models.errors",
    "StoreError": "dexter.store.migrations",
    "ToolFailure": "dexter.tools.base",
}

__all__ = [
    "EXIT_FAILED",
    "EXIT_USAGE",
    "ConfigError",
    "DataError",
    "DexterError",
    "ModelError",
    "StoreError",
    "ToolFailure",
]


def __getattr__(name: str) -> Any:
    # Lazy, because the subclasses' modules import this one (and pydantic, in tools.base).
    module = _HOMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
