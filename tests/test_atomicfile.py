"""Replacing a file whole: never a partial file, never a stray temporary, never a secret on show."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.atomicfile import PRIVATE, write_bytes, write_json, write_text


def mode_of(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture
def umask() -> Iterator[None]:
    """A permissive umask, so a mode that is right is right because it was asked for."""
    old = os.umask(0)
    yield
    os.umask(old)


class Watch:
    """Records the temporary file's mode when it is opened and just before it is renamed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened: list[int] = []
        self.renamed: list[int] = []
        real_fdopen, real_replace = os.fdopen, os.replace

        def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
            self.opened.append(stat.S_IMODE(os.fstat(fd).st_mode))
            return real_fdopen(fd, *args, **kwargs)

        def replace(src: Any, dst: Any) -> None:
            self.renamed.append(mode_of(src))
            real_replace(src, dst)

        monkeypatch.setattr(os, "fdopen", fdopen)
        monkeypatch.setattr(os, "replace", replace)


def test_new_file_is_written_whole_with_the_usual_default_mode(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    write_text(target, "# Notes\n€1\n")
    assert target.read_text(encoding="utf-8") == "# Notes\n€1\n"
    umask = os.umask(0)
    os.umask(umask)
    assert mode_of(target) == 0o666 & ~umask
    assert names(tmp_path) == ["notes.md"]


def test_existing_file_is_replaced_by_rename_not_rewritten_in_place(tmp_path: Path) -> None:
    target = tmp_path / "body"
    target.write_bytes(b"old")
    inode = target.stat().st_ino
    write_bytes(target, b"\x00new\xff")
    assert target.read_bytes() == b"\x00new\xff"
    assert target.stat().st_ino != inode  # a reader holding the old file still reads all of it
    assert names(tmp_path) == ["body"]


def test_private_file_is_0600_from_the_moment_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask: None
) -> None:
    watch = Watch(monkeypatch)
    target = tmp_path / "keys.json"
    write_json(target, {"OPENAI_API_KEY": "sk-secret"}, mode=PRIVATE)
    assert watch.opened == [0o600] and watch.renamed == [0o600]
    assert mode_of(target) == 0o600


def test_private_mode_replaces_a_wider_one(tmp_path: Path, umask: None) -> None:
    target = tmp_path / "gateway.json"
    target.write_text("{}")
    target.chmod(0o644)
    write_text(target, "{}\n", mode=PRIVATE)
    assert mode_of(target) == 0o600


def test_exact_mode_even_when_the_umask_would_take_bits_away(tmp_path: Path) -> None:
    old = os.umask(0o277)
    try:
        write_text(tmp_path / "f", "x", mode=PRIVATE)
    finally:
        os.umask(old)
    assert mode_of(tmp_path / "f") == 0o600


def test_keep_mode_keeps_the_existing_bits_and_is_never_wider_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask: None
) -> None:
    target = tmp_path / "run.sh"
    target.write_text("old\n")
    target.chmod(0o640)
    watch = Watch(monkeypatch)
    write_text(target, "new\n", mode=PRIVATE, keep_mode=True)
    assert target.read_text() == "new\n" and mode_of(target) == 0o640
    assert watch.opened == [0o640] and watch.renamed == [0o640]


def test_keep_mode_on_a_new_file_falls_back_to_mode(tmp_path: Path, umask: None) -> None:
    write_text(tmp_path / "settings.json", "{}\n", mode=PRIVATE, keep_mode=True)
    write_text(tmp_path / "plain.txt", "x", keep_mode=True)
    assert mode_of(tmp_path / "settings.json") == 0o600
    assert mode_of(tmp_path / "plain.txt") == 0o666


def test_a_read_only_file_can_still_be_replaced_and_stays_read_only(tmp_path: Path) -> None:
    target = tmp_path / "frozen.txt"
    target.write_text("old")
    target.chmod(0o444)
    write_text(target, "new", keep_mode=True)
    assert target.read_text() == "new" and mode_of(target) == 0o444


