"""The interactive session shows new alerts from scheduled jobs as one line, once."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from dexter.cli.interactive import DexterApp
from dexter.cli.interactive.widgets import Note
from dexter.cron import jobs as job_api
from dexter.cron.notices import alert_notice
from dexter.cron.schedule import parse_every
from dexter.cron.store import CronStore
from dexter.models.scripted import ScriptedModel
from dexter.store import open_store
from tests.support.sessions import hand_session

NOW = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


def add_alerts(cron: CronStore, *texts: str) -> None:
    job = job_api.create_job(
        cron, name="NVDA watch", message="10-Q?", schedule=parse_every("1h", anchor=NOW), now=NOW
    )
    for text in texts:
        cron.add_alert(
            job=job, run_id=None, text=text, target="outbox", created_at=NOW, delivered=True
        )


async def test_new_alerts_appear_once_as_a_single_line(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    store = open_store(home)
    cron = CronStore(store)
    add_alerts(cron, "Old news.", "NVDA filed its 10-Q: revenue $57.0B.")
    agent = hand_session(home, ScriptedModel([]))
    agent.new_session()
    app = DexterApp(agent, model_label="scripted:test")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        lines = [n.text for n in app.query("#log > Note.info").results(Note)]
        assert len(lines) == 1
        assert lines[0].startswith("🔔 2 new alerts from scheduled jobs")
        assert "NVDA filed its 10-Q" in lines[0] and "dexter cron logs" in lines[0]
        await app._show_alerts()
        assert len(list(app.query("#log > Note.info").results(Note))) == 1
    assert cron.unseen() == []


def test_notice_text() -> None:
    assert alert_notice([]) is None
