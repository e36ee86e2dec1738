"""The model response cache's rows (table from migration 7): one finished turn per request hash.

Blocking database calls: callers run them off the event loop (models/cache.py does).
"""

from __future__ import annotations

import json
from typing import Any

from dexter.store.db import Store, now_iso


class ResponseCache:
    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> dict[str, Any] | None:
        rows = self.store.query("SELECT response_json FROM model_responses WHERE key = ?", (key,))
        if not rows:
            return None
        with self.store.transaction() as conn:
            conn.execute("UPDATE model_responses SET hits = hits + 1 WHERE key = ?", (key,))
        value = json.loads(rows[0]["response_json"])
        return value if isinstance(value, dict) else None

    def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO model_responses (key, model, response_json, created_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET model = excluded.model, "
                "response_json = excluded.response_json, created_at = excluded.created_at, "
                "hits = 0",
                (key, model, json.dumps(response, ensure_ascii=False), now_iso()),
            )

    def count(self) -> int:
        return int(self.store.query("SELECT COUNT(*) FROM model_responses")[0][0])
