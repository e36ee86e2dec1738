"""The on-disk response cache: freshness, damaged entries and interrupted writes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from dexter.data.cache import FOREVER, DiskCache

KEY = "https://data.sec.gov/submissions/CIK0000320193.json"


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def entry_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.is_file())


def only(root: Path, suffix: str) -> Path:
    (path,) = [p for p in root.rglob(f"*{suffix}") if p.is_file()]
    return path


def test_put_then_get_returns_the_body(tmp_path: Path) -> None:
    clock = Clock()
    cache = DiskCache(tmp_path, now=clock)
    cache.put(KEY, KEY, b'{"cik": 320193}')

    hit = cache.get(KEY, ttl=60)

    assert hit is not None
    assert hit.body == b'{"cik": 320193}'
    assert hit.url == KEY
    assert hit.fetched_at == clock.now
    assert (cache.hits, cache.misses) == (1, 0)


def test_unknown_key_is_a_miss(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    assert cache.get(KEY, ttl=60) is None
    assert (cache.hits, cache.misses) == (0, 1)


def test_entry_expires_after_its_ttl(tmp_path: Path) -> None:
    clock = Clock()
    cache = DiskCache(tmp_path, now=clock)
    cache.put(KEY, KEY, b"body")

    clock.now += 3600
    assert cache.get(KEY, ttl=3600) is not None  # exactly at the limit: still fresh
    clock.now += 1
    assert cache.get(KEY, ttl=3600) is None
    assert cache.get(KEY, ttl=7200) is not None  # the entry is stale for one caller, not deleted


def test_forever_never_expires(tmp_path: Path) -> None:
    clock = Clock()
    cache = DiskCache(tmp_path, now=clock)
    cache.put(KEY, KEY, b"archived filing")
    clock.now += 50 * 365 * 86400
    hit = cache.get(KEY, ttl=FOREVER)
    assert hit is not None and hit.body == b"archived filing"


def test_put_replaces_an_older_entry(tmp_path: Path) -> None:
    clock = Clock()
    cache = DiskCache(tmp_path, now=clock)
    cache.put(KEY, KEY, b"old")
    clock.now += 10
    cache.put(KEY, KEY, b"newer body")
    hit = cache.get(KEY, ttl=60)
    assert hit is not None
    assert (hit.body, hit.fetched_at) == (b"newer body", clock.now)
    assert len(entry_files(tmp_path)) == 2


def test_keys_do_not_collide(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    cache.put(KEY, KEY, b"apple")
    cache.put(KEY + "?x=1", KEY + "?x=1", b"other")
    a, b = cache.get(KEY, ttl=60), cache.get(KEY + "?x=1", ttl=60)
    assert a is not None and b is not None
    assert (a.body, b.body) == (b"apple", b"other")


def test_empty_body_is_a_valid_entry(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    cache.put(KEY, KEY, b"")
    hit = cache.get(KEY, ttl=60)
    assert hit is not None and hit.body == b""


# --- damaged entries are misses, and are removed --------------------------------------------------


def truncate_body(root: Path) -> None:
    body = only(root, ".body")
    body.write_bytes(body.read_bytes()[:5])


def garble_metadata(root: Path) -> None:
    only(root, ".json").write_bytes(b"\x00{not json")


def wrong_size_in_metadata(root: Path) -> None:
    meta_path = only(root, ".json")
    meta = json.loads(meta_path.read_text())
    meta["size"] += 1
    meta_path.write_text(json.dumps(meta))


def metadata_not_an_object(root: Path) -> None:
    only(root, ".json").write_text("[1, 2, 3]")


def metadata_missing_time(root: Path) -> None:
    meta_path = only(root, ".json")
    meta = json.loads(meta_path.read_text())
    del meta["fetched_at"]
    meta_path.write_text(json.dumps(meta))


def metadata_for_another_key(root: Path) -> None:
    meta_path = only(root, ".json")
    meta = json.loads(meta_path.read_text())
    meta["key"] = "https://elsewhere.example/"
    meta_path.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "damage",
    [
        truncate_body,
        garble_metadata,
        wrong_size_in_metadata,
        metadata_not_an_object,
        metadata_missing_time,
        metadata_for_another_key,
    ],
)
def test_damaged_entry_is_a_miss_and_is_dropped(tmp_path: Path, damage: Any) -> None:
    cache = DiskCache(tmp_path)
    cache.put(KEY, KEY, b'{"facts": "a long enough body"}')
    damage(tmp_path)

    assert cache.get(KEY, ttl=FOREVER) is None
    assert cache.misses == 1
    assert entry_files(tmp_path) == []
    # and the next write makes it whole again
    cache.put(KEY, KEY, b"fresh")
    hit = cache.get(KEY, ttl=FOREVER)
    assert hit is not None and hit.body == b"fresh"


def test_body_without_metadata_is_a_miss(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    cache.put(KEY, KEY, b"body")
    only(tmp_path, ".json").unlink()
    assert cache.get(KEY, ttl=FOREVER) is None


def test_metadata_without_body_is_a_miss(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    cache.put(KEY, KEY, b"body")
    only(tmp_path, ".body").unlink()
    assert cache.get(KEY, ttl=FOREVER) is None


# --- interrupted writes leave nothing a reader could trust ---------------------------------------


class FailingWrite:
    """`os.fdopen` whose file accepts part of the data and then fails, as a full disk would."""

    def __init__(self, fail_on_call: int, real: Any = os.fdopen) -> None:
        self.fail_on_call = fail_on_call
        self.calls = 0
        self.real = real

    def __call__(self, fd: int, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        handle = self.real(fd, *args, **kwargs)
        if self.calls != self.fail_on_call:
            return handle
        real_write = handle.write

        def write(data: bytes) -> int:
            real_write(data[: len(data) // 2])
            handle.flush()
            raise OSError(28, "No space left on device")

        handle.write = write
        return handle


def test_crash_while_writing_the_body_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = DiskCache(tmp_path)
    monkeypatch.setattr(os, "fdopen", FailingWrite(fail_on_call=1))

    cache.put(KEY, KEY, b"x" * 10_000)  # a failed write is recorded, never raised
    assert "No space" in str(cache.write_error)

    monkeypatch.undo()
    assert entry_files(tmp_path) == []  # no .body, no .json, no .part
    assert cache.get(KEY, ttl=FOREVER) is None


def test_crash_while_writing_the_metadata_is_still_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = DiskCache(tmp_path)
    monkeypatch.setattr(os, "fdopen", FailingWrite(fail_on_call=2))

    cache.put(KEY, KEY, b"x" * 10_000)
    assert isinstance(cache.write_error, OSError)

    monkeypatch.undo()
    assert not [name for name in entry_files(tmp_path) if name.endswith((".part", ".json"))]
    assert cache.get(KEY, ttl=FOREVER) is None


def test_crash_while_replacing_keeps_the_old_entry_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = DiskCache(tmp_path)
    cache.put(KEY, KEY, b"old and complete")
    monkeypatch.setattr(os, "fdopen", FailingWrite(fail_on_call=1))

    cache.put(KEY, KEY, b"new" * 5000)
    assert isinstance(cache.write_error, OSError)

    monkeypatch.undo()
    assert not [name for name in entry_files(tmp_path) if name.endswith(".part")]
    hit = cache.get(KEY, ttl=FOREVER)
    assert hit is not None and hit.body == b"old and complete"


def test_interrupt_during_write_cleans_up_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = DiskCache(tmp_path)

    def interrupted(src: Any, dst: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cache.put(KEY, KEY, b"body")
    monkeypatch.undo()
    assert entry_files(tmp_path) == []