class FullDisk:
    """`os.fdopen` whose file takes half the data and then fails, as a full disk would."""

    def __init__(self) -> None:
        self.real = os.fdopen

    def __call__(self, fd: int, *args: Any, **kwargs: Any) -> Any:
        handle = self.real(fd, *args, **kwargs)
        real_write = handle.write

        def write(data: Any) -> int:
            real_write(data[: len(data) // 2])
            handle.flush()
            raise OSError(28, "No space left on device")

        handle.write = write
        return handle


def test_failed_write_leaves_the_old_file_whole_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "MEMORY.md"
    target.write_text("old and complete\n")
    monkeypatch.setattr(os, "fdopen", FullDisk())
    with pytest.raises(OSError, match="No space left on device") as info:
        write_text(target, "new " * 5000)
    monkeypatch.undo()
    assert info.value.filename == str(target)
    assert target.read_text() == "old and complete\n"
    assert names(tmp_path) == ["MEMORY.md"]


def test_failed_first_write_leaves_nothing_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "fdopen", FullDisk())
    with pytest.raises(OSError):
        write_bytes(tmp_path / "new.body", b"x" * 10_000)
    monkeypatch.undo()
    assert names(tmp_path) == []


def test_interrupt_before_the_rename_removes_the_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.json"
    target.write_text('{"old": true}\n')

    def interrupted(src: Any, dst: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_json(target, {"new": True})
    monkeypatch.undo()
    assert json.loads(target.read_text()) == {"old": True}
    assert names(tmp_path) == ["state.json"]


def test_failed_rename_names_the_target_not_the_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "offset"

    def busy(src: Any, dst: Any) -> None:
        raise PermissionError(13, "Permission denied", str(src), None, str(dst))

    monkeypatch.setattr(os, "replace", busy)
    with pytest.raises(PermissionError) as info:
        write_text(target, "7\n")
    monkeypatch.undo()
    assert str(info.value) == f"[Errno 13] Permission denied: '{target}'"
    assert names(tmp_path) == []


def test_unwritable_directory_is_a_clear_error_naming_the_file() -> None:
    # /sys refuses new files even to root, which a chmod would not.
    target = Path("/sys/dexter-settings.json")
    try:
        os.close(os.open("/sys/.dexter-probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        pass
    else:
        os.unlink("/sys/.dexter-probe")
        pytest.skip("no read-only file system to write into")
    with pytest.raises(OSError) as info:
        write_json(target, {"model": "openai:gpt-5.6-sol"}, mode=PRIVATE)
    assert info.value.filename == str(target) and info.value.strerror
    assert not target.exists()


def test_a_missing_directory_is_an_error_not_created(tmp_path: Path) -> None:
    target = tmp_path / "absent" / "f.txt"
    with pytest.raises(FileNotFoundError) as info:
        write_text(target, "x")
    assert info.value.filename == str(target)
    assert not target.parent.exists()


def test_text_options_round_trip_exactly(tmp_path: Path) -> None:
    target = tmp_path / "result.txt"
    text = "line\r\nlone \udcff surrogate\n"
    write_text(target, text, errors="surrogatepass", newline="")
    with target.open(encoding="utf-8", errors="surrogatepass", newline="") as handle:
        assert handle.read() == text
    write_text(target, "café", encoding="latin-1")
    assert target.read_bytes() == b"caf\xe9"


def test_json_is_laid_out_for_a_person(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    write_json(target, {"b": 1, "a": "€"}, sort_keys=True, ensure_ascii=False)
    assert target.read_text(encoding="utf-8") == '{\n  "a": "€",\n  "b": 1\n}\n'
    write_json(target, {"a": "€"})
    assert target.read_text() == '{\n  "a": "\\u20ac"\n}\n'


def test_durable_flushes_the_file_and_then_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[bool] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_text(tmp_path / "a", "x")
    assert synced == []
    write_text(tmp_path / "a", "y", durable=True)
    assert synced == ([False] if os.name == "nt" else [False, True])


def test_a_name_at_the_length_limit_still_gets_a_temporary(tmp_path: Path) -> None:
    target = tmp_path / ("n" * 250 + ".md")
    write_text(target, "x")
    assert target.read_text() == "x" and names(tmp_path) == [target.name]


def test_temporary_names_are_hidden_and_never_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        seen.append(Path(src).name)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    for n in range(3):
        write_text(tmp_path / "f.json", str(n))
    assert len(set(seen)) == 3
    assert all(name.startswith(".f.json.") and name.endswith(".tmp") for name in seen)


def test_private_folders_and_files_are_exact_whatever_the_umask(tmp_path: Path) -> None:
    from dexter.atomicfile import create_private, open_private, private_dir

    old = os.umask(0o277)  # would take the owner's write bit away
    try:
        folder = private_dir(tmp_path / "a" / "b")
        with open_private(folder / "log.txt") as handle:
            handle.write("one\n")
        assert create_private(folder / "db") is True
        assert create_private(folder / "db") is False
    finally:
        os.umask(old)
    assert [mode_of(p) for p in (tmp_path / "a", folder)] == [0o700, 0o700]
    assert [mode_of(folder / n) for n in ("log.txt", "db")] == [0o600, 0o600]
    # An existing file keeps its mode and its content; appending adds to it.
    os.chmod(folder / "log.txt", 0o640)
    with open_private(folder / "log.txt") as handle:
        handle.write("two\n")
    assert mode_of(folder / "log.txt") == 0o640
    assert (folder / "log.txt").read_text() == "one\ntwo\n"
