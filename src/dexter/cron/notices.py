"""The one-line notice the interactive session shows when scheduled jobs produced alerts."""

from __future__ import annotations

from collections.abc import Sequence

from dexter.cron.model import OutboxItem
from dexter.cron.store import CronStore

_PREVIEW_CHARS = 70


def alert_notice(items: Sequence[OutboxItem]) -> str | None:
    """'2 new alerts from scheduled jobs (latest, NVDA watch: NVDA filed…): dexter cron logs'."""
    if not items:
        return None
    latest = max(items, key=lambda item: item.id)
    preview = " ".join(latest.text.split())
    if len(preview) > _PREVIEW_CHARS:
        preview = preview[: _PREVIEW_CHARS - 1].rstrip() + "…"
    count = len(items)
    noun = "alert" if count == 1 else "alerts"
    return (
        f"🔔 {count} new {noun} from scheduled jobs (latest, {latest.job_name}: {preview}); "
        "`dexter cron logs` shows them."
    )


def take_notice(cron: CronStore) -> str | None:
    """The notice for alerts not shown anywhere yet, marking them shown."""
    items = cron.unseen(limit=50)
    notice = alert_notice(items)
    cron.mark_seen([item.id for item in items])
    return notice
