"""An on-disk cache of HTTP response bodies with per-entry freshness.

Entries are written atomically (temporary file, then rename), so an interrupted write never
leaves a partial file that a later read would trust.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dexter.atomicfile import PRIVATE, private_dir, write_bytes

FOREVER = math.inf


@dataclass(frozen=True)
class CachedBody:
    body: bytes
    fetched_at: float  # epoch seconds
    url: str


class DiskCache:
    def __init__(self, directory: Path, *, now: Callable[[], float] = time.time) -> None:
        self.directory = directory
        self._now = now
        self.hits = 0
        self.misses = 0
        # Set by the first write that fails (read-only home, full disk); later writes are
        # skipped. A cache is an optimisation: it never stops the fetch it would have saved.
        self.write_error: OSError | None = None

    def _paths(self, key: str) -> tuple[Path, Path]:
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        folder = self.directory / digest[:2]
        return folder / f"{digest}.body", folder / f"{digest}.json"

    def get(self, key: str, ttl: float) -> CachedBody | None:
        body_path, meta_path = self._paths(key)
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            fetched_at = float(meta["fetched_at"])
            if meta.get("key") != key or meta.get("size") != body_path.stat().st_size:
                raise ValueError("cache entry does not match its key or size")
            if self._now() - fetched_at > ttl:
                self.misses += 1
                return None
            body = body_path.read_bytes()
        except FileNotFoundError:
            self.misses += 1
            return None
        except (OSError, ValueError, KeyError, TypeError):
            # A damaged entry is dropped and refetched rather than trusted.
            self._remove(body_path, meta_path)
            self.misses += 1
            return None
        self.hits += 1
        return CachedBody(body=body, fetched_at=fetched_at, url=str(meta.get("url", key)))

    def put(self, key: str, url: str, body: bytes, *, fetched_at: float | None = None) -> None:
        """Store `body`; `fetched_at` (epoch seconds) when it was fetched earlier than now, e.g.
        by another machine of a team, so that it goes stale when the original does."""
        if self.write_error is not None:
            return
        body_path, meta_path = self._paths(key)
        when = self._now() if fetched_at is None else fetched_at
        meta = {"key": key, "url": url, "fetched_at": when, "size": len(body)}
        try:
            private_dir(body_path.parent)
            # Body first, metadata last: a reader only trusts an entry whose metadata exists and
            # whose size matches, so a crash between the two writes leaves a miss, not a hit.
            write_bytes(body_path, body, mode=PRIVATE)
            write_bytes(meta_path, json.dumps(meta).encode(), mode=PRIVATE)
        except OSError as error:
            self.write_error = error

    def _remove(self, *paths: Path) -> None:
        for path in paths:
            try:
                path.unlink()
            except OSError:
                pass
