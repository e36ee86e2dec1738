"""Whether a process on this machine still runs, for state a process left behind (a journal
claim, a gateway status file, a scheduled run marked running). Standard library only."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """True unless process `pid` is known to be gone. Where that cannot be asked (Windows,
    where signal 0 would end the process), the answer is True: whatever waits on it waits."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else (or a platform without signal 0)
        return True
    return True


__all__ = ["process_alive"]
