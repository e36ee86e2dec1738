"""The `dexter` process keeps the code dataclasses generate, like bytecode: a later start runs
the stored code instead of compiling the same text again, and the classes behave the same."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from dexter.cli import codecache
from dexter.cli.codecache import DataclassCodeCache


def _define() -> type:
    @dataclasses.dataclass(frozen=True, order=True)
    class Holding:
        ticker: str
        shares: int = 0
        lots: tuple[float, ...] = dataclasses.field(default_factory=tuple)

    return Holding


def _with(cache: DataclassCodeCache, monkeypatch: pytest.MonkeyPatch) -> type:
    with monkeypatch.context() as patch:
        patch.setattr(dataclasses, "exec", cache.exec, raising=False)
        return _define()


def test_a_second_start_runs_the_stored_code_and_the_class_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "__pycache__" / "dataclass-code.marshal"
    first = DataclassCodeCache(path)
    cls = _with(first, monkeypatch)
    assert first.misses > 0
    first.save()
    assert path.is_file()

    second = DataclassCodeCache(path)
    again = _with(second, monkeypatch)
    assert second.misses == 0  # nothing compiled: every function came from the file
    plain = _define()
    for made in (cls, again):
        a, b = made("NVDA", 100), made("AAPL")
        assert (a.ticker, a.shares, a.lots, b.shares) == ("NVDA", 100, (), 0)
        assert repr(a) == repr(plain("NVDA", 100)).replace(plain.__qualname__, made.__qualname__)
        assert a == made("NVDA", 100) and sorted([a, b]) == [b, a]
        with pytest.raises(dataclasses.FrozenInstanceError):
            a.shares = 1  # type: ignore[misc]
        with pytest.raises(TypeError):
            made()  # the generated __init__ still checks its arguments


def test_a_damaged_or_foreign_file_is_ignored_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "dataclass-code.marshal"
    path.write_bytes(b"not marshal data at all")
    cache = DataclassCodeCache(path)
    assert cache.codes == {}
    _with(cache, monkeypatch)
    cache.save()
    assert DataclassCodeCache(path).codes  # rewritten whole, readable now


def test_nothing_is_written_where_python_writes_no_bytecode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert codecache.cache_file() is None
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    found = codecache.cache_file()
    assert found is not None and found.is_relative_to(tmp_path)
