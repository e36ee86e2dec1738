"""An MCP server on protocol 2025-11-25, written out by hand the way the TypeScript SDK's servers
answer (newline-delimited JSON-RPC over stdio), for testing Dexter as a client of such servers.

- `count` sends a progress notification per step (when the call asked for progress) and ends
  with `counted to N`;
- `stall` never answers (a server stuck on a slow job);
- `export_all` requires MCP tasks (`execution.taskSupport: "required"`): a plain call fails;
- `env` says which of the variables named in `names` the process has (values of those named
  in `show`), so tests can check what reached the server.

Run as `python tests/support/mcp_legacy_server.py`.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

PROTOCOL = "2025-11-25"
TOOLS: list[dict[str, Any]] = [
    {
        "name": "count",
        "description": "Count to n, reporting progress.",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
    },
    {
        "name": "stall",
        "description": "Never finishes.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "export_all",
        "description": "Export everything (long-running; only as a task).",
        "inputSchema": {"type": "object", "properties": {}},
        "execution": {"taskSupport": "required"},
    },
    {
        "name": "env",
        "description": "Report environment variables.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "names": {"type": "array", "items": {"type": "string"}},
                "show": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


def call(request_id: Any, params: dict[str, Any]) -> None:
    name = params.get("name")
    arguments = params.get("arguments") or {}
    token = (params.get("_meta") or {}).get("progressToken")
    if name == "count":
        n = int(arguments.get("n", 3))
        for step in range(1, n + 1):
            if token is not None:
                progress = {"progressToken": token, "progress": step, "total": n}
                send(
                    {
                        "method": "notifications/progress",
                        "params": {**progress, "message": f"counted {step}\x1b[31m"},
                    }
                )
        send({"id": request_id, "result": text(f"counted to {n}")})
    elif name == "stall":
        return  # never answers
    elif name == "export_all":
        error = {"code": -32600, "message": "export_all must be called as a task"}
        send({"id": request_id, "error": error})
    elif name == "env":
        names = arguments.get("names", [])
        shown = set(arguments.get("show", []))
        report = {
            key: (os.environ.get(key) if key in shown else key in os.environ) for key in names
        }
        send({"id": request_id, "result": text(json.dumps(report))})
    else:
        send({"id": request_id, "error": {"code": -32602, "message": f"unknown tool {name}"}})


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # notifications: initialized, cancelled
        if method == "initialize":
            result = {
                "protocolVersion": PROTOCOL,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy", "version": "1.0.0"},
            }
            send({"id": request_id, "result": result})
        elif method == "tools/list":
            send({"id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            call(request_id, message.get("params") or {})
        elif method == "ping":
            send({"id": request_id, "result": {}})
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"id": request_id, "error": error})


if __name__ == "__main__":
    main()
