"""A scripted 40-call research session with 30,000-character results, three ways:

- Dexter's context management (the real agent loop);
- no management at all (every result stays; requests grow without bound);
- the original Dexter's rules (clear to the last 4 results once more than 8 accumulate, plain
  placeholders; compaction only at window - 33,000 tokens), simulated on the same messages.

Prints peak request tokens and total input tokens. Targets: Dexter's total <= 40% of the
unmanaged total, and its peak <= 85% of the window. Asserts nothing.
Run: uv run python bench/long_session.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.long_session import (  # noqa: E402
    CALLS_PER_ROUND,
    QUESTION,
    ROUNDS,
    Observed,
    build_agent,
    document,
    summariser,
)

from dexter.agent.context.budget import estimate_tokens  # noqa: E402

SYSTEM_TOKENS = 1_200  # about what Dexter's system prompt and tool schemas take
MARKER_TOKENS = 12  # "[Old tool result content cleared]"


def simulate(window: int, *, original: bool) -> tuple[int, int]:
    """Request sizes round by round for the unmanaged and original policies."""
    result_tokens = estimate_tokens(document(0))
    live: list[int] = []  # tokens of each result still in the context
    cleared = 0
    base = SYSTEM_TOKENS + estimate_tokens(QUESTION)
    peak = total = 0
    for _ in range(ROUNDS + 1):
        request = base + sum(live) + cleared * MARKER_TOKENS + 80 * len(live)
        if original and request > window - 33_000:
            live, cleared, request = [], 0, base + 3_000  # summary replaces everything
        peak, total = max(peak, request), total + request
        live += [result_tokens] * CALLS_PER_ROUND
        if original and len(live) > 8:
            cleared += len(live) - 4
            live = live[-4:]
    return peak, total


async def managed(window: int) -> tuple[int, int]:
    observed = Observed()
    with tempfile.TemporaryDirectory() as home:
        agent = build_agent(Path(home), observed, window=window, fast=summariser(observed))
        async for _ in agent.run(QUESTION):
            pass
    return max(observed.request_tokens), sum(observed.request_tokens)


def main() -> None:
    print(f"{ROUNDS * CALLS_PER_ROUND} calls, {len(document(0)):,}-character results")
    for window in (128_000, 200_000):
        ours_peak, ours_total = asyncio.run(managed(window))
        raw_peak, raw_total = simulate(window, original=False)
        orig_peak, orig_total = simulate(window, original=True)
        print(f"\nwindow {window:,} tokens")
        print(f"  unmanaged:        peak {raw_peak:>9,}  total input {raw_total:>11,}")
        print(f"  original's rules: peak {orig_peak:>9,}  total input {orig_total:>11,}")
        print(f"  Dexter:           peak {ours_peak:>9,}  total input {ours_total:>11,}")
        print(
            f"  Dexter total = {ours_total / raw_total:.0%} of unmanaged (target <= 40%), "
            f"{ours_total / orig_total:.0%} of original; peak = {ours_peak / window:.0%} of the "
            "window (target <= 85%)"
        )


if __name__ == "__main__":
    main()
