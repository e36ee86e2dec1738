"""The heartbeat checklist file and what unattended runs are asked."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from dexter.cron.prompts import (
    DEFAULT_CHECKLIST,
    HEARTBEAT_FILE,
    checklist_is_empty,
    count_items,
    heartbeat_prompt,
    job_prompt,
    read_checklist,
)
from dexter.cron.suppression import HEARTBEAT_OK

NOW = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "empty"),
    [
        ("", True),
        ("\n\n", True),
        ("# Heartbeat\n\n## Markets\n", True),
        ("# Heartbeat\n-\n* \n- [ ]\n", True),
        ("- NVDA below $100", False),
        ("Check the Fed calendar", False),
    ],
)
def test_empty_checklist(text: str, empty: bool) -> None:
    assert checklist_is_empty(text) is empty


def test_missing_file_uses_the_default_and_empty_file_skips(tmp_path: Path) -> None:
    assert read_checklist(tmp_path) == DEFAULT_CHECKLIST
    (tmp_path / HEARTBEAT_FILE).write_text("# Heartbeat\n\n- \n", encoding="utf-8")
    assert read_checklist(tmp_path) is None
    (tmp_path / HEARTBEAT_FILE).write_text("- NVDA below $100\n- AAPL 10-Q\n", encoding="utf-8")
    text = read_checklist(tmp_path)
    assert text is not None and count_items(text) == 2


def test_heartbeat_prompt_has_checklist_instructions_and_the_local_time() -> None:
    prompt = heartbeat_prompt("- NVDA below $100", now=NOW, tz="America/New_York")
    assert prompt.startswith("[HEARTBEAT CHECK]")
    assert "## Checklist\n- NVDA below $100" in prompt
    assert f"exactly {HEARTBEAT_OK}" in prompt
    assert "Tuesday 2026-12-01 10:00 (America/New_York)" in prompt
    assert prompt.count("## Instructions") == 1


def test_job_prompt_ask_mode_adds_the_question() -> None:
    keep = job_prompt(
        "NVDA watch", "Tell me when NVDA files its 10-Q.", fulfillment="keep", now=NOW, tz="UTC"
    )
    ask = job_prompt(
        "NVDA watch", "Tell me when NVDA files its 10-Q.", fulfillment="ask", now=NOW, tz="UTC"
    )
    assert keep.startswith("[SCHEDULED JOB: NVDA watch]")
    assert "Tell me when NVDA files its 10-Q." in keep
    assert "keep monitoring" not in keep
    assert "keep monitoring" in ask
    assert "nobody can answer questions or approve actions" in keep
