"""Waiting for one's own records does not mean waiting for everyone else's."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from dexter.store import writer as writer_module
from dexter.store.writer import StoreWriter, Write


async def test_a_run_waits_for_its_own_writes_not_for_those_queued_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    applied: list[str] = []

    def apply(store: Any, prices: Any, write: Write) -> None:
        if write.payload.get("slow"):
            release.wait(10)
        applied.append(str(write.payload["name"]))

    monkeypatch.setattr(writer_module, "apply_write", apply)
    writer = StoreWriter(tmp_path)
    try:
        mine = writer.submit(Write("turn", {"name": "mine"}))
        writer.submit(Write("turn", {"name": "theirs", "slow": True}))
        assert await writer.drain(5, upto=mine)  # done, though "theirs" is still being written
        assert applied == ["mine"]
        assert not await writer.drain(0.05)  # everything: not yet
        release.set()
        assert await writer.drain(5)
        assert applied == ["mine", "theirs"]
        # Many waiters at once are woken without a thread each.
        tickets = [writer.submit(Write("turn", {"name": f"n{i}"})) for i in range(50)]
        results = await asyncio.gather(*(writer.drain(5, upto=t) for t in tickets))
        assert all(results) and len(applied) == 52
    finally:
        release.set()
        writer.close()
