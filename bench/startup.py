"""Cold start of `dexter --help` against a bare `python -c pass`.

Target: <= 50 ms beyond the bare interpreter (issue 11). Prints the figures; asserts nothing.
Run: uv run python bench/startup.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time

RUNS = 15


# An installed Dexter has its bytecode cached; measure that, not recompilation on every start.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
    )
    return time.perf_counter() - started


def measure(command: list[str]) -> list[float]:
    timed(command)  # warm the OS file cache and bytecode
    return [timed(command) for _ in range(RUNS)]


def main() -> None:
    dexter = shutil.which("dexter")
    command = [dexter, "--help"] if dexter else [sys.executable, "-m", "dexter", "--help"]
    bare = measure([sys.executable, "-c", "pass"])
    help_ = measure(command)
    b, h = statistics.median(bare), statistics.median(help_)
    print(f"python -c pass:  median {b * 1000:.0f} ms")
    print(f"dexter --help:   median {h * 1000:.0f} ms ({' '.join(command)})")
    verdict = "met" if h - b <= 0.05 else "NOT met"
    print(f"difference: {(h - b) * 1000:.0f} ms (target <= 50 ms: {verdict})")


if __name__ == "__main__":
    main()
