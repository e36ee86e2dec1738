"""A stand-in for raw.githubusercontent.com that serves the recorded benchmark splits at their
pinned paths (`/<owner>/<repo>/<commit>/<path>`), on 127.0.0.1: point DEXTER_EVAL_DATA_URL at it
and `dexter eval finance-agent --dataset v2` downloads exactly as it would from GitHub."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dexter.evals.splits import SPLITS
from tests.support.fixtures import fixtures_dir


class SplitSource:
    def __init__(self) -> None:
        root = fixtures_dir() / "evals"
        self.files = {
            f"/{s.repo}/{s.commit}/{s.path}": (root / s.file_name).read_bytes()
            for s in SPLITS.values()
        }
        self.hits: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.hits.append(self.path)
                body = outer.files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write(body or b"not found")

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@contextmanager
def serving_splits() -> Iterator[SplitSource]:
    source = SplitSource()
    thread = threading.Thread(
        target=source.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield source
    finally:
        source.server.shutdown()
        source.server.server_close()
