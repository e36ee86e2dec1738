"""A bytecode cache for the functions that dataclasses write (the `dexter` process only).

Python's `dataclasses` write each class's `__init__`, `__repr__`, `__eq__`… as source text and
compile it with `exec()` when the class is defined: ~900 functions for a `dexter ask`, about a
quarter of all the instructions it runs (callgrind), on every start, for the same texts. This is
the interpreter's own bytecode cache applied to that generated code: the compiled code objects,
keyed by their source text, are kept in one file in Dexter's `__pycache__` (named for the
interpreter, like a `.pyc`), and a later start executes the stored code instead of parsing the
text again. A code object is exactly what `compile()` makes of its text with the flags
dataclasses use, and it runs in the same namespaces, so the classes are the same.

Like bytecode, the file is written only where Python would write a `.pyc` (not under
PYTHONDONTWRITEBYTECODE, and under PYTHONPYCACHEPREFIX when set), silently not at all where the
folder is read-only, and a damaged or foreign file is ignored. Only the process entry enables it
(`dexter.cli.main.entry`), once the arguments are parsed (`--help` defines no classes and should
not pay for importing dataclasses); tests and in-process callers run dataclasses untouched.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

# Past this many entries (old Dexter versions' classes piling up) the file starts again from
# what the current process used.
MAX_ENTRIES = 10_000


def cache_file() -> Path | None:
    """Where the cache lives, or None where Python would not write bytecode."""
    if sys.dont_write_bytecode:
        return None
    import importlib.util  # loaded already under `python -m`; a real command's cost otherwise

    package = Path(__file__).resolve().parents[1]  # the `dexter` package folder
    # Named for the interpreter and its bytecode's magic number, as a `.pyc` is checked.
    tag = f"{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}"
    name = f"dataclass-code.{tag}.marshal"
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix) / package.relative_to(package.anchor) / name
    return package / "__pycache__" / name


class DataclassCodeCache:
    """Stands in for `exec` inside the `dataclasses` module."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._codes: dict[str, CodeType] | None = None  # read at the first class defined
        self.used: set[str] = set()
        self.misses = 0

    @property
    def codes(self) -> dict[str, CodeType]:
        if self._codes is None:
            self._codes = self._load()
        return self._codes

    def _load(self) -> dict[str, CodeType]:
        if self.path is None:
            return {}
        try:
            loaded = marshal.loads(self.path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return {}  # absent, unreadable, or another interpreter's: start afresh
        if not isinstance(loaded, dict):
            return {}
        return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, CodeType)}

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if isinstance(source, str):
            code = self.codes.get(source)
            if code is None:
                # dont_inherit: compiled with no __future__ flags, as dataclasses' own exec() is.
                code = compile(source, "<string>", "exec", dont_inherit=True)
                self.codes[source] = code
                self.misses += 1
            self.used.add(source)
            source = code
        builtins.exec(source, globals, locals)

    def save(self) -> None:
        """Write the cache if this process compiled anything new (atomically; failures are
        silent, as a bytecode write's are)."""
        if self.path is None or not self.misses:
            return
        codes = self.codes
        if len(codes) > MAX_ENTRIES:
            codes = {k: v for k, v in codes.items() if k in self.used}
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(marshal.dumps(codes))
            os.replace(temporary, self.path)
        except (OSError, ValueError):
            temporary.unlink(missing_ok=True)


_active: DataclassCodeCache | None = None


def enable() -> None:
    """Serve dataclasses' generated code from the cache (once per process)."""
    global _active
    if _active is not None:
        return
    import dataclasses

    _active = DataclassCodeCache(cache_file())
    # `dataclasses` calls the name `exec`, found in its module globals before the builtins.
    dataclasses.exec = _active.exec  # type: ignore[attr-defined]


def save() -> None:
    if _active is not None:
        _active.save()
