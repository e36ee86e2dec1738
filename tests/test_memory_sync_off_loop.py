"""Memory index sync does its file and SQLite work off the event loop."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from dexter.memory.index import MemoryIndex


async def test_sync_waiting_on_a_locked_index_does_not_stall_the_loop(tmp_path: Path) -> None:
    index = MemoryIndex(tmp_path, None)
    index.files.dir.mkdir(parents=True, exist_ok=True)
    (index.files.dir / "MEMORY.md").write_text("- Prefers GAAP figures.\n")
    await index.sync()
    (index.files.dir / "MEMORY.md").write_text("- Prefers GAAP figures.\n- Holds NVDA.\n")

    # Another process holds the index's write lock.
    other = sqlite3.connect(index.db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    task = asyncio.create_task(index.sync(force=True))
    # If the sync blocked the loop, this would not return until the busy timeout expired and
    # the sync had failed with "database is locked".
    await asyncio.sleep(0.05)
    assert not task.done()
    other.execute("ROLLBACK")
    other.close()
    stats = await task
    assert stats.files_indexed == 1
    hits = await index.search("NVDA")
    assert any("Holds NVDA" in hit.text for hit in hits)
    index.close()
