"""The run's list of sources: every figure a tool shows can be traced to an id like [S3].

Tools register each source they show and print its id next to the data; the model cites the ids
in its answer; the CLI prints the list under the answer and the done event carries it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CITED = re.compile(r"\[(S\d+)\]")


@dataclass(frozen=True, slots=True)
class SourceEntry:
    id: str
    label: str  # e.g. "SEC EDGAR 10-K filed 2025-10-31, acc. 0000320193-25-000079"
    url: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"id": self.id, "label": self.label, "url": self.url}


class SourceLedger:
    """Ids are stable within a run, and the same source always gets the same id."""

    def __init__(self) -> None:
        self._entries: list[SourceEntry] = []
        self._ids: dict[tuple[str, str | None], str] = {}

    def add(self, label: str, url: str | None = None) -> str:
        key = (label, url)
        known = self._ids.get(key)
        if known:
            return known
        entry = SourceEntry(f"S{len(self._entries) + 1}", label, url)
        self._entries.append(entry)
        self._ids[key] = entry.id
        return entry.id

    def entries(self) -> list[SourceEntry]:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def cited_in(self, text: str) -> list[SourceEntry]:
        """The entries an answer cites, in order of first citation."""
        by_id = {e.id: e for e in self._entries}
        seen = dict.fromkeys(m for m in _CITED.findall(text) if m in by_id)
        return [by_id[i] for i in seen]
