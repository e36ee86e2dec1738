"""`dexter data income AAPL` end to end with a warm cache, as a user runs it (a new process).

The SEC is stood in for by a local mirror of the recorded fixtures; after the first (cold) run
every answer comes from the disk cache, so the figure is start-up + cache read + parse + render.
Prints figures; asserts nothing. Run: uv run python bench/data_cli.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS = 7


def main() -> None:
    os.environ.setdefault("DEXTER_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))
    if not Path(os.environ["DEXTER_FIXTURES"]).is_dir():
        print("fixtures not found; run scripts/fetch_fixtures.py and set DEXTER_FIXTURES")
        return
    from tests.support.sec_mirror import Mirror, MirrorServer

    command = [sys.executable, "-m", "dexter", "data", "income", "AAPL"]
    with tempfile.TemporaryDirectory() as home, MirrorServer(Mirror()) as server:
        env = {**os.environ, **server.env(), "DEXTER_HOME": home}
        env.pop("FINANCIAL_DATASETS_API_KEY", None)
        # An installed Dexter has its bytecode cached; without this every run would recompile.
        env.pop("PYTHONDONTWRITEBYTECODE", None)

        def run() -> float:
            started = time.perf_counter()
            subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
            return time.perf_counter() - started

        cold = run()
        requests = len(server.mirror.requests)
        warm = [run() for _ in range(RUNS)]
        extra = len(server.mirror.requests) - requests
    print(f"cold (fetch from local mirror + parse): {cold * 1000:.0f} ms, {requests} requests")
    print(
        f"cached: median {statistics.median(warm) * 1000:.0f} ms, "
        f"min {min(warm) * 1000:.0f} ms over {RUNS} runs, {extra} requests"
    )


if __name__ == "__main__":
    main()
