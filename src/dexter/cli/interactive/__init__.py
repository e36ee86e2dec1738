"""The interactive terminal session (`dexter` with no arguments).

Importing this package imports textual, so the CLI imports it only when a session starts.
"""

from dexter.cli.interactive.app import DexterApp, run_interactive

__all__ = ["DexterApp", "run_interactive"]
