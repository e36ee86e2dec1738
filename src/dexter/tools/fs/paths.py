"""Workspace confinement for the file tools, plus the atomic write they share.

Every path a model gives is resolved against the workspace (the directory Dexter runs in) and
must stay inside it: absolute paths elsewhere, `..` escapes and symlinks that lead outside are
refused with a message that says why. The permission gate checks calls before they run, but
these tools are also reached by `dexter tools run` and other paths, so they defend themselves.
"""

from __future__ import annotations

import os
from pathlib import Path

from dexter.permissions.secrets import is_protected_path, mentions_secret
from dexter.tools.base import ToolFailure

# Longer paths (or path components) than the OS accepts: refused as a tool error, not an OSError.
MAX_PATH_CHARS = 4096
MAX_NAME_CHARS = 255

# Unicode spaces models and pasted text put into paths; filenames almost never contain them.
_SPACES = str.maketrans(
    {ch: " " for ch in "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"}
    | {"\u200a": " ", "\u202f": " ", "\u205f": " ", "\u3000": " "}
)


def file_resource(workspace: Path, user_path: str) -> str:
    """The resource name a call on `user_path` touches, through the same resolver as the file
    tools, so two spellings of one file conflict. A path that does not resolve names itself:
    the call will fail on its own."""
    try:
        return f"file:{resolve_in_workspace(workspace, user_path)}"
    except ToolFailure:
        return f"file:?{user_path}"


def resolve_in_workspace(workspace: Path, user_path: str) -> Path:
    """The real (symlink-free) absolute path of `user_path`, which must lie inside `workspace`.

    Relative paths are taken from the workspace. The path need not exist (so a new file can be
    written), but every existing component is checked: a symlink whose target is outside the
    workspace is refused even when later components don't exist yet.
    """
    text = user_path.strip().translate(_SPACES)
    if text.startswith("@"):  # "@notes.md" is how people mention files in chat
        text = text[1:]
    if not text:
        raise ToolFailure("path is empty: give a file path relative to the workspace")
    check_path_text(text)
    root = workspace.resolve()
    candidate = Path(text).expanduser()
    if candidate.is_absolute():
        relative = _relative_to_workspace(candidate, workspace, root)
        if relative is None:
            raise ToolFailure(
                f"path {user_path!r} is outside the workspace ({root}); "
                "only files inside the workspace can be used"
            )
    else:
        relative = candidate
    lexical = Path(os.path.normpath(root / relative))
    if not lexical.is_relative_to(root):
        raise ToolFailure(
            f"path {user_path!r} escapes the workspace ({root}) with '..'; "
            "only files inside the workspace can be used"
        )
    _check_symlinks(root, root / relative, user_path)
    resolved = (root / relative).resolve()
    if not resolved.is_relative_to(root):
        raise ToolFailure(
            f"path {user_path!r} resolves to {resolved}, outside the workspace ({root})"
        )
    return resolved


def check_path_text(text: str) -> None:
    """Refuse paths no file system accepts (NUL bytes, over-long names) with a clear message."""
    if "\x00" in text:
        raise ToolFailure("path contains a NUL character; give a plain file path")
    if len(text) > MAX_PATH_CHARS:
        raise ToolFailure(f"path is longer than {MAX_PATH_CHARS} characters")
    if any(len(part.encode("utf-8", "replace")) > MAX_NAME_CHARS for part in text.split("/")):
        raise ToolFailure(f"a path component is longer than {MAX_NAME_CHARS} bytes")


def refuse_secret(workspace: Path, path: Path, *, extra: tuple[Path, ...] = ()) -> None:
    """The file tools never read secret files (`.env`, keys, Dexter's settings and database)."""
    from dexter.permissions.secrets import is_secret_path

    shown = display_path(workspace, path)
    if is_secret_path(path, extra=extra) or mentions_secret(shown):
        raise ToolFailure(f"{shown} holds secrets; Dexter's tools never read it")


def refuse_protected(workspace: Path, path: Path) -> None:
    """The file tools never write Dexter's own state, shell start-up files or git hooks/config."""
    shown = display_path(workspace, path)
    if is_protected_path(shown) or is_protected_path(str(path)):
        raise ToolFailure(
            f"{shown} is protected: only Dexter's own commands (dexter permissions, dexter "
            "memory …) change it"
        )


def display_path(workspace: Path, path: Path) -> str:
    """`path` relative to the workspace, for messages ("." for the workspace itself)."""
    try:
        return path.relative_to(workspace.resolve()).as_posix() or "."
    except ValueError:
        return str(path)


def _relative_to_workspace(path: Path, workspace: Path, root: Path) -> Path | None:
    normal = Path(os.path.normpath(path))
    for base in (root, Path(os.path.normpath(workspace.absolute()))):
        if normal.is_relative_to(base):
            return normal.relative_to(base)
    return None


def _check_symlinks(root: Path, target: Path, user_path: str) -> None:
    """Walk `target` from `root`, refusing any existing symlink that points outside `root`."""
    current = root
    for part in target.relative_to(root).parts:
        current = current / part
        if part == "..":
            current = current.resolve()
            continue
        if not current.is_symlink():
            if not current.exists():
                return  # the rest doesn't exist yet: nothing more to follow
            continue
        real = current.resolve()
        if not real.is_relative_to(root):
            shown = current.relative_to(root) if current.is_relative_to(root) else current
            raise ToolFailure(
                f"path {user_path!r} goes through the symlink {shown}, which points outside "
                f"the workspace (to {real}); symlinks may not lead out of the workspace"
            )
        current = real
