"""Who an MCP host is to Dexter, and which folder its research may read.

A desktop host starts `dexter mcp serve` from wherever it likes, often `/` or the user's home. The
process's working directory is therefore never trusted as a workspace on its own: the workspace is
the folder given with `--workspace` (which `dexter mcp install` writes into every host's config),
else the working directory only when it is neither `/` nor the home folder nor above it. Without a
workspace the research tool gets no file tools at all.

The host itself is a principal of its own (`mcp:<name>`): its own memory and sessions, and files
only inside that workspace.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dexter.config import ConfigError
from dexter.principal import FileGrants, Grants, Principal

DEFAULT_HOST_NAME = "host"
_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,59}")


def too_wide(folder: Path, home: Path) -> str | None:
    """Why `folder` (resolved) may not be a workspace, or None when it may."""
    if folder == Path(folder.anchor):
        return "the whole disk"
    if folder == home:
        return "your whole home folder (documents, keys, other programs' settings)"
    if home.is_relative_to(folder):
        return f"a folder above your home folder ({home})"
    return None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def chosen_workspace(given: str | None, cwd: Path, home: Path | None = None) -> Path:
    """The folder named by `--workspace` (relative to `cwd`, `~` allowed), checked: it must be an
    existing folder that is not `/`, the home folder or above it."""
    home = _real(home or Path.home())
    text = (given if given is not None else str(cwd)).strip()
    if not text or "\x00" in text:
        raise ConfigError("--workspace needs a folder path")
    path = Path(os.path.expanduser(text))
    folder = _real(path if path.is_absolute() else cwd / path)
    if not folder.is_dir():
        raise ConfigError(f"--workspace {text}: no such folder")
    wide = too_wide(folder, home)
    if wide is not None:
        raise ConfigError(
            f"the MCP workspace {folder} is {wide}, so a host's research could read anything "
            "there. Use a folder that holds only what the host should see, e.g. "
            "--workspace ~/research (or run this from that folder)."
        )
    return folder


def serve_workspace(given: str | None, cwd: Path, home: Path | None = None) -> Path | None:
    """The workspace of `dexter mcp serve`: `--workspace` when given (checked), else the working
    directory unless it is `/`, the home folder or above it; None means no file tools."""
    if given is not None:
        return chosen_workspace(given, cwd, home)
    folder = _real(cwd)
    if too_wide(folder, _real(home or Path.home())) is not None or not folder.is_dir():
        return None
    return folder


def host_principal(name: str | None, workspace: Path | None) -> Principal:
    """`mcp:<name>`: its own memory and sessions, files only inside `workspace` (none without)."""
    label = (name or DEFAULT_HOST_NAME).strip()
    if not _HOST_NAME.fullmatch(label):
        raise ConfigError(f"--name {label!r}: use letters, digits and . _ - (e.g. claude-desktop)")
    files = FileGrants(read=(workspace,)) if workspace is not None else FileGrants()
    return Principal(f"mcp:{label}", "mcp", label, Grants(files))


__all__ = [
    "DEFAULT_HOST_NAME",
    "chosen_workspace",
    "host_principal",
    "serve_workspace",
    "too_wide",
]
