"""Build a `Report` from what a run stored: the turn in the session store (question, answer,
status) and the run's scratchpad (every tool call with its structured data, the sources)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from dexter.config import ConfigError
from dexter.figure_marks import verification_from_dict
from dexter.figures.types import Verification
from dexter.reports.model import TOOL_KINDS, Report, Source, Table, table_from_records
from dexter.store import SessionLookupError, SessionStore, Store


def scratchpad_path(home: Path, run_id: str) -> Path:
    return home / "scratchpad" / f"{run_id}.jsonl"


def read_scratchpad(path: Path) -> list[dict[str, Any]]:
    """The run's records; a line that does not parse (a crash mid-write) is skipped."""
    if not path.is_file():
        return []
    records = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                records.append(value)
    return records


def tables_from_calls(records: Iterable[Mapping[str, Any]]) -> list[Table]:
    """Every statement table the run's tool calls fetched, routed calls included, deduplicated
    (the same company and statement fetched twice keeps the later, usually longer, one)."""
    found: dict[tuple[str, str, str], Table] = {}
    for record in records:
        if record.get("type") != "tool_call" or record.get("error"):
            continue
        for tool, data in _data_calls(str(record.get("tool")), record.get("data")):
            kind = TOOL_KINDS.get(tool)
            if kind is None or not isinstance(data, Mapping):
                continue
            company = data.get("company") if isinstance(data.get("company"), Mapping) else {}
            table = table_from_records(kind, data.get("records") or [], company or {})
            if table is not None:
                period = str(data.get("period") or "")
                found[(table.ticker, kind, period)] = table
    return list(found.values())


def _data_calls(tool: str, data: Any) -> list[tuple[str, Any]]:
    if not isinstance(data, Mapping):
        return []
    calls = data.get("calls")
    if isinstance(calls, list):  # a routed meta-tool: its inner data calls
        return [
            (str(c.get("tool")), c.get("data"))
            for c in calls
            if isinstance(c, Mapping) and c.get("ok")
        ]
    return [(tool, data)]


def _sources(records: list[dict[str, Any]]) -> tuple[Source, ...]:
    answer = next((r for r in reversed(records) if r.get("type") == "answer"), None)
    listed = answer.get("sources") if answer else None
    out = []
    for item in listed or []:
        if isinstance(item, Mapping) and item.get("id"):
            out.append(
                Source(str(item["id"]), str(item.get("label") or ""), item.get("url") or None)
            )
    return tuple(out)


def _verification(
    stored: dict[str, Any] | None, records: list[dict[str, Any]]
) -> Verification | None:
    """The turn's stored check; else the one its scratchpad recorded with the answer (a turn
    written before the store kept checks)."""
    if stored is not None:
        return verification_from_dict(stored)
    answer = next((r for r in reversed(records) if r.get("type") == "answer"), None)
    return verification_from_dict(answer.get("verification")) if answer else None


def report_for(store: Store, home: Path, ref: str, *, as_of: str | None = None) -> Report:
    """The report of run `ref` (a run id), or of the last answered turn of session `ref` (an id
    or unique prefix). ConfigError with what exists when nothing matches."""
    sessions = SessionStore(store)
    key = ref.strip()
    row = store.query(
        "SELECT t.id, t.session_id FROM turns t WHERE t.run_id = ? ORDER BY t.id DESC LIMIT 1",
        (key,),
    )
    if row:
        session = sessions.get(str(row[0]["session_id"]))
        turns = [t for t in sessions.turns(session.id) if t.id == row[0]["id"]]
    else:
        try:
            session = sessions.get(key)
        except SessionLookupError as error:
            raise ConfigError(str(error)) from None
        turns = [t for t in sessions.turns(session.id) if t.status == "answered"]
        if not turns:
            raise ConfigError(f"session {session.id} has no answered question to report yet.")
    turn = turns[-1]
    records = read_scratchpad(scratchpad_path(home, turn.run_id))
    return Report(
        question=turn.query,
        answer=turn.answer,
        status=turn.status,
        model=session.model,
        created_at=turn.started_at,
        session_id=session.id,
        run_id=turn.run_id,
        sources=_sources(records),
        tables=tuple(tables_from_calls(records)),
        as_of=as_of,
        verification=_verification(turn.verification, records),
    )


__all__ = ["read_scratchpad", "report_for", "scratchpad_path", "tables_from_calls"]
