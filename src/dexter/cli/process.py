"""Garbage collection for the `dexter` process (the script and `python -m dexter` only).

Start-up creates ~100k objects that live as long as the process (modules, classes, pydantic
schemas, compiled patterns) and almost no cyclic garbage, yet the cyclic collector walks them
over and over while they are created (~35 ms for `dexter ask`) and once more, all of them,
while the interpreter shuts down (~70 ms). So the process entry pauses collection until the
command is ready to work, then freezes what exists (later collections skip it) and resumes;
at exit it freezes again so shutdown frees memory without tracing the heap. Code that calls
`main()` in-process (tests, embedders) never pauses, so `resume()` does nothing there.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Collection on again, with start-up's objects frozen out of it (once; no-op unpaused)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def at_exit() -> None:
    resume()
    gc.freeze()
