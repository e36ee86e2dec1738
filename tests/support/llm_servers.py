"""Real LLM servers' answers, replayed by the wire server.

Each file in `tests/data/llm_servers/` is what one kind of server says: its answers to Dexter's
server probe (`probes`) and a few completions (`completions`: a streamed "hello", a tool call,
an overflow refusal …), in the format `scripts/record_llm_server.py` writes. Files recorded from
a real server replace the composed ones without touching the tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.wire_server import Reply, WireServer

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "llm_servers"


@dataclass(frozen=True)
class ServerRecording:
    name: str
    data: dict[str, Any]

    @property
    def model(self) -> str:
        return str(self.data["model"])

    @property
    def protocol(self) -> str:
        return str(self.data.get("protocol") or "openai")

    def base_url(self, server: WireServer) -> str:
        return server.url + str(self.data.get("base_path") or "")

    def completion(self, name: str) -> Reply:
        return as_reply(self.data["completions"][name])

    def serve_probes(self, server: WireServer) -> None:
        """Make `server` answer Dexter's probe reads as this server did."""
        for probe in self.data["probes"]:
            server.describe(probe["method"], probe["path"], as_reply(probe))


def load(name: str) -> ServerRecording:
    return ServerRecording(name, json.loads((FIXTURES / f"{name}.json").read_text()))


def as_reply(exchange: dict[str, Any]) -> Reply:
    """A recorded answer: a JSON (or text) body, or a list of server-sent events."""
    headers = dict(exchange.get("headers") or {})
    status = int(exchange.get("status", 200))
    if "events" in exchange:
        chunks = []
        for event in exchange["events"]:
            name = f"event: {event['event']}\n" if event.get("event") else ""
            chunks.append(f"{name}data: {event['data']}\n\n".encode())
        # An empty list is an empty stream: the headers, then the connection closes.
        return Reply(status=status, headers=headers, chunks=chunks, body=b"")
    if "body" in exchange:
        body = json.dumps(exchange["body"]).encode()
    else:
        body = str(exchange.get("text") or "").encode()
    return Reply(status=status, headers=headers, body=body)
