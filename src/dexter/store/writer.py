"""Session and ledger writes off the event loop, never lost to a busy database.

A run records every model call, tool call and finished turn. Done on the event loop, one
`BEGIN IMMEDIATE` against a database another Dexter process holds would stall streaming for the
busy timeout and then crash the run, answer and all. Instead the recorder hands each write to
this writer: one background thread with its own connection applies them in order, retrying
while the database is busy. What still cannot be written when the writer is closed (the process
is ending) goes to `journal.jsonl` in the Dexter home, replayed the next time the store opens.
In team mode a Postgres server that cannot be reached fails the write the same way, so what
could not be written while it was away is journalled too, and replayed once it is back.

When neither the database nor the journal takes a write (a full disk), it is held in memory and
tried again before each later write and once more at close, so a long-running process saves it
when space returns; what is still held after close is in `unsaved()`, for the front door to say
that it was not saved.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from dexter.atomicfile import open_private, private_dir
from dexter.models.types import Usage
from dexter.principal import OPERATOR_ID
from dexter.processes import process_alive
from dexter.store.db import SqliteStore, Store, open_store
from dexter.store.ledger import Ledger
from dexter.store.migrations import StoreError
from dexter.store.prices import Price
from dexter.store.sessions import SessionStore

JOURNAL_NAME = "journal.jsonl"
# Per attempt: short, so the writer notices it is being closed; retried until then.
BUSY_TIMEOUT_MS = 500
MAX_PAUSE = 2.0

log = logging.getLogger("dexter.store")

WriteKind = Literal["session", "forget_empty", "model_call", "tool_call", "turn", "constraints"]


@dataclass(frozen=True)
class Write:
    """One recorded fact as plain JSON data, so it can wait in the journal."""

    kind: WriteKind
    payload: Mapping[str, Any]

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "payload": dict(self.payload)}, default=str)


def usage_payload(usage: Usage | None) -> dict[str, int | bool] | None:
    if usage is None:
        return None
    payload: dict[str, int | bool] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }
    if usage.estimated:
        payload["estimated"] = True
    return payload


def apply_write(store: Store, prices: Mapping[str, Price], write: Write) -> None:
    data = dict(write.payload)
    if "usage" in data:
        data["usage"] = Usage(**data["usage"]) if data["usage"] is not None else None
    if isinstance(data.get("at"), str):
        data["at"] = datetime.fromisoformat(data["at"])
    if write.kind == "model_call":
        Ledger(store, prices).record_model_call(**data)
    elif write.kind == "tool_call":
        Ledger(store, prices).record_tool_call(**data)
    elif write.kind == "session":
        kind = data.get("principal_kind")
        SessionStore(store).create(
            data["model"],
            session_id=data["session_id"],
            principal_id=data.get("principal_id") or OPERATOR_ID,
            principal=(kind, data.get("principal_name") or "") if kind else None,
        )
    elif write.kind == "forget_empty":
        SessionStore(store).delete_if_empty(data["session_id"])
    elif write.kind == "turn":
        data.pop("at", None)
        SessionStore(store).add_turn(**data)
    else:
        SessionStore(store).set_constraints(**data)


def _busy(error: BaseException) -> bool:
    text = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class StoreWriter:
    """Applies writes in order on a thread of its own; see the module docstring."""

    def __init__(
        self,
        home: Path,
        prices: Mapping[str, Price] | None = None,
        *,
        sleep: Callable[[float], object] | None = None,
        database_url: str | None = None,
    ) -> None:
        """`database_url`: the Postgres database of team mode (None: the SQLite file in `home`);
        the journal is in `home` either way."""
        self.home = home
        self.database_url = database_url
        self.prices = dict(prices or {})
        self.journal = home / JOURNAL_NAME
        self._closing = threading.Event()
        # A pause between retries ends at once when the writer is closed: a process leaving
        # while another holds the database journals at once instead of sleeping out its pause.
        self._sleep = sleep or self._closing.wait
        self._queue: queue.Queue[Write | None] = queue.Queue()
        self._pending = 0
        # Writes are applied in submission order: write n is done once `_completed >= n`.
        self._submitted = 0
        self._completed = 0
        self._waiters: list[tuple[int, asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        # Writes neither the database nor the journal took, in order; only the thread touches it
        # until it has stopped.
        self._held: list[Write] = []
        self.failure: OSError | None = None
        self._behind = False

    # ------------------------------------------------------------------ API

    def submit(self, write: Write) -> int:
        """Queue `write`; returns its ticket for `drain(upto=...)`."""
        with self._lock:
            self._pending += 1
            self._submitted += 1
            ticket = self._submitted
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="dexter-store-writer", daemon=True
                )
                self._thread.start()
            # Inside the lock: tickets are handed out in queue order, from any thread.
            self._queue.put(write)
        return ticket

    def wait_idle(self, timeout: float) -> bool:
        """Block until every submitted write is applied (True) or `timeout` passes (False)."""
        return self._idle.wait(timeout)

    async def drain(self, wait_seconds: float, *, upto: int | None = None) -> bool:
        """Wait (without holding a thread) until the write with ticket `upto` (default: every
        write submitted so far) is applied or journalled; False if `wait_seconds` passed first.
        Waiting for one's own last ticket does not wait for what others submit later."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            ticket = self._submitted if upto is None else upto
            if self._completed >= ticket:
                return True
            self._waiters.append((ticket, loop, future))
        try:
            await asyncio.wait_for(future, wait_seconds)
        except TimeoutError:
            return False
        finally:
            with self._lock:
                self._waiters = [w for w in self._waiters if w[2] is not future]
        return True

    def unsaved(self) -> list[Write]:
        """After `close`: the writes that could be neither applied nor journalled (the reason is
        in `failure`)."""
        return list(self._held)

    def close(self, timeout: float = 3.0) -> None:
        """Apply what can be applied within `timeout`; journal the rest; stop the thread."""
        with self._lock:
            thread = self._thread
        if thread is None:
            return
        self._idle.wait(timeout)
        self._closing.set()
        self._queue.put(None)
        # What is left is only journalled now (no more waiting), which takes moments.
        thread.join(BUSY_TIMEOUT_MS / 1000 + 10.0)

    # ------------------------------------------------------------------ thread

    def _run(self) -> None:
        store: Store | None = None
        try:
            while True:
                write = self._queue.get()
                if write is None:
                    break
                try:
                    if self._closing.is_set():
                        self._journal(write)  # closing: no more waiting on a busy database
                        continue
                    store = store or self._open()
                    self._retry_held(store)
                    self._catch_up(store)
                    self._apply(store, write)
                except Exception:  # a write that cannot be applied must not stop the others
                    log.debug("could not record %s; journalled", write.kind, exc_info=True)
                    self._journal(write)
                    # A shared server that was away: what waits in the journal goes first once
                    # it is back, in order, without waiting for the next start.
                    self._behind = self.database_url is not None
                finally:
                    self._done()
        finally:
            self._drain_to_journal()
            held, self._held = self._held, []
            for write in held:  # one last chance, now that nothing else is waiting
                self._journal(write)
            if store is not None:
                store.close()

    def _catch_up(self, store: Store) -> None:
        if not self._behind:
            return
        replay_journal(store, self.home, self.prices)
        self._behind = self.journal.exists()
        if self._behind:  # the server is still away: this write goes to the journal as well
            raise StoreError("the journal could not be replayed yet")

    def _retry_held(self, store: Store) -> None:
        held, self._held = self._held, []
        for write in held:
            try:
                self._apply(store, write)
            except Exception:
                self._journal(write)

    def _open(self) -> Store:
        store = open_store(self.home, url=self.database_url)
        if isinstance(store, SqliteStore):
            store.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return store

    def _apply(self, store: Store, write: Write) -> None:
        pause = 0.05
        while True:
            try:
                apply_write(store, self.prices, write)
                return
            except sqlite3.OperationalError as error:
                if not _busy(error) or self._closing.is_set():
                    raise
            self._sleep(pause)
            pause = min(pause * 2, MAX_PAUSE)

    def _done(self) -> None:
        with self._lock:
            self._pending -= 1
            self._completed += 1
            if self._pending == 0:
                self._idle.set()
            ready = [w for w in self._waiters if w[0] <= self._completed]
        for _, loop, future in ready:
            with contextlib.suppress(RuntimeError):  # that loop has closed: nobody waits
                loop.call_soon_threadsafe(_resolve, future)

    def _drain_to_journal(self) -> None:
        while True:
            try:
                write = self._queue.get_nowait()
            except queue.Empty:
                return
            if write is not None:
                self._journal(write)
                self._done()

    def _journal(self, write: Write) -> None:
        try:
            private_dir(self.home)
            with open_private(self.journal) as handle:
                handle.write(write.to_json() + "\n")
        except OSError as error:
            if self.failure is None:
                log.warning("could not journal a %s record (%s); holding it", write.kind, error)
            self.failure = error
            self._held.append(write)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def replay_journal(store: Store, home: Path, prices: Mapping[str, Price] | None = None) -> int:
    """Apply writes a busy database made Dexter journal; keep any that still fail. Returns how
    many were applied.

    The journal is first claimed by renaming it, so records another process appends meanwhile
    go to a fresh journal instead of being overwritten, and two processes never replay the same
    records. A claim left by a process that died mid-replay is picked up again."""
    claims = _claim_journals(home)
    refused = (sqlite3.Error, *getattr(store, "errors", ()))
    applied = 0
    for claim in claims:
        lines = claim.read_text(encoding="utf-8", errors="replace").splitlines()
        kept: list[str] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                write = Write(raw["kind"], raw["payload"])
                apply_write(store, dict(prices or {}), write)
                applied += 1
            except (ValueError, KeyError, TypeError):
                log.warning("dropping an unreadable journal line: %.80s", line)
            except refused:
                kept.append(line)
        if kept:
            # Appended, like any other journalled record, for the next open to try again.
            with open_private(home / JOURNAL_NAME) as handle:
                handle.write("\n".join(kept) + "\n")
        claim.unlink(missing_ok=True)
    return applied


def _claim_journals(home: Path) -> list[Path]:
    """The journal (and claims of dead processes), renamed to this process's claim names."""
    import os

    mine = os.getpid()
    found: list[Path] = []
    for stale in sorted(home.glob(f"{JOURNAL_NAME}.*.replaying")):
        pid = stale.name.removeprefix(f"{JOURNAL_NAME}.").removesuffix(".replaying")
        pid = pid.split("-", 1)[0]
        if pid.isdigit() and int(pid) != mine and not process_alive(int(pid)):
            found.append(stale)
    journal = home / JOURNAL_NAME
    if journal.is_file():
        found.append(journal)
    claims: list[Path] = []
    for index, path in enumerate(found):
        claim = home / f"{JOURNAL_NAME}.{mine}-{index}.replaying"
        try:
            path.rename(claim)
        except OSError:  # another process claimed it first
            continue
        claims.append(claim)
    return claims


__all__ = ["JOURNAL_NAME", "StoreWriter", "Write", "apply_write", "replay_journal", "usage_payload"]
