"""List the files of a workspace worth indexing.

`.gitignore` files are honoured at every level (each applies below its own folder, as git reads
them); version-control, environment, cache and Dexter's own folders are always skipped; so are
secret files (`.env`, keys: never indexed, never shown), files over `MAX_BYTES` and binary files
other than workbooks and notebooks.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pathspec

from dexter.permissions.secrets import mentions_secret

ALWAYS_IGNORED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".dexter",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".ipynb_checkpoints",
        ".tox",
        ".idea",
        ".vscode",
    }
)
MAX_BYTES = 20 * 1024 * 1024
# Binary formats that have a tagger; every other file is sniffed for NUL bytes.
BINARY_KINDS = frozenset({".xlsx", ".xlsm", ".parquet"})
_SNIFF = 4096


@dataclass(frozen=True)
class Seen:
    """A file found by the walk: its path relative to the root (POSIX form) and its stat."""

    rel: str
    size: int
    mtime_ns: int


def walk(root: Path, *, private: tuple[Path, ...] = ()) -> Iterator[Seen]:
    """Every indexable file under `root`, in a stable order. Unreadable folders are skipped, and
    so are the `private` folders (Dexter's home: keys, settings, everyone's memory) wherever
    they sit under the root and whatever they are called."""
    root = root.resolve()
    # (folder relative to root, its compiled .gitignore) for every folder above the current one.
    specs: list[tuple[str, pathspec.PathSpec[Any]]] = []
    skipped = frozenset(
        p.resolve().relative_to(root).as_posix()
        for p in private
        if p.resolve() != root and p.resolve().is_relative_to(root)
    )
    yield from _walk_dir(root, "", specs, skipped)


def _walk_dir(
    root: Path,
    rel_dir: str,
    specs: list[tuple[str, pathspec.PathSpec[Any]]],
    skipped: frozenset[str] = frozenset(),
) -> Iterator[Seen]:
    folder = root / rel_dir if rel_dir else root
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    own = _gitignore(folder)
    scoped = [*specs, (rel_dir, own)] if own is not None else specs
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if is_dir:
            if entry.name in ALWAYS_IGNORED or rel in skipped or _ignored(scoped, rel + "/"):
                continue
            yield from _walk_dir(root, rel, scoped, skipped)
        elif is_file:
            if _ignored(scoped, rel) or mentions_secret(rel):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_size > MAX_BYTES:
                continue
            yield Seen(rel, info.st_size, info.st_mtime_ns)


def _gitignore(folder: Path) -> pathspec.PathSpec[Any] | None:
    try:
        lines = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(specs: list[tuple[str, pathspec.PathSpec[Any]]], rel: str) -> bool:
    # The deepest .gitignore that says anything about the path decides, as in git: a
    # folder's `!keep.csv` re-includes what the root's `*.csv` left out.
    for base, spec in reversed(specs):
        inner = rel[len(base) + 1 :] if base else rel
        verdict = spec.check_file(inner).include
        if verdict is not None:
            return bool(verdict)
    return False


def is_binary(path: Path) -> bool:
    """Whether a file without a binary tagger holds binary data (a NUL in its first bytes)."""
    if path.suffix.lower() in BINARY_KINDS:
        return False
    try:
        with path.open("rb") as handle:
            return b"\x00" in handle.read(_SNIFF)
    except OSError:
        return True


__all__ = ["ALWAYS_IGNORED", "MAX_BYTES", "Seen", "is_binary", "walk"]
