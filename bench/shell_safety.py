"""Shell safety costs: the permission check on long commands (must grow linearly), and the OS
sandbox's start-up overhead per command (target: median <= 15 ms over plain `bash -c`).

    uv run python bench/shell_safety.py

Each figure is the median of several runs in this process; the ratio column shows how the
check time grows with the command (about 10x per 10x of length means linear).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import summary
from dexter.permissions.policy import evaluate_bash
from dexter.permissions.rules import RuleSet
from dexter.permissions.sandbox import SandboxPolicy, detect_sandbox
from dexter.permissions.secrets import child_env


def _commands(size: int) -> dict[str, str]:
    """Long commands of about `size` bytes, of shapes that once made the check slow."""
    words = "grep -n revenue notes.md | "
    pipeline = (words * (size // len(words) + 1))[: size - 10] + " wc -l"
    quoted = "echo '" + "a;b|c " * (size // 6) + "'"
    digits = "ls " + "1" * (size - 3)
    unparseable = "echo $(" + "x " * (size // 2) + ")"
    return {"pipeline": pipeline, "quoted": quoted, "digits": digits, "unparseable": unparseable}


def bench_classifier() -> None:
    print("Permission check time (ms, median of 5) by command length")
    print(f"{'shape':<12}{'1 KB':>10}{'10 KB':>10}{'100 KB':>10}{'100K/10K':>10}")
    sizes = (1_000, 10_000, 100_000)
    for shape in _commands(1_000):
        times = []
        for size in sizes:
            command = _commands(size)[shape]
            runs = []
            for _ in range(5):
                started = time.perf_counter()
                evaluate_bash(command, RuleSet())
                runs.append((time.perf_counter() - started) * 1000)
            times.append(statistics.median(runs))
        ratio = times[2] / times[1] if times[1] else float("nan")
        print(f"{shape:<12}" + "".join(f"{t:>10.2f}" for t in times) + f"{ratio:>9.0f}x")
    print("(a 10x longer command costing about 10x is linear; 100x per 10x would be quadratic)")


def bench_sandbox(runs: int = 40) -> None:
    sandbox, about = detect_sandbox()
    print()
    if sandbox is None:
        print(f"Sandbox start-up: skipped ({about})")
        return
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        (workspace / "notes.md").write_text("x\n")
        env = child_env(dict(__import__("os").environ))
        policy = SandboxPolicy(workspace)
        plain, boxed = [], []
        for _ in range(runs):
            argv = ["bash", "-c", "true"]
            started = time.perf_counter()
            subprocess.run(argv, cwd=workspace, env=env, check=True)
            plain.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            subprocess.run(
                sandbox.wrap(argv, policy, workspace), cwd=workspace, env=env, check=True
            )
            boxed.append((time.perf_counter() - started) * 1000)
    overhead = [b - p for b, p in zip(boxed, plain, strict=True)]
    print(f"Sandbox start-up ({sandbox.kind}), ms per `bash -c true`:")
    print(f"  plain    {summary(plain)}")
    print(f"  sandbox  {summary(boxed)}")
    print(f"  overhead {summary(overhead)}  (target: median <= 15 ms)")


if __name__ == "__main__":
    bench_classifier()
    bench_sandbox()
