"""Whole-process `dexter ask` against a zero-latency local server.

The server scripts a two-tool answer (two `calculate` calls in one round, then the answer), so
the figure covers start-up, imports, settings, the store, two model streams and two tools. It
speaks the OpenAI-compatible wire format, or with `--protocol anthropic` the Anthropic Messages one.

Two configurations, their runs interleaved so that a busy machine weighs on both alike:
- default: as users run it, memory on (a home with remembered facts: MEMORY.md and today's note,
  loaded into the prompt and the memory tools offered), whatever proxy variables the caller has;
- lean: memory off (DEXTER_MEMORY=off), what this bench measured before issue 30;
- proxied: the default, with HTTP_PROXY, HTTPS_PROXY and ALL_PROXY set and the server's host in
  NO_PROXY, as on a corporate machine: the proxies are never used, so should cost nothing.
Targets (issues 11 and 30): median <= 0.45 s for each, with bytecode cached; peak RSS <= 100 MB.
CPU time (user + system of the process) is printed beside the wall time: it moves less with the
load of other work on the machine. Then one default run under `python -X importtime`, grouped by
top-level package, to show where start-up goes.
Prints the figures; asserts nothing.
Run: uv run python bench/ask_process.py [RUNS] [--protocol openai|anthropic]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.wire_server import WireServer, sse

TARGET_SECONDS = 0.45
TARGET_RSS_MB = 100.0
QUESTION = "What is a 3-year CAGR from 100 to 150, and 150 * 1.1?"
_CALLS = [
    ("call_1", {"operation": "cagr", "start": 100, "end": 150, "years": 3}),
    ("call_2", {"operation": "evaluate", "expression": "150 * 1.1"}),
]
_ANSWER = "The 3-year CAGR is about 14.5%, and 150 x 1.1 is 165."


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
        for i, (call_id, args) in enumerate(_CALLS)
    ]
    return sse([*deltas, _chunk({}, "tool_calls"), _usage()])


def _answer_round() -> Any:
    return sse([_chunk({"content": _ANSWER}), _chunk({}, "stop"), _usage()])


# The same two rounds in the Anthropic Messages wire format.


def _anthropic_sse(blocks: list[list[dict[str, Any]]], stop_reason: str) -> Any:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "model": "bench",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 900, "output_tokens": 1},
            },
        }
    ]
    for index, (start, *deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 40},
        }
    )
    events.append({"type": "message_stop"})
    return sse(events, event_names=[e["type"] for e in events], done=False)


def _anthropic_tool_round() -> Any:
    return _anthropic_sse(
        [
            [
                {"type": "tool_use", "id": call_id, "name": "calculate", "input": {}},
                {"type": "input_json_delta", "partial_json": json.dumps(args)},
            ]
            for call_id, args in _CALLS
        ],
        "tool_use",
    )


def _anthropic_answer_round() -> Any:
    return _anthropic_sse(
        [[{"type": "text", "text": ""}, {"type": "text_delta", "text": _ANSWER}]], "end_turn"
    )


@dataclass(frozen=True)
class Sample:
    seconds: float
    cpu_seconds: float
    rss_mb: float
    code: int


def _run(command: list[str], env: dict[str, str], cwd: Path) -> Sample:
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    # ru_maxrss is in KiB on Linux.
    return Sample(
        elapsed,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        os.waitstatus_to_exitcode(status),
    )


def _remember(home: Path) -> None:
    """A home with something remembered, so the default run loads and offers its memory."""
    memory = home / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "MEMORY.md").write_text(
        "# What I know about the user\n\n## Preferences\n"
        "- Prefers conservative DCF assumptions: terminal growth at most 2.5%.\n"
        "- Wants short bullet answers with the key numbers first.\n",
        encoding="utf-8",
    )
    (memory / f"{date.today().isoformat()}.md").write_text(
        "- Holds 100 NVDA after trimming in November.\n", encoding="utf-8"
    )


def _report(name: str, samples: list[Sample]) -> None:
    times = [s.seconds for s in samples]
    cpu = [s.cpu_seconds for s in samples]
    rss = max(s.rss_mb for s in samples)
    median = statistics.median(times)
    met = "met" if median <= TARGET_SECONDS else "NOT met"
    rss_met = "met" if rss <= TARGET_RSS_MB else "NOT met"
    print(
        f"  {name:<8} median {median:.3f} s (min {min(times):.3f}, max {max(times):.3f}); "
        f"CPU median {statistics.median(cpu):.3f} s; target <= {TARGET_SECONDS} s: {met}; "
        f"peak RSS {rss:.0f} MB (<= {TARGET_RSS_MB:.0f} MB: {rss_met})"
    )
    failed = [s.code for s in samples if s.code != 0]
    if failed:
        print(f"           {len(failed)} runs exited non-zero: {failed}")


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=9)
    parser.add_argument("--protocol", choices=("openai", "anthropic"), default="openai")
    options = parser.parse_args()
    runs = options.runs
    if options.protocol == "anthropic":
        rounds = (_anthropic_tool_round, _anthropic_answer_round)
        model = "anthropic:bench"
    else:
        rounds = (_tool_round, _answer_round)
        model = "openai:bench"
    server = WireServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cwd = Path(tmp)
            base = {
                k: v
                for k, v in os.environ.items()
                if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("DEXTER_")
            }
            base |= {
                "OPENAI_API_KEY": "sk-bench-000000",
                "OPENAI_BASE_URL": server.url + "/v1",
                "ANTHROPIC_API_KEY": "sk-ant-bench-000000",
                "ANTHROPIC_BASE_URL": server.url,
            }
            _remember(cwd / "default")
            configs = {
                "default": base | {"DEXTER_HOME": str(cwd / "default")},
                "lean": base | {"DEXTER_HOME": str(cwd / "lean"), "DEXTER_MEMORY": "off"},
                "proxied": base
                | {"DEXTER_HOME": str(cwd / "default")}
                | dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"), "http://127.0.0.1:9")
                | {"NO_PROXY": "127.0.0.1,localhost"},
            }
            command = [sys.executable, "-m", "dexter", "ask", "--model", model, QUESTION]
            samples: dict[str, list[Sample]] = {name: [] for name in configs}
            for run in range(runs + 1):  # the first run warms the file cache and bytecode
                for name, env in configs.items():
                    server.push(*(make() for make in rounds))
                    sample = _run(command, env, cwd)
                    if run:
                        samples[name].append(sample)
            print(
                f"dexter ask --model {model}, whole process "
                f"(n={runs} each, interleaved; two tool calls, zero-latency server):"
            )
            for name, taken in samples.items():
                _report(name, taken)
            server.push(*(make() for make in rounds))
            _importtime(command, configs["default"], cwd)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
