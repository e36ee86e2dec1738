from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from dexter.tools.base import ToolContext, ToolFailure, ToolResult
from dexter.tools.fs import (
    EditFileArgs,
    EditFileTool,
    ReadFileArgs,
    ReadFileTool,
    WriteFileArgs,
    WriteFileTool,
    preview_edit,
    resolve_in_workspace,
)
from dexter.tools.fs.read_file import MAX_OUTPUT_CHARS

CTX = ToolContext()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


async def _read(root: Path, **kwargs: object) -> ToolResult:
    result = await ReadFileTool(root).run(ReadFileArgs.model_validate(kwargs), CTX)
    assert isinstance(result, ToolResult)
    return result


async def _write(root: Path, **kwargs: object) -> ToolResult:
    result = await WriteFileTool(root).run(WriteFileArgs.model_validate(kwargs), CTX)
    assert isinstance(result, ToolResult)
    return result


async def _edit(root: Path, **kwargs: object) -> ToolResult:
    result = await EditFileTool(root).run(EditFileArgs.model_validate(kwargs), CTX)
    assert isinstance(result, ToolResult)
    return result


# --- confinement -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["../../etc/passwd", "a/../../outside.txt", "/etc/passwd"])
def test_paths_outside_the_workspace_are_refused(workspace: Path, bad: str) -> None:
    with pytest.raises(ToolFailure, match=r"outside the workspace|escapes the workspace"):
        resolve_in_workspace(workspace, bad)


