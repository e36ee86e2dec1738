"""The workspace tools of a principal with several granted folders: every path they name is
one the principal's read_file opens."""

from __future__ import annotations

from pathlib import Path

from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.principal import FileGrants, Grants, Principal
from dexter.runtime import GATEWAY, AgentSpec
from dexter.tools.base import ToolContext
from dexter.tools.fs.read_file import ReadFileArgs
from dexter.tools.workspace import FindSymbolArgs


async def test_every_path_the_map_names_is_one_read_file_opens(tmp_path: Path) -> None:
    memos, models = tmp_path / "memos", tmp_path / "models"
    memos.mkdir()
    models.mkdir()
    (memos / "thesis.py").write_text("def margin_bridge():\n    return 1\n")
    (models / "dcf.py").write_text("from thesis import margin_bridge\nmargin_bridge()\n")
    guest = Principal("telegram:333", "user", grants=Grants(files=FileGrants(read=(memos, models))))
    environ = {"DEXTER_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "sk-test-123456"}
    runtime = open_runtime(load_settings(cwd=tmp_path, environ=environ))
    try:
        tools = runtime.tools(AgentSpec(channel=GATEWAY, principal=guest))
        find, read = tools.get("find_symbol"), tools.get("read_file")
        assert find is not None and read is not None
        found = await find.run(FindSymbolArgs(name="margin_bridge"), ToolContext())
        named = {h["path"] for h in found.data["definitions"] + found.data["references"]}
        assert named
        for path in named:
            # Before: "memos/thesis.py", which read_file looked for as memos/memos/thesis.py.
            opened = await read.run(ReadFileArgs(path=path), ToolContext())
            assert "margin_bridge" in opened.content, (path, opened.content)
    finally:
        runtime.close_local()
