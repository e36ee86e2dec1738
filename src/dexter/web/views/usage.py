"""Usage: tokens and estimated cost by day, model and (for the operator) principal, from the
same ledger report `dexter usage` prints; a web user sees only their own sessions' calls."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dexter.store.ledger import ReportBy, UsageRow, UsageTotals
from dexter.web.auth import login_of
from dexter.web.state import web_state
from dexter.web.templating import page

DAYS_SHOWN = 31


def _cost(cost: float | None, unpriced: int) -> str:
    if cost is None:
        return "—" if unpriced else "$0.00"
    text = f"${cost:,.4f}" if cost < 1 else f"${cost:,.2f}"
    return text + (" +?" if unpriced else "")


def _row(row: UsageRow | UsageTotals, key: str) -> dict[str, Any]:
    counted = row.counted
    return {
        "key": key,
        "calls": row.calls,
        "input": counted.input_tokens,
        "output": counted.output_tokens,
        "cached": row.cached_tokens,
        "estimated": counted.estimated,
        "cost": _cost(row.cost_usd, row.unpriced_calls),
        "tool_calls": row.tool_calls,
    }


async def usage_page(request: Request) -> Response:
    from dexter.store import Ledger

    state = web_state(request)
    principal = login_of(request).principal
    whose = None if principal.is_operator else principal.id
    groups: tuple[tuple[ReportBy, str, str], ...] = (
        ("day", "Day (UTC)", "By day (UTC)"),
        ("model", "Model", "By model"),
    )
    if principal.is_operator:
        groups += (("principal", "Principal", "By principal"),)

    def report() -> dict[str, Any]:
        store = state.runtime.existing_store()
        if store is None:
            return {"tables": [], "totals": None, "unpriced": 0}
        ledger = Ledger(store)
        tables = []
        for by, label, heading in groups:
            rows = ledger.report(by, principal_id=whose)
            if by == "day":
                rows = rows[-DAYS_SHOWN:][::-1]  # newest first
            rows_shown = [_row(r, r.key) for r in rows]
            tables.append({"by": by, "label": label, "heading": heading, "rows": rows_shown})
        totals = ledger.totals(principal_id=whose)
        return {
            "tables": tables if totals.calls else [],
            "totals": _row(totals, "All") if totals.calls else None,
            "unpriced": totals.unpriced_calls,
        }

    return page(request, "usage.html", **await state.hub.blocking(report))


routes = [Route("/usage", usage_page, methods=["GET"])]