def test_paths_inside_the_workspace_resolve(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    assert resolve_in_workspace(workspace, "sub/x.txt") == workspace.resolve() / "sub/x.txt"
    assert resolve_in_workspace(workspace, "sub/../y.txt") == workspace.resolve() / "y.txt"
    inside_abs = str(workspace / "sub" / "z.txt")
    assert resolve_in_workspace(workspace, inside_abs) == workspace.resolve() / "sub/z.txt"


def test_symlink_escapes_are_refused(workspace: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    (workspace / "link.txt").symlink_to(secret)
    (workspace / "outdir").symlink_to(tmp_path)
    with pytest.raises(ToolFailure, match="symlink"):
        resolve_in_workspace(workspace, "link.txt")
    # Through a directory symlink, even to a file that does not exist yet.
    with pytest.raises(ToolFailure, match="symlink"):
        resolve_in_workspace(workspace, "outdir/new-file.txt")


def test_symlink_inside_the_workspace_is_allowed(workspace: Path) -> None:
    (workspace / "real.txt").write_text("hi\n")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    assert resolve_in_workspace(workspace, "alias.txt") == (workspace / "real.txt").resolve()


async def test_tools_refuse_escapes_themselves(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret\n")
    (workspace / "link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ToolFailure):
        await _read(workspace, path="link.txt")
    with pytest.raises(ToolFailure):
        await _write(workspace, path="../escaped.txt", content="x")
    with pytest.raises(ToolFailure):
        await _write(workspace, path="link.txt", content="overwritten")
    with pytest.raises(ToolFailure):
        await _edit(workspace, path="/etc/passwd", old_text="root", new_text="toor")
    assert not (tmp_path / "escaped.txt").exists()
    assert (tmp_path / "secret.txt").read_text() == "top secret\n"


# --- read_file ---------------------------------------------------------------------------------


async def test_read_shows_numbered_lines_with_a_header(workspace: Path) -> None:
    (workspace / "notes.md").write_text("alpha\nbeta\ngamma\n")
    result = await _read(workspace, path="notes.md")
    header, *lines = result.content.splitlines()
    assert "notes.md" in header and "17 bytes" in header and "3 lines" in header
    assert "end of file" in header
    assert lines == ["1\talpha", "2\tbeta", "3\tgamma"]


async def test_read_pages_by_lines(workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 1001)))
    first = await _read(workspace, path="big.txt")
    assert "lines 1–400 of 1,000" in first.content and "offset=401" in first.content
    assert first.content.splitlines()[-1].endswith("\trow 400")
    page = await _read(workspace, path="big.txt", offset=990, limit=5)
    assert [line.split("\t")[1] for line in page.content.splitlines()[1:]] == [
        f"row {i}" for i in range(990, 995)
    ]
    assert "offset=995" in page.content
    last = await _read(workspace, path="big.txt", offset=998)
    assert "end of file" in last.content
    with pytest.raises(ToolFailure, match="beyond the end"):
        await _read(workspace, path="big.txt", offset=1001)


async def test_read_output_is_capped(workspace: Path) -> None:
    # 2,000 lines of 150 characters: far more than 40,000 characters.
    (workspace / "wide.csv").write_text("".join("x" * 150 + "\n" for _ in range(2000)))
    result = await _read(workspace, path="wide.csv", limit=2000)
    assert len(result.content) <= MAX_OUTPUT_CHARS
    assert result.data["next_offset"] is not None
    assert f"offset={result.data['next_offset']}" in result.content
    # One enormous line is clipped and points at a byte range.
    (workspace / "min.json").write_text("[" + "1," * 100_000 + "1]")
    clipped = await _read(workspace, path="min.json")
    assert len(clipped.content) < 5_000
    assert "line clipped" in clipped.content and "byte_offset=0" in clipped.content


async def test_read_byte_ranges_reassemble_the_file(workspace: Path) -> None:
    text = "prix € 12 — ok 🚀\n" * 3000
    (workspace / "utf8.txt").write_text(text)
    pieces: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = await _read(workspace, path="utf8.txt", byte_offset=offset, byte_limit=1000)
        assert len(result.content) <= MAX_OUTPUT_CHARS
        pieces.append(result.content.split("\n", 1)[1])
        offset = result.data["next_byte_offset"]
    assert "".join(pieces) == text
    assert "\ufffd" not in "".join(pieces)
    with pytest.raises(ToolFailure, match="not both"):
        await _read(workspace, path="utf8.txt", offset=2, byte_offset=0)


async def test_binary_files_get_a_clear_message(workspace: Path) -> None:
    (workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(500))
    with pytest.raises(ToolFailure, match=r"binary file \(image/png"):
        await _read(workspace, path="logo.png")
    with pytest.raises(ToolFailure, match="binary"):
        await _read(workspace, path="logo.png", byte_offset=0)


async def test_missing_file_suggests_close_names(workspace: Path) -> None:
    (workspace / "data").mkdir()
    (workspace / "data" / "AAPL_income.csv").write_text("x\n")
    (workspace / "data" / "MSFT_income.csv").write_text("x\n")
    with pytest.raises(ToolFailure) as info:
        await _read(workspace, path="data/AAPL_incme.csv")
    assert "file not found: data/AAPL_incme.csv" in str(info.value)
    assert "AAPL_income.csv" in str(info.value)
    with pytest.raises(ToolFailure, match=r"is a directory.*AAPL_income\.csv"):
        await _read(workspace, path="data")
    with pytest.raises(ToolFailure, match="doesn't exist"):
        await _read(workspace, path="nope/file.txt")


async def test_crlf_and_bom_are_shown_cleanly(workspace: Path) -> None:
    (workspace / "win.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    result = await _read(workspace, path="win.txt")
    assert result.content.splitlines()[1:] == ["1\tone", "2\ttwo"]


# --- write_file --------------------------------------------------------------------------------


async def test_write_creates_directories_and_reports_bytes(workspace: Path) -> None:
    result = await _write(workspace, path="reports/2024/aapl.md", content="# AAPL\n€1\n")
    target = workspace / "reports" / "2024" / "aapl.md"
    assert target.read_text() == "# AAPL\n€1\n"
    assert "Wrote 12 bytes" in result.content and "reports/2024/aapl.md" in result.content
    assert result.data["created"] is True
    assert not [p for p in target.parent.iterdir() if p.name != "aapl.md"]  # no temp files left


async def test_write_replaces_atomically_and_keeps_mode(workspace: Path) -> None:
    target = workspace / "run.sh"
    target.write_text("old\n")
    target.chmod(0o750)
    inode = target.stat().st_ino
    result = await _write(workspace, path="run.sh", content="new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o750
    assert target.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert "replaced the previous 4 bytes" in result.content


async def test_write_without_create_dirs_and_onto_directories(workspace: Path) -> None:
    with pytest.raises(ToolFailure, match="create_dirs"):
        await _write(workspace, path="new/dir/f.txt", content="x", create_dirs=False)
    (workspace / "folder").mkdir()
    with pytest.raises(ToolFailure, match="is a directory"):
        await _write(workspace, path="folder", content="x")
    assert WriteFileTool.needs_approval and "approval" in WriteFileTool.description


# --- edit_file ---------------------------------------------------------------------------------

SOURCE = "def margin(revenue, cost):\n    gross = revenue - cost\n    return gross / revenue\n"


async def test_edit_exact_match_returns_a_diff(workspace: Path) -> None:
    (workspace / "calc.py").write_text(SOURCE)
    result = await _edit(
        workspace, path="calc.py", old_text="return gross / revenue", new_text="return gross"
    )
    assert (workspace / "calc.py").read_text() == SOURCE.replace("gross / revenue", "gross")
    assert "--- a/calc.py" in result.content and "+++ b/calc.py" in result.content
    assert "-    return gross / revenue" in result.content
    assert "+    return gross" in result.content
    assert result.data["fuzzy"] is False and result.data["first_changed_line"] == 3


async def test_edit_whitespace_tolerant_match_changes_only_the_span(workspace: Path) -> None:
    text = "a = 1   \n\tif x  ==  1:   \n\t\treturn  x\nkeep   this  \n"
    (workspace / "t.py").write_text(text)
    result = await _edit(
        workspace, path="t.py", old_text="    if x == 1:\n        return x", new_text="\tpass"
    )
    assert result.data["fuzzy"] is True and "whitespace-tolerant" in result.content
    # Whitespace outside the matched span is untouched.
    assert (workspace / "t.py").read_text() == "a = 1   \n\tpass\nkeep   this  \n"


async def test_edit_ambiguous_and_replace_all(workspace: Path) -> None:
    (workspace / "f.txt").write_text("FY23 revenue\nFY23 cost\nFY23 margin\n")
    with pytest.raises(ToolFailure, match="matches 3 places"):
        await _edit(workspace, path="f.txt", old_text="FY23", new_text="FY24")
    result = await _edit(
        workspace, path="f.txt", old_text="FY23", new_text="FY24", replace_all=True
    )
    assert (workspace / "f.txt").read_text() == "FY24 revenue\nFY24 cost\nFY24 margin\n"
    assert result.data["replacements"] == 3


async def test_edit_not_found_and_no_change(workspace: Path) -> None:
    (workspace / "f.txt").write_text("hello world\n")
    with pytest.raises(ToolFailure, match="not found"):
        await _edit(workspace, path="f.txt", old_text="goodbye", new_text="x")
    with pytest.raises(ToolFailure, match="no changes"):
        await _edit(workspace, path="f.txt", old_text="hello", new_text="hello")
    with pytest.raises(ToolFailure, match="file not found"):
        await _edit(workspace, path="missing.txt", old_text="a", new_text="b")
    assert (workspace / "f.txt").read_text() == "hello world\n"


async def test_edit_keeps_crlf_and_bom(workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"\xef\xbb\xbfline one\r\nline two\r\n")
    await _edit(workspace, path="w.txt", old_text="line two\n", new_text="line 2\nline 3\n")
    assert (workspace / "w.txt").read_bytes() == b"\xef\xbb\xbfline one\r\nline 2\r\nline 3\r\n"


def test_preview_edit_shows_the_diff_without_writing(workspace: Path) -> None:
    (workspace / "calc.py").write_text(SOURCE)
    args = EditFileArgs(path="calc.py", old_text="gross = revenue - cost", new_text="gross = 0")
    diff = preview_edit(workspace, args)
    assert re.search(r"^-    gross = revenue - cost$", diff, re.MULTILINE)
    assert re.search(r"^\+    gross = 0$", diff, re.MULTILINE)
    assert "@@ -1,3 +1,3 @@" in diff
    assert (workspace / "calc.py").read_text() == SOURCE
    assert EditFileTool(workspace).preview(args) == diff
    assert EditFileTool.needs_approval


def test_workspace_defaults_to_the_current_directory(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace)
    assert ReadFileTool().workspace == Path(os.getcwd()).resolve()
