"""A long research session on the product's real tool set: what Dexter sends, against an
unmanaged context and against the original Dexter's clearing rule.

`dexter ask` on the ask channel (tools bound by the runtime exactly as for a user) reads forty
30,000-character filings with `read_file`, four a round for ten rounds, then answers; each filing
leads with one figure line. See tests/support/research_run.py for the session and the rules.

Measured per request with Dexter's token estimate (characters / 3.5 plus per-message overheads,
tool schemas included; the raw JSON bodies' bytes are printed too for the whole-process run):
- unmanaged: the same requests with every result left in full;
- original's rule: before each model call, clear all but the newest 4 results once more than 8
  are live (33-character placeholder), applied to those same requests;
- Dexter in process (a scripted model injected into the runtime), and Dexter whole process
  (`dexter ask` against a scripted OpenAI-compatible server; what arrived on the wire).
Targets (issue 30): total <= 20% of unmanaged, peak <= 40% of the window, every figure kept, and
the in-process figures within 2 points of the whole-process ones. Prints; asserts nothing.
Run: uv run python bench/long_session.py [--no-process]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.research_run import (
    CALLS_PER_ROUND,
    FILINGS,
    ROUNDS,
    Figures,
    run_in_process,
    run_whole_process,
)

TARGET_TOTAL = 20.0
TARGET_PEAK = 40.0
AGREEMENT = 2.0
WINDOWS = (128_000, 200_000)


def _row(label: str, sent: list[int], window: int, kept: int, unmanaged: int) -> str:
    total, peak = sum(sent), max(sent)
    return (
        f"  {label:<26} {total:>11,} {100 * total / unmanaged:>8.1f}%  "
        f"{peak:>9,} {100 * peak / window:>8.1f}%  {kept:>3}/{FILINGS}"
    )


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(window: int, ours: Figures, wire: Figures | None) -> None:
    unmanaged = sum(ours.unmanaged)
    print(f"\nwindow {window:,} tokens, {len(ours.sent)} model calls")
    print(f"  {'':<26} {'total sent':>11} {'of unman.':>9}  {'peak':>9} {'of window':>9}  figures")
    print(_row("unmanaged", ours.unmanaged, window, FILINGS, unmanaged))
    print(_row("original's rule", ours.original, window, ours.original_figures_kept, unmanaged))
    print(_row("Dexter (in process)", ours.sent, window, ours.figures_kept, unmanaged))
    if wire is not None:
        print(
            _row(
                "Dexter (whole process)", wire.sent, window, wire.figures_kept, sum(wire.unmanaged)
            )
        )
        sent, unmanaged_bytes = sum(wire.wire_bytes), sum(wire.wire_unmanaged_bytes)
        print(
            f"  raw request bodies (JSON framing and escapes included): {sent:,} bytes, "
            f"{100 * sent / unmanaged_bytes:.1f}% of the same bodies unmanaged; largest "
            f"{max(wire.wire_bytes):,} bytes"
        )
        total_gap = abs(ours.total_pct - wire.total_pct)
        peak_gap = abs(ours.peak_pct - wire.peak_pct)
        agree = total_gap <= AGREEMENT and peak_gap <= AGREEMENT
        print(
            f"  in process vs whole process: total {total_gap:.1f} points, peak {peak_gap:.1f} "
            f"points apart (target <= {AGREEMENT:.0f}: {_met(agree)})"
        )
    print(
        f"  Dexter: total {ours.total_pct:.1f}% of unmanaged (target <= {TARGET_TOTAL:.0f}%: "
        f"{_met(ours.total_pct <= TARGET_TOTAL)}), peak {ours.peak_pct:.1f}% of the window "
        f"(target <= {TARGET_PEAK:.0f}%: {_met(ours.peak_pct <= TARGET_PEAK)}), "
        f"{ours.figures_kept}/{FILINGS} figures kept "
        f"({_met(ours.figures_kept == FILINGS)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--no-process", action="store_true", help="skip the whole-process comparison"
    )
    options = parser.parse_args()
    print(
        f"{FILINGS} read_file calls ({ROUNDS} rounds of {CALLS_PER_ROUND}) of ~30,000 characters, "
        "then the answer; `dexter ask`, ask channel"
    )
    for index, window in enumerate(WINDOWS):
        ours = run_in_process(window)
        if index == 0:
            print(
                f"first request: {ours.tools_offered} tools offered "
                f"({ours.tool_chars:,} characters of schemas), system prompt "
                f"{ours.system_chars:,} characters"
            )
        wire = None if options.no_process or index else run_whole_process(window)
        report(window, ours, wire)


if __name__ == "__main__":
    main()
