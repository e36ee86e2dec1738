"""`dexter watch …` and `dexter daemon --once` as a user runs them, against the SEC mirror
served on 127.0.0.1 (advanced with one new 8-K built from recorded documents; see
tests/support/watch_filings.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import main
from tests.support.sec_mirror import Mirror, MirrorServer
from tests.support.watch_filings import (
    EARNINGS_ACCESSION,
    SUBMISSIONS,
    advanced,
    earnings_folder,
    eight_k_row,
    recorded_submissions,
)


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mirror]:
    served = Mirror()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    with MirrorServer(served) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        yield served


def test_watch_add_poll_alert_show_pause_rm(
    mirror: Mirror, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["watch", "add", "nvda", "--forms", "8-K", "--items", "2.02"]) == 0
    out = capsys.readouterr().out
    assert "NVDA  forms 8-K items 2.02  -> outbox" in out
    assert main(["daemon", "--once"]) == 0  # the first poll notes where NVDA's history stands
    mirror.extra[SUBMISSIONS] = advanced(
        recorded_submissions(), eight_k_row(EARNINGS_ACCESSION, "2.02,9.01")
    )
    mirror.extra.update(earnings_folder())
    capsys.readouterr()
    assert main(["watch", "test", "NVDA"]) == 0
    replay = capsys.readouterr().out
    assert replay.startswith("NVDA filed an 8-K on 2026-03-10 (items 2.02, 9.01)\n")
    assert "net income $44.2 million, $0.89 per share" in replay

    # The poll job is due every 5 minutes; `cron run` polls now, as the daemon would.
    assert main(["cron", "run", "Filing watches"]) == 0
    assert main(["cron", "logs"]) == 0
    logs = capsys.readouterr().out
    assert "net income $44.2 million" in logs and EARNINGS_ACCESSION in logs
    assert main(["watch", "show", "NVDA"]) == 0
    shown = capsys.readouterr().out
    assert f"2026-03-10 NVDA 8-K {EARNINGS_ACCESSION}: delivered" in shown
    assert f"NVDA: last seen {EARNINGS_ACCESSION}" in shown

    assert main(["watch", "pause", "NVDA"]) == 0
    assert main(["watch", "list"]) == 0
    assert "(paused)" in capsys.readouterr().out
    # Resumed, it starts again from the history as it then stands: no late burst.
    assert main(["watch", "resume", "NVDA"]) == 0
    assert main(["watch", "show", "NVDA"]) == 0
    assert "NVDA: last seen not polled yet" in capsys.readouterr().out
    assert main(["watch", "rm", "NVDA"]) == 0
    assert main(["watch", "list"]) == 0
    assert "No watches" in capsys.readouterr().out


def test_bad_watch_input_is_refused_clearly(
    mirror: Mirror, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["watch", "add", "NVDA", "--items", "2.2"]) == 2
    assert "'2.2' is not an 8-K item number" in capsys.readouterr().err
    assert main(["watch", "add", "NVDA", "--deliver", "pigeon:1"]) != 0
    assert "Unknown delivery target" in capsys.readouterr().err
    assert main(["watch", "add", "NVDQ"]) != 0
    assert "NVDQ" in capsys.readouterr().err
    assert main(["watch", "rm", "AMD"]) == 2
    assert "No watch matches 'AMD'" in capsys.readouterr().err
    assert main(["watch", "list"]) == 0
    assert "No watches" in capsys.readouterr().out
