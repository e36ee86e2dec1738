"""Dexter's home under a hostile environment: a wide umask, a full disk, a read-only folder.

Everything Dexter writes about a user (questions, answers, tool output, memory, schedules, logs)
stays readable by that user alone; a full disk costs the record, never the answer; a home that
refuses writes is a configuration error naming the folder.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from dexter.gateway.pairing import PairingStore
from dexter.gateway.telegram import OffsetStore
from dexter.store import SessionStore, open_store
from dexter.store.writer import StoreWriter, Write
from dexter.tools.results import ResultStore
from tests.support.wire_server import WireServer, sse
from tests.test_cli import USAGE_CHUNK, chunk, point_at, workdir  # noqa: F401
from tests.test_cli_errors import unwritable_home  # noqa: F401


def answer(text: str) -> bytes:
    return sse([chunk({"content": text}), chunk({}, "stop"), USAGE_CHUNK])


def calculate_then_answer(text: str) -> list[bytes]:
    call = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {
            "name": "calculate",
            "arguments": json.dumps({"operation": "evaluate", "expression": "57/35"}),
        },
    }
    return [
        sse([chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), USAGE_CHUNK]),
        answer(text),
    ]


def no_space(path: object = None) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), *([str(path)] if path else []))


def fill_the_disk(monkeypatch: pytest.MonkeyPatch, home: Path, *, while_: Any = None) -> None:
    """From now on (while `while_()` says so) the database refuses writes and no new file can be
    made in `home` (the scratchpad, the journal, the log), as on a full disk."""
    import dexter.store.writer as writer_module

    full = while_ or (lambda: True)
    real_apply, real_os_open, real_open = writer_module.apply_write, os.open, builtins.open

    def apply(store: Any, prices: Any, write: Write) -> None:
        if full():
            raise no_space()
        real_apply(store, prices, write)

    def refuse_new(path: Any, creates: bool) -> None:
        if full() and creates and str(path).startswith(str(home)) and not os.path.exists(path):
            raise no_space(path)

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        refuse_new(path, bool(flags & os.O_CREAT))
        return real_os_open(path, flags, *args, **kwargs)

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if not isinstance(file, int):
            refuse_new(os.fspath(file), any(c in mode for c in "wax"))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(writer_module, "apply_write", apply)
    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(io, "open", open_)


@pytest.fixture
def wide_umask() -> Iterator[None]:
    """The common default: new files readable by every local user unless asked otherwise."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_everything_in_the_home_is_private_under_a_wide_umask(
    tmp_path: Path,
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    wide_umask: None,
) -> None:
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "state" / ".dexter"  # neither folder exists yet: Dexter makes both
    monkeypatch.setenv("DEXTER_HOME", str(home))
    monkeypatch.setenv("DEXTER_EMBEDDINGS", "none")
    point_at(wire_server, monkeypatch)
    # The scripted answer's figure is not what the calculation shows: marked, not repaired.
    monkeypatch.setenv("DEXTER_VERIFY", "flag")
    wire_server.push(*calculate_then_answer("Revenue grew 63% [S1]."))

    assert main(["ask", "--model", "openai:gpt-test", "NVDA revenue growth?"]) == 0
    assert main(["memory", "add", "I hold 200 NVDA at $410"]) == 0
    assert main(["memory", "search", "NVDA position"]) == 0  # builds the index (an FTS copy)
    assert main(["cron", "add", "Watch", "--every", "1h", "--message", "NVDA 10-Q?"]) == 0
    assert main(["heartbeat", "enable", "--every", "30m"]) == 0
    capsys.readouterr()
    # What other parts write in the home: a large tool result, a log record, gateway state.
    ResultStore(home, "run-1").save("call_a", "read_file", {"path": "x"}, "10-K text " * 9000)
    logging.getLogger("dexter.test").warning("a record with a question in it")
    OffsetStore(home / "gateway" / "telegram" / "main.offset").save(42)
    PairingStore(home / "gateway" / "pairing.json").request("telegram", "main", "12345")

    # The write-ahead log and shared memory exist while a connection is open.
    with open_store(home) as store:
        SessionStore(store).create("openai:gpt-test")
        modes = {
            str(path.relative_to(home)): stat.S_IMODE(path.lstat().st_mode)
            for path in [home, *home.rglob("*")]
        }
    for expected in (
        "dexter.db",
        "dexter.db-wal",
        "dexter.db-shm",
        "scratchpad",
        "memory/MEMORY.md",
        "memory/index.db",
        "tool-results/run-1/call_a.txt",
        "logs/dexter.log",
        "gateway/pairing.json",
        "gateway/pairing.lock",
        "gateway/telegram/main.offset",
    ):
        assert expected in modes, sorted(modes)
    assert any(name.startswith("scratchpad/") for name in modes)
    wide = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o700 if (home / name).is_dir() else 0o600)
    }
    assert wide == {}
    assert stat.S_IMODE(home.parent.stat().st_mode) == 0o700


def test_a_full_disk_prints_the_answer_and_says_it_was_not_saved(
    workdir: Path,  # noqa: F811
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = workdir / ".dexter"
    open_store(home).close()  # an existing home, on a disk that has since filled up
    point_at(wire_server, monkeypatch)
    # A scripted answer with no data behind it: the figure check (tested on its own) is off.
    monkeypatch.setenv("DEXTER_VERIFY", "off")
    wire_server.push(answer("Apple's gross margin rose to 46.9% in FY2025."))

    fill_the_disk(monkeypatch, home)

    status = main(["ask", "--model", "openai:gpt-test", "Apple gross margin FY2025?"])
    out, err = capsys.readouterr()
    assert status == 0
    assert out.strip() == "Apple's gross margin rose to 46.9% in FY2025."
    assert "Traceback" not in err and "Logging error" not in err
    notice = [line for line in err.splitlines() if line.startswith("dexter:")]
    assert notice == [
        f"dexter: this answer was not saved to the session history in {home} "
        "(No space left on device); the output above is its only copy."
    ]


def test_a_record_the_full_disk_held_back_is_saved_when_space_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    open_store(home).close()
    disk = {"full": True}
    fill_the_disk(monkeypatch, home, while_=lambda: disk["full"])
    writer = StoreWriter(home)
    writer.submit(Write("session", {"model": "openai:gpt-test", "session_id": "s1"}))
    assert writer.wait_idle(5)
    disk["full"] = False  # space returns; the next record takes the held one with it
    writer.submit(Write("session", {"model": "openai:gpt-test", "session_id": "s2"}))
    writer.close()
    with open_store(home) as store:
        ids = {row["id"] for row in store.query("SELECT id FROM sessions")}
    assert ids == {"s1", "s2"}
    assert writer.unsaved() == []


@pytest.mark.parametrize(
    "argv",
    [
        ["cron", "add", "Watch", "--every", "1h", "--message", "NVDA 10-Q?"],
        ["daemon", "--once"],
        ["ask", "--model", "openai:gpt-test", "hello"],
    ],
)
def test_a_read_only_home_is_a_configuration_error_naming_the_folder(
    unwritable_home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    # The folder itself exists; nothing can be created in it.
    monkeypatch.setenv("DEXTER_HOME", str(unwritable_home.parent))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert f"Cannot write to {unwritable_home.parent} " in err
    assert "DEXTER_HOME" in err and "writable" in err
