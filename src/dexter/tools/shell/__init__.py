"""Shell tools."""

from dexter.tools.shell.bash import BashArgs, BashTool, is_secret_name, scrubbed_env

__all__ = ["BashArgs", "BashTool", "is_secret_name", "scrubbed_env"]
