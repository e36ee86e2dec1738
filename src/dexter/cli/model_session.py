"""`dexter model --from-session SESSION`: the companies a stored research session looked at,
read from its runs' finance tool calls, so a model follows a question without retyping."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from dexter.config import ConfigError
from dexter.reports.build import read_scratchpad, scratchpad_path
from dexter.store import SessionLookupError, SessionStore, Store

_ARG_NAMES = ("company", "ticker")


def session_companies(store: Store, home: Path, ref: str) -> tuple[str, list[str]]:
    """The session `ref` (an id or unique prefix, as `dexter report` takes) and the companies
    its finance tool calls asked for, in order of first use. ConfigError when the session is
    unknown or looked at no company, saying what to do."""
    sessions = SessionStore(store)
    try:
        session = sessions.get(ref)
    except SessionLookupError as error:
        raise ConfigError(str(error)) from None
    records: list[dict[str, Any]] = []
    for turn in sessions.turns(session.id):
        records.extend(read_scratchpad(scratchpad_path(home, turn.run_id)))
    found = companies_in(records)
    if not found:
        raise ConfigError(
            f"session {session.id} looked at no company (no finance tool call named one); "
            "name the ticker instead, e.g. `dexter model dcf NVDA -o nvda.xlsx`."
        )
    return session.id, found


def companies_in(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Tickers of the successful tool calls in `records`, first use first; a routed call's
    inner data calls count one by one. The ticker the data resolved wins over the argument
    typed ("Apple" asked, AAPL fetched), so one company is not listed twice."""
    seen: dict[str, None] = {}
    for record in records:
        if record.get("type") != "tool_call" or record.get("error"):
            continue
        data = record.get("data")
        inner = data.get("calls") if isinstance(data, Mapping) else None
        if isinstance(inner, list):
            calls = [
                (c.get("args"), c.get("data"))
                for c in inner
                if isinstance(c, Mapping) and c.get("ok")
            ]
        else:
            calls = [(record.get("args"), data)]
        for args, result in calls:
            for ticker in _tickers(args, result):
                seen.setdefault(ticker, None)
    return list(seen)


def _tickers(args: Any, data: Any) -> list[str]:
    company = data.get("company") if isinstance(data, Mapping) else None
    resolved = company.get("ticker") if isinstance(company, Mapping) else None
    rows = data.get("records") if isinstance(data, Mapping) else None
    if not resolved and isinstance(rows, list) and rows and isinstance(rows[0], Mapping):
        resolved = rows[0].get("ticker")
    if isinstance(resolved, str) and resolved.strip():
        return [resolved.strip().upper()]
    if not isinstance(args, Mapping):
        return []
    named = []
    for name in _ARG_NAMES:
        value = args.get(name)
        if isinstance(value, str) and value.strip():
            named.append(value.strip().upper())
    return named[:1]


__all__ = ["companies_in", "session_companies"]
