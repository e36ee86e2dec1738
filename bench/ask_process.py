"""Whole-process `dexter ask` against a zero-latency local OpenAI-compatible server.

The server scripts a two-tool answer (two `calculate` calls in one round, then the answer), so
the figure covers start-up, imports, settings, the store, two model streams and two tools.
Targets (issue 11): median <= 0.45 s with bytecode cached, peak RSS <= 100 MB. Then one run under
`python -X importtime`, grouped by top-level package, to show where start-up goes.
Prints the figures; asserts nothing.
Run: uv run python bench/ask_process.py [RUNS]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.wire_server import WireServer, sse

TARGET_SECONDS = 0.45
TARGET_RSS_MB = 100.0
QUESTION = "What is a 3-year CAGR from 100 to 150, and 150 * 1.1?"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _usage() -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "bench",
        "choices": [],
        "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
    }


def _tool_round() -> Any:
    calls = [
        ("call_1", {"operation": "cagr", "start": 100, "end": 150, "years": 3}),
        ("call_2", {"operation": "evaluate", "expression": "150 * 1.1"}),
    ]
    deltas = [
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "calculate", "arguments": json.dumps(args)},
                    }
                ]
            }
        )
        for i, (call_id, args) in enumerate(calls)
    ]
    return sse([*deltas, _chunk({}, "tool_calls"), _usage()])


def _answer_round() -> Any:
    text = "The 3-year CAGR is about 14.5%, and 150 x 1.1 is 165."
    return sse([_chunk({"content": text}), _chunk({}, "stop"), _usage()])


def _run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if process.stderr is not None:
        process.stderr.close()
    # ru_maxrss is in KiB on Linux.
    return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def _importtime(command: list[str], env: dict[str, str], cwd: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *command[1:]],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    by_package: dict[str, int] = defaultdict(int)
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [p.strip() for p in line[len("import time:") :].split("|")]
        if not parts[0].isdigit():
            continue
        by_package[parts[2].strip().split(".")[0]] += int(parts[0])
    total = sum(by_package.values())
    print(f"\nimport time by top-level package (self time, total {total / 1000:.0f} ms):")
    for name, micros in sorted(by_package.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {name:<24} {micros / 1000:7.1f} ms")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    server = WireServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cwd = Path(tmp)
            env = {
                k: v
                for k, v in os.environ.items()
                if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("DEXTER_")
            }
            env |= {
                "DEXTER_HOME": str(cwd / "home"),
                "OPENAI_API_KEY": "sk-bench-000000",
                "OPENAI_BASE_URL": server.url + "/v1",
                "DEXTER_MEMORY": "off",
            }
            command = [sys.executable, "-m", "dexter", "ask", "--model", "openai:bench", QUESTION]
            samples: list[tuple[float, float, int]] = []
            for _ in range(runs + 1):  # the first run warms the file cache and bytecode
                server.push(_tool_round(), _answer_round())
                samples.append(_run(command, env, cwd))
            samples = samples[1:]
            failed = [code for _, _, code in samples if code != 0]
            times = [t for t, _, _ in samples]
            rss = max(r for _, r, _ in samples)
            median = statistics.median(times)
            print(f"dexter ask, whole process (n={runs}, two tool calls, zero-latency server):")
            print(f"  median {median:.3f} s, min {min(times):.3f} s, max {max(times):.3f} s")
            met = "met" if median <= TARGET_SECONDS else "NOT met"
            print(f"  target <= {TARGET_SECONDS} s: {met}")
            rss_met = "met" if rss <= TARGET_RSS_MB else "NOT met"
            print(f"  peak RSS {rss:.0f} MB (target <= {TARGET_RSS_MB:.0f} MB: {rss_met})")
            if failed:
                print(f"  {len(failed)} runs exited non-zero: {failed}")
            server.push(_tool_round(), _answer_round())
            _importtime(command, env, cwd)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
