"""Concurrent runs on one session merge their standing constraints instead of overwriting."""

from __future__ import annotations

import threading
from pathlib import Path

from dexter.store import SessionStore, open_store


def test_four_concurrent_writers_keep_all_four_constraints(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        session_id = SessionStore(store).create("openai:gpt-test")
        SessionStore(store).set_constraints(session_id, ["Answer in English."])
    base = ["Answer in English."]
    wanted = [f"Cover segment {n}." for n in range(4)]
    start = threading.Barrier(4)

    def writer(constraint: str) -> None:
        # A second process's view: its own connection to the same database file.
        with open_store(tmp_path) as own:
            start.wait()
            SessionStore(own).set_constraints(session_id, [*base, constraint], base=base)

    threads = [threading.Thread(target=writer, args=(c,)) for c in wanted]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with open_store(tmp_path) as store:
        stored = SessionStore(store).constraints(session_id)
    assert stored[0] == "Answer in English."
    assert sorted(stored[1:]) == sorted(wanted)


def test_a_removal_survives_another_runs_addition(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        sessions = SessionStore(store)
        session_id = sessions.create("openai:gpt-test")
        sessions.set_constraints(session_id, ["Use EUR.", "Quarterly figures."])
        base = sessions.constraints(session_id)
        # Another run adds one while this run drops "Use EUR.".
        sessions.set_constraints(session_id, [*base, "Cite filings."], base=base)
        merged = sessions.set_constraints(session_id, ["Quarterly figures."], base=base)
    assert merged == ["Quarterly figures.", "Cite filings."]
