"""The token ledger: every model call and tool call, whatever its outcome, and reports over them.

Costs are computed when a call is recorded and stored with it, so changing a price later never
rewrites what past sessions were shown to cost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from dexter.models.types import Usage
from dexter.store.backend import insert_id
from dexter.store.db import Store, now_iso
from dexter.store.prices import Price, price_for

ReportBy = Literal["model", "tool", "phase", "day", "session", "principal"]
REPORT_KEYS: tuple[ReportBy, ...] = ("model", "tool", "phase", "day", "session", "principal")
# Calls outside any session (an eval judge, `dexter tools run`) are the operator's; calls of a
# session deleted since (`dexter sessions rm` keeps the ledger) can no longer be attributed.
REMOVED_SESSIONS = "(removed sessions)"


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Sums over model calls (and counts of tool calls) for a session, a run, or everything.

    Token fields are what providers reported; `estimated_input_tokens` and
    `estimated_output_tokens` are Dexter's own character estimates for calls whose usage was never
    reported (a server that sends none, such as llama.cpp's; failed or cancelled calls). `counted`
    is the two together. `cost_usd` is None when no call had a known price; `unpriced_calls` says
    how many lack one.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    estimated_input_tokens: int = 0
    estimated_output_tokens: int = 0
    calls: int = 0
    failed_calls: int = 0
    estimated_calls: int = 0
    cost_usd: float | None = None
    unpriced_calls: int = 0
    tool_calls: int = 0
    failed_tool_calls: int = 0

    @property
    def usage(self) -> Usage:
        """What the servers reported."""
        return Usage(
            self.input_tokens, self.output_tokens, self.cached_tokens, self.reasoning_tokens
        )

    @property
    def estimated(self) -> bool:
        return bool(self.estimated_input_tokens or self.estimated_output_tokens)

    @property
    def counted(self) -> Usage:
        """Reported and estimated tokens together, flagged `estimated` when any were."""
        return Usage(
            self.input_tokens + self.estimated_input_tokens,
            self.output_tokens + self.estimated_output_tokens,
            self.cached_tokens,
            self.reasoning_tokens,
            estimated=self.estimated,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class UsageRow(UsageTotals):
    """One group of a report; `key` is the model, tool, phase, day (UTC), session or principal.

    For `by="tool"`, model calls made for a tool (router calls) count under that tool and the
    rest under the key "(model)"; tool call counts are filled in for tool, day, session and
    principal.
    """

    key: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, **{k: v for k, v in asdict(self).items() if k != "key"}}


_MODEL_SUMS = """
    COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
    COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(reasoning_tokens), 0),
    COALESCE(SUM(CASE WHEN reported <> 0 THEN 0 ELSE COALESCE(estimated_input_tokens, 0) END), 0),
    COALESCE(SUM(CASE WHEN reported <> 0 THEN 0 ELSE COALESCE(estimated_output_tokens, 0) END), 0),
    COUNT(*), COALESCE(SUM(CASE WHEN ok = 0 THEN 1 ELSE 0 END), 0),
    COALESCE(SUM(CASE WHEN reported = 0 THEN 1 ELSE 0 END), 0),
    SUM(cost_usd), COALESCE(SUM(CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END), 0)
