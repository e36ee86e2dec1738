"""Record what an LLM server says, for the wire tests in tests/test_llm_servers.py.

Run it against a server you have (llama.cpp, vLLM, Ollama, LM Studio, LiteLLM or any other
OpenAI- or Anthropic-compatible one):

    uv run python scripts/record_llm_server.py --name vllm \\
        --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
    uv run python scripts/record_llm_server.py --name litellm_messages --protocol anthropic \\
        --base-url http://127.0.0.1:4000 --model gemma3 --api-key-env LITELLM_KEY

It makes the reads Dexter's server probe makes (the model listing, llama.cpp's /props, LM Studio's
/api/v1 and /api/v0 models, Ollama's /api/show, LiteLLM's /model/info), then one streamed
"Say hello." answer, and optionally a forced tool call (`--tool-call`, slow on a CPU), a tool-call
turn sent back with null content (`--null-content`), and an over-long prompt streamed and not
(`--overflow-chars N`, with N well above four times the window). Everything is written to
tests/data/llm_servers/NAME.json in the format the tests replay, replacing a composed file.
Response headers that vary or could identify you (dates, cookies) are left out; the key is never
written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "llm_servers"
# The same User-Agents as Dexter's probe and its model calls, so a server's log shows the same.
PROBE_USER_AGENT = "dexter-py (server probe)"
CALL_USER_AGENT = "dexter-py"
DROPPED_HEADERS = frozenset(
    {"date", "content-length", "transfer-encoding", "connection", "set-cookie", "keep-alive"}
)
CALCULATE_TOOL = {
    "name": "calculate",
    "description": "Evaluate an arithmetic expression.",
    "parameters": {
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": ["evaluate"]},
            "expression": {"type": "string"},
        },
        "required": ["operation", "expression"],
    },
}


def kept_headers(headers: httpx2.Headers) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items() if k.lower() not in DROPPED_HEADERS}


def body_of(response: httpx2.Response) -> dict[str, Any]:
    try:
        return {"body": response.json()}
    except ValueError:
        return {"text": response.text}


def root_of(base_url: str) -> str:
    root = base_url.rstrip("/")
    for suffix in ("/v1", "/api"):
        if root.endswith(suffix):
            root = root[: -len(suffix)]
    return root


class Recorder:
    def __init__(self, args: argparse.Namespace) -> None:
        self.base: str = args.base_url.rstrip("/")
        self.root = root_of(self.base)
        self.model: str = args.model
        self.anthropic = args.protocol == "anthropic"
        key = os.environ.get(args.api_key_env, "") if args.api_key_env else ""
        headers = {"user-agent": PROBE_USER_AGENT}
        if key:
            headers["authorization"] = f"Bearer {key}"
            if self.anthropic:
                headers["x-api-key"] = key
        if self.anthropic:
            headers["anthropic-version"] = "2023-06-01"
        self.client = httpx2.Client(headers=headers, timeout=args.timeout, follow_redirects=True)

    def probes(self) -> list[dict[str, Any]]:
        listing = "/v1/models" if self.anthropic else "/models"
        reads: list[tuple[str, str, dict[str, Any] | None]] = [
            ("GET", self.base + listing, None),
            ("GET", self.root + "/props", None),
            ("GET", self.root + "/api/v1/models", None),
            ("GET", f"{self.root}/api/v0/models/{quote(self.model, safe='')}", None),
            ("POST", self.root + "/api/show", {"model": self.model}),
            ("GET", self.root + "/model/info", None),
        ]
        recorded = []
        for method, url, payload in reads:
            try:
                response = self.client.request(method, url, json=payload)
            except httpx2.HTTPError as error:
                print(f"  {method} {url}: {type(error).__name__}", file=sys.stderr)
                continue
            print(f"  {method} {url}: HTTP {response.status_code}", file=sys.stderr)
            recorded.append(
                {
                    "method": method,
                    "path": urlsplit(url).path,
                    "status": response.status_code,
                    "headers": kept_headers(response.headers),
                    **body_of(response),
                }
            )
        return recorded

    def _chat(self, messages: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
        if self.anthropic:
            system = [m["content"] for m in messages if m["role"] == "system"]
            turns = [m for m in messages if m["role"] != "system"]
            body: dict[str, Any] = {
                "model": self.model,
                "messages": turns,
                "max_tokens": max_tokens,
            }
            if system:
                body["system"] = "\n\n".join(system)
            return body
        return {"model": self.model, "messages": messages, "max_tokens": max_tokens}

    def _url(self) -> str:
        return self.base + ("/v1/messages" if self.anthropic else "/chat/completions")

    def streamed(self, body: dict[str, Any]) -> dict[str, Any]:
        body = {**body, "stream": True}
        if not self.anthropic:
            body["stream_options"] = {"include_usage": True}
        with self.client.stream(
            "POST", self._url(), json=body, headers={"user-agent": CALL_USER_AGENT}
        ) as response:
            if not response.is_success:
                response.read()
                return {"status": response.status_code, "headers": kept_headers(response.headers)}
            events: list[dict[str, Any]] = []
            name: str | None = None
            data: list[str] = []
            for line in response.iter_lines():
                if not line:
                    if data:
                        events.append({"event": name, "data": "\n".join(data)})
                    name, data = None, []
                elif line.startswith("event:"):
                    name = line[6:].strip() or None
                elif line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
            if data:
                events.append({"event": name, "data": "\n".join(data)})
            return {
                "status": response.status_code,
                "headers": kept_headers(response.headers),
                "events": events,
            }

    def plain(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self.client.post(self._url(), json=body, headers={"user-agent": CALL_USER_AGENT})
        return {
            "status": response.status_code,
            "headers": kept_headers(response.headers),
            **body_of(response),
        }

    def completions(self, args: argparse.Namespace) -> dict[str, Any]:
        hello = [{"role": "user", "content": "Say hello."}]
        out: dict[str, Any] = {"hello": self.streamed(self._chat(hello, 32))}
        print("  hello: recorded", file=sys.stderr)
        if args.tool_call:
            ask = [{"role": "user", "content": "What is 6 * 7? Use the calculate tool."}]
            body = self._chat(ask, 128)
            if self.anthropic:
                body["tools"] = [
                    {
                        "name": CALCULATE_TOOL["name"],
                        "description": CALCULATE_TOOL["description"],
                        "input_schema": CALCULATE_TOOL["parameters"],
                    }
                ]
                body["tool_choice"] = {"type": "tool", "name": "calculate"}
            else:
                body["tools"] = [{"type": "function", "function": CALCULATE_TOOL}]
                body["tool_choice"] = {"type": "function", "function": {"name": "calculate"}}
            out["tool_call"] = self.streamed(body)
            print("  tool_call: recorded", file=sys.stderr)
        if args.null_content and not self.anthropic:
            turn: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "calculate",
                            "arguments": '{"operation": "evaluate", "expression": "6 * 7"}',
                        },
                    }
                ],
            }
            messages: list[dict[str, Any]] = [
                {"role": "user", "content": "What is 6 * 7?"},
                turn,
                {"role": "tool", "tool_call_id": "call_1", "content": "6 * 7 = 42"},
            ]
            body = self._chat(messages, 1)
            body["tools"] = [{"type": "function", "function": CALCULATE_TOOL}]
            out["null_content"] = self.plain(body)
            print("  null_content: recorded", file=sys.stderr)
        if args.overflow_chars:
            long = [{"role": "user", "content": "word " * (args.overflow_chars // 5)}]
            out["overflow_stream"] = self.streamed(self._chat(long, 1))
            out["overflow"] = self.plain(self._chat(long, 1))
            print("  overflow: recorded", file=sys.stderr)
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True, help="file name under tests/data/llm_servers")
    parser.add_argument("--base-url", required=True, help="as Dexter is given it (…/v1)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--protocol", choices=("openai", "anthropic"), default="openai")
    parser.add_argument("--api-key-env", help="environment variable holding the server's key")
    parser.add_argument("--server", default="", help='what runs there, e.g. "vLLM 0.10.1"')
    parser.add_argument("--tool-call", action="store_true", help="record a forced tool call")
    parser.add_argument("--null-content", action="store_true", help="send null tool-call content")
    parser.add_argument("--overflow-chars", type=int, default=0, help="an over-long prompt")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    recorder = Recorder(args)
    print(f"Recording {args.base_url} ({args.model})", file=sys.stderr)
    recording = {
        "server": args.server or f"the server at {urlsplit(args.base_url).netloc}",
        "provenance": (
            f"Recorded from a real server on {datetime.now(UTC).date().isoformat()} with "
            "scripts/record_llm_server.py."
        ),
        "protocol": args.protocol,
        "base_path": urlsplit(args.base_url).path.rstrip("/"),
        "model": args.model,
        "probes": recorder.probes(),
        "completions": recorder.completions(args),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / f"{args.name}.json"
    target.write_text(json.dumps(recording, indent=2) + "\n", encoding="utf-8")
    print(f"Wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
