"""Defects found reviewing the store's new parts: each test shows what a user hit before."""

from __future__ import annotations

from pathlib import Path

from dexter.store import open_store
from dexter.store.manage import database_status


def test_db_status_reads_a_home_whose_path_holds_url_characters(tmp_path: Path) -> None:
    # `#`, `?` and `%` are ordinary in folder names ("Q3 #2", "100% done").
    home = tmp_path / "Q3 #2 100%" / ".dexter"
    home.mkdir(parents=True)
    open_store(home).close()
    status = database_status(home, None)
    assert status.exists and status.version > 0 and not status.pending


def test_doctor_checks_the_database_of_a_home_whose_path_holds_url_characters(
    tmp_path: Path,
) -> None:
    from dexter.cli.doctor_json import database_state
    from dexter.config import load_settings

    home = tmp_path / "Q3 #2 100%" / ".dexter"
    home.mkdir(parents=True)
    open_store(home).close()
    (home / "dexter.db").write_bytes(b"not a database, damaged")
    settings = load_settings(cwd=tmp_path, environ={"DEXTER_HOME": str(home)})
    usable, said = database_state(settings)
    assert not usable, said
    assert sorted(p.name for p in home.parent.parent.iterdir()) == ["Q3 #2 100%"]