"""

# Flags are 0/1 integers on both backends: counted with CASE, which Postgres (no sum of
# booleans) and SQLite both take.
_FAILED = "COALESCE(SUM(CASE WHEN ok = 0 THEN 1 ELSE 0 END), 0)"

_GROUP_SQL: dict[ReportBy, str] = {
    "model": "provider || ':' || model",
    "tool": "COALESCE(tool, '(model)')",
    "phase": "phase",
    "day": "substr(at, 1, 10)",
    "session": "COALESCE(session_id, '(none)')",
    "principal": "CASE WHEN session_id IS NULL THEN 'operator' ELSE COALESCE("
    "(SELECT s.principal_id FROM sessions s WHERE s.id = session_id), "
    f"'{REMOVED_SESSIONS}') END",
}


def _where(
    session_id: str | None, run_id: str | None, principal_id: str | None = None
) -> tuple[str, list[str]]:
    clauses, params = [], []
    if principal_id is not None:
        clauses.append(f"({_GROUP_SQL['principal']}) = ?")
        params.append(principal_id)
    if session_id is not None:
        clauses.append("session_id = ?")
        params.append(session_id)
    if run_id is not None:
        clauses.append("run_id = ?")
        params.append(run_id)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _totals_fields(values: Any) -> dict[str, Any]:
    names = (
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "reasoning_tokens",
        "estimated_input_tokens",
        "estimated_output_tokens",
        "calls",
        "failed_calls",
        "estimated_calls",
        "cost_usd",
        "unpriced_calls",
    )
    return dict(zip(names, values, strict=True))


class Ledger:
    def __init__(self, store: Store, prices: Mapping[str, Price] | None = None) -> None:
        """`prices` are the settings overrides (see `prices.overrides_from_settings`)."""
        self.store = store
        self.prices = dict(prices or {})

    def record_model_call(
        self,
        session_id: str | None,
        run_id: str | None,
        provider: str,
        model: str,
        phase: str,
        usage: Usage | None,
        *,
        tool: str | None = None,
        estimated_input_tokens: int | None = None,
        ok: bool = True,
        error: str | None = None,
        at: datetime | None = None,
    ) -> int:
        """Record one model call. `usage=None` means the provider reported nothing: the call is
        stored as estimated and, if priced, costed on `estimated_input_tokens` alone. Pass no
        estimate for calls that never reached the model (auth errors), so they cost nothing.
        A `usage` flagged `estimated` (the server reported none, so the wire client estimated
        it) is stored as such an estimate, input and output, and costed on it."""
        price = price_for(provider, model, self.prices)
        estimated_output_tokens: int | None = None
        if usage is not None and usage.estimated:
            counted: Usage = usage
            estimated_input_tokens = usage.input_tokens
            estimated_output_tokens = usage.output_tokens
            usage = Usage(
                cached_tokens=usage.cached_tokens, reasoning_tokens=usage.reasoning_tokens
            )
            reported = False
        else:
            reported = usage is not None
            counted = usage or Usage(input_tokens=estimated_input_tokens or 0)
        cost = price.cost(counted) if price is not None else None
        usage = usage or Usage()
        with self.store.transaction() as conn:
            return insert_id(
                conn,
                "INSERT INTO model_calls (session_id, run_id, at, provider, model, phase, tool, "
                "input_tokens, output_tokens, cached_tokens, reasoning_tokens, "
                "estimated_input_tokens, estimated_output_tokens, reported, ok, error, cost_usd) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    run_id,
                    now_iso(at),
                    provider,
                    model,
                    phase,
                    tool,
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cached_tokens,
                    usage.reasoning_tokens,
                    estimated_input_tokens,
                    estimated_output_tokens,
                    reported,
                    ok,
                    error,
                    cost,
                ),
            )

    def record_tool_call(
        self,
        session_id: str | None,
        run_id: str | None,
        tool: str,
        args: Mapping[str, Any] | str | None = None,
        *,
        call_id: str | None = None,
        ok: bool = True,
        error: str | None = None,
        duration_ms: float | None = None,
        result_chars: int | None = None,
        at: datetime | None = None,
    ) -> int:
        if args is None:
            args_json = "{}"
        elif isinstance(args, str):
            args_json = args
        else:
            args_json = json.dumps(args, ensure_ascii=False, default=str)
        with self.store.transaction() as conn:
            return insert_id(
                conn,
                "INSERT INTO tool_calls (session_id, run_id, call_id, at, tool, args_json, ok, "
                "error, duration_ms, result_chars) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    run_id,
                    call_id,
                    now_iso(at),
                    tool,
                    args_json,
                    ok,
                    error,
                    duration_ms,
                    result_chars,
                ),
            )

    def totals(
        self,
        session_id: str | None = None,
        run_id: str | None = None,
        *,
        principal_id: str | None = None,
    ) -> UsageTotals:
        """Sums over everything, or one session's, run's or principal's calls."""
        where, params = _where(session_id, run_id, principal_id)
        model_row = self.store.query(f"SELECT {_MODEL_SUMS} FROM model_calls{where}", params)[0]
        tool_row = self.store.query(
            f"SELECT COUNT(*), {_FAILED} FROM tool_calls{where}",
            params,
        )[0]
        return UsageTotals(
            **_totals_fields(tuple(model_row)),
            tool_calls=tool_row[0],
            failed_tool_calls=tool_row[1],
        )

    def report(
        self, by: ReportBy, session_id: str | None = None, *, principal_id: str | None = None
    ) -> list[UsageRow]:
        """Model-call sums grouped by `by`, biggest token users first (days in date order);
        with `principal_id`, only the calls of that principal's sessions."""
        if by not in _GROUP_SQL:
            raise ValueError(f"report by must be one of {', '.join(REPORT_KEYS)}, not {by!r}")
        group = _GROUP_SQL[by]
        where, params = _where(session_id, None, principal_id)
        rows: dict[str, dict[str, Any]] = {}
        for row in self.store.query(
            f"SELECT {group}, {_MODEL_SUMS} FROM model_calls{where} GROUP BY 1", params
        ):
            rows[row[0]] = _totals_fields(tuple(row)[1:])
        if by in ("tool", "day", "session", "principal"):
            # The tool_calls table has the same columns for these groupings, bar the NULL tool.
            tool_group = "tool" if by == "tool" else _GROUP_SQL[by]
            for row in self.store.query(
                f"SELECT {tool_group}, COUNT(*), {_FAILED} FROM tool_calls{where} GROUP BY 1",
                params,
            ):
                fields = rows.setdefault(row[0], {})
                fields["tool_calls"], fields["failed_tool_calls"] = row[1], row[2]
        result = [UsageRow(key=key, **fields) for key, fields in rows.items()]
        if by == "day":
            return sorted(result, key=lambda r: r.key)
        return sorted(result, key=lambda r: (-(r.input_tokens + r.output_tokens), -r.calls, r.key))
