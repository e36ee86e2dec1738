"""The workspace map over a research folder built here: what an analyst (or the agent) sees
of their models, notebooks, workbook, memos and data without reading every file."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.data.router import DataRouter
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from dexter.principal import FileGrants, Grants, Principal
from dexter.tools.base import ToolContext
from dexter.tools.workspace import (
    FindSymbolArgs,
    RelatedArgs,
    WorkspaceMapArgs,
    workspace_tools,
)
from dexter.workspace.service import Workspace
from dexter.workspace.stale import find_stale
from dexter.workspace.view import Snapshot
from tests.support.research_folder import (
    APPLE_FY2024_10K,
    APPLE_LATEST_10Q,
    build_research_folder,
)
from tests.support.sec_mirror import Mirror, MirrorServer, mirror_transport

THESIS = "memos/apple_thesis.md"
MODEL = "workbooks/apple_model.xlsx"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_research_folder(tmp_path_factory.mktemp("research"))


@pytest.fixture(scope="module")
def workspace(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    opened = Workspace(folder, tmp_path_factory.mktemp("home"))
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def snapshot(workspace: Workspace) -> Snapshot:
    return workspace.refresh()


def router(tmp_path: Path) -> DataRouter:
    settings = DataSettings(cache_dir=tmp_path / "cache", sec_user_agent="T t@example.com")
    return DataRouter([SecEdgarProvider(settings, transport=mirror_transport(Mirror()))])


def test_the_walk_skips_ignored_secret_and_vendored_files(snapshot: Snapshot) -> None:
    indexed = set(snapshot.files)
    assert {"models/dcf.py", MODEL, THESIS, "notebooks/apple_valuation.ipynb"} <= indexed
    # .gitignore'd, vendored, and secret files are never read.
    for never in ("scratch/ignored.py", "run.log", "node_modules/lib/index.js", ".env"):
        assert never not in indexed
    # A binary file is remembered (so it is not read again) but never shown.
    assert "data/logo.bin" not in snapshot.graph.files


def test_symbols_and_references_across_code_notebooks_workbooks_and_memos(
    workspace: Workspace,
) -> None:
    dcf = workspace.find_symbol("DCF")
    assert [(h.path, h.kind) for h in dcf.definitions] == [("models/dcf.py", "class")]
    assert {h.path for h in dcf.references} == {
        "models/scenarios.py",
        "notebooks/apple_valuation.ipynb",
    }

    # Any case when nothing matches exactly: "dcf" finds the class `DCF`.
    assert [h.path for h in workspace.find_symbol("dcf").definitions] == ["models/dcf.py"]

    wacc = workspace.find_symbol("wacc")
    assert ("models/wacc.py", 7, "function") in {(h.path, h.line, h.kind) for h in wacc.definitions}
    assert "models/dcf.py" in {h.path for h in wacc.references}

    named = workspace.find_symbol("TerminalGrowth")
    assert [(h.path, h.detail) for h in named.definitions] == [
        (MODEL, "TerminalGrowth = Inputs!$B$4")
    ]
    assert [(h.path, h.detail) for h in named.references] == [(MODEL, "in Model!B3")]
    # A notebook that reads the named range through openpyxl uses it too.
    rate = workspace.find_symbol("WACC")
    assert [(h.path, h.kind) for h in rate.definitions] == [(MODEL, "named_range")]
    assert {(h.path, h.kind) for h in rate.references} == {
        (MODEL, "name"),
        ("notebooks/apple_valuation.ipynb", "string"),
    }

    ticker = workspace.find_symbol("aapl")
    assert {h.path for h in ticker.references} == {
        THESIS,
        "memos/apple_update.md",
        "models/dcf.py",
        "notebooks/apple_valuation.ipynb",
        MODEL,
    }

    cited = workspace.find_symbol(APPLE_FY2024_10K)
    assert [(h.path, h.line) for h in cited.references] == [(THESIS, 3)]

    # In a notebook, a place is a cell and a line within it.
    upside = workspace.find_symbol("implied_upside").definitions
    assert [(h.path, h.detail) for h in upside] == [
        ("notebooks/apple_valuation.ipynb", "cell 3, line 1: def implied_upside(value, price):")
    ]
    notebook_function = workspace.find_symbol("gross_margin")
    assert [h.path for h in notebook_function.definitions] == ["notebooks/nvidia_margins.ipynb"]


def test_files_point_at_what_they_use(snapshot: Snapshot) -> None:
    related = snapshot.related("models/dcf.py")
    uses = {path: why for path, why, _ in related.uses}
    assert "imports" in uses["models/wacc.py"] and "calls wacc" in uses["models/wacc.py"]
    assert uses["data/aapl_prices.csv"] == ["reads"]
    used_by = {path for path, _, _ in related.used_by}
    assert used_by == {"models/scenarios.py", "notebooks/apple_valuation.ipynb"}
    # Interfaces only: the neighbour's signatures, not its body.
    wacc_interface = next(i for p, _, i in related.uses if p == "models/wacc.py")
    assert any(line.startswith("def wacc(") for line in wacc_interface)
    assert not any("return" in line for line in wacc_interface)
    notebook = {p: why for p, why, _ in snapshot.related("notebooks/apple_valuation.ipynb").uses}
    assert notebook[MODEL] == ["reads", "named range WACC"]
    memo = snapshot.related(THESIS)
    assert {p for p, _, _ in memo.uses} == {MODEL, "models/wacc.py"}
    assert snapshot.related("web/chart.ts").uses[0][0] == "web/format.ts"


async def test_a_new_import_that_closes_a_cycle_is_warned_about(
    folder: Path, tmp_path: Path
) -> None:
    tools = {t.name: t for t in workspace_tools([folder], tmp_path / "home")}
    result = await tools["related"].run(
        RelatedArgs(path="models/wacc.py", would_import="models.scenarios"), ToolContext()
    )
    assert (
        "Warning: importing it would close a cycle: models/wacc.py → models/scenarios.py → "
        "models/dcf.py → models/wacc.py" in result.content
    )
    fine = await tools["related"].run(
        RelatedArgs(path="scenarios.py", would_import="models.wacc"), ToolContext()
    )
    assert "Importing models/wacc.py closes no cycle." in fine.content


@pytest.mark.parametrize("budget", [100, 150, 400, 1000])
def test_the_map_fits_its_budget_and_ranks_the_named_files_first(
    snapshot: Snapshot, budget: int
) -> None:
    question = f"Update the revenue in {MODEL} and fix the memo apple_thesis.md that cites it"
    result = snapshot.render_map(question, budget)
    assert result.tokens <= budget
    assert len(result.text) <= budget * 3.5
    assert result.shown[:2] == [MODEL, THESIS]
    lines = result.text.splitlines()
    assert lines[1] == f"{MODEL} [workbook]"


def test_the_map_ranks_toward_named_symbols_and_shows_what_matters(snapshot: Snapshot) -> None:
    result = snapshot.render_map("How is gross_margin computed?", 2000)
    assert result.shown[0] == "notebooks/nvidia_margins.ipynb"
    # Whatever the notebook reads ranks right after it.
    assert result.shown[1] == "data/nvda_financials.csv"
    text = result.text
    assert "names: WACC = Inputs!$B$3; TerminalGrowth = Inputs!$B$4" in text
    assert "inputs: Inputs!B3 (WACC) = 0.085" in text
    assert "periods: FY2022 .. FY2025E" in text
    assert "links to: peers.xlsx" in text
    assert "dates 2024-01-02 .. 2024-09-27" in text
    assert f"cites: {APPLE_FY2024_10K}" in text
    assert "def wacc(equity: float, debt: float, re: float, rd: float, tax: float) -> float:" in (
        text
    )
    # The issue's own question: a class and a folder named, no file.
    asked = snapshot.render_map(
        "Update my DCF in models/ with the new revenue and fix the memo that cites it", 2000
    )
    assert asked.shown[:2] == ["models/dcf.py", "models/wacc.py"]
    # Parquet without pyarrow (not a dependency): listed, and says why its columns are missing.
    assert "data/quotes.parquet [data]" in text
    assert "columns not read: pyarrow is not installed" in text or "(not parsed:" in text
    # A file that does not parse is still listed, coarsely.
    assert "notebooks/broken.ipynb [notebook]" in text and "(not parsed:" in text


async def test_stale_models_and_memos_name_the_filing_that_superseded_them(
    snapshot: Snapshot, tmp_path: Path
) -> None:
    data = router(tmp_path)
    report = await find_stale(snapshot, data)
    await data.aclose()
    stale = {s.path: s for s in report.stale}
    assert set(stale) == {THESIS, "notebooks/apple_valuation.ipynb", MODEL, "models/dcf.py"}
    for item in stale.values():
        assert item.ticker == "AAPL" and item.latest.accession_number == APPLE_LATEST_10Q
    assert stale[THESIS].describe() == (
        f"{THESIS}: based on 10-K {APPLE_FY2024_10K} filed 2024-11-01; superseded by AAPL's "
        f"10-Q filed 2026-01-30 for the period ended 2025-12-27 (accession {APPLE_LATEST_10Q})"
    )
    assert stale[MODEL].based_on == "periods through FY2024"
    # The Python model is as old as the prices it reads.
    assert stale["models/dcf.py"].based_on == "data through 2024-09-27 in data/aapl_prices.csv"
    # Up to date: the memo citing the latest 10-Q, the NVIDIA note on its latest 10-K, and the
    # notebook whose data reaches NVIDIA's latest fiscal year end.
    assert report.checked == 7


async def test_the_agent_tools_read_only_the_folders_the_principal_may_see(
    folder: Path, tmp_path: Path
) -> None:
    data = router(tmp_path)
    tools = {t.name: t for t in workspace_tools([folder], tmp_path / "home", data)}
    mapped = await tools["workspace_map"].run(
        WorkspaceMapArgs(focus="apple_thesis.md", budget=600), ToolContext()
    )
    await data.aclose()
    assert mapped.content.splitlines()[1] == f"{THESIS} [memo]"
    assert "Stale:" in mapped.content
    assert f"- {THESIS}: based on 10-K {APPLE_FY2024_10K}" in mapped.content
    found = await tools["find_symbol"].run(FindSymbolArgs(name="WACC"), ToolContext())
    assert f"{MODEL} (named_range) WACC = Inputs!$B$3" in found.content

    from dexter.cli.open_runtime import open_runtime
    from dexter.config import load_settings
    from dexter.runtime import ASK, GATEWAY, AgentSpec

    guest = Principal(
        "telegram:333", "user", grants=Grants(files=FileGrants(read=(folder / "memos",)))
    )
    runtime = open_runtime(load_settings())
    try:
        operator = runtime.tools(AgentSpec(channel=ASK))
        assert {"workspace_map", "find_symbol", "related"} <= operator.on_request
        stranger = runtime.tools(
            AgentSpec(channel=GATEWAY, principal=Principal("telegram:9", "user"))
        )
        assert "workspace_map" not in stranger.names()
        granted = runtime.tools(AgentSpec(channel=GATEWAY, principal=guest))
        tool = granted.get("find_symbol")
        assert tool is not None
        seen = await tool.run(FindSymbolArgs(name="AAPL"), ToolContext())
    finally:
        runtime.close_local()
    # The grant is memos/ only: the model and notebooks outside it are not visible.
    paths = {hit["path"] for hit in seen.data["references"]}
    assert paths == {"apple_thesis.md", "apple_update.md"}


def test_reindex_reads_only_the_file_that_changed(folder: Path, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(folder, root)
    opened = Workspace(root, tmp_path / "home")
    try:
        opened.refresh()
        first = opened.last_refresh
        assert first is not None and len(first.tagged) == first.total == 18

        opened.refresh()
        assert opened.last_refresh is not None and opened.last_refresh.tagged == []

        # Touched but not changed: stat differs, the hash does not, nothing is re-tagged.
        model = root / "models" / "wacc.py"
        os.utime(model, ns=(model.stat().st_atime_ns, model.stat().st_mtime_ns + 10**9))
        opened.refresh()
        assert opened.last_refresh is not None and opened.last_refresh.tagged == []

        model.write_text(model.read_text() + "\n\ndef unlevered_beta(beta: float) -> float:\n")
        snapshot = opened.refresh()
        assert opened.last_refresh is not None
        assert opened.last_refresh.tagged == ["models/wacc.py"]
        assert [h.path for h in opened.find_symbol("unlevered_beta").definitions] == [
            "models/wacc.py"
        ]
        assert "notebooks/broken.ipynb" in snapshot.files

        (root / "memos" / "nvidia_note.md").unlink()
        opened.refresh()
        assert opened.last_refresh is not None
        assert opened.last_refresh.removed == ["memos/nvidia_note.md"]
    finally:
        opened.close()
    # The index is private, like everything in the home.
    assert opened.index.path.stat().st_mode & 0o777 == 0o600
    assert opened.index.path.parent.stat().st_mode & 0o777 == 0o700


def test_a_nested_gitignore_can_take_back_what_the_root_ignores(tmp_path: Path) -> None:
    root = tmp_path / "research"
    (root / "data").mkdir(parents=True)
    (root / ".gitignore").write_text("*.csv\n")
    (root / "data" / ".gitignore").write_text("!prices.csv\n")
    (root / "data" / "prices.csv").write_text("date,close\n2024-01-02,1\n")
    (root / "data" / "scratch.csv").write_text("a\n1\n")
    opened = Workspace(root, tmp_path / "home")
    try:
        assert "data/prices.csv" in opened.refresh().files
        assert "data/scratch.csv" not in opened.refresh().files
    finally:
        opened.close()


def test_dexters_own_home_inside_the_folder_is_never_indexed(tmp_path: Path) -> None:
    root = tmp_path / "research"
    (root / "state" / "memory").mkdir(parents=True)
    (root / "state" / "memory" / "MEMORY.md").write_text("# Holds 200 NVDA\n")
    (root / "notes.md").write_text("# Notes\n")
    opened = Workspace(root, root / "state")
    try:
        assert sorted(opened.refresh().files) == ["notes.md"]
    finally:
        opened.close()


def test_a_damaged_index_is_rebuilt_not_an_error(folder: Path, tmp_path: Path) -> None:
    first = Workspace(folder, tmp_path / "home")
    first.close()
    first.index.path.write_bytes(b"not a database at all, " * 100)
    again = Workspace(folder, tmp_path / "home")
    try:
        snapshot = again.refresh()
        assert "models/dcf.py" in snapshot.files
    finally:
        again.close()


def test_the_cli_reports_what_is_stale_from_sec(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with MirrorServer(Mirror()) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        assert main(["workspace", "stale", "--root", str(folder), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    stale = {item["path"]: item for item in report["stale"]}
    assert set(stale) == {THESIS, "notebooks/apple_valuation.ipynb", MODEL, "models/dcf.py"}
    latest = stale[MODEL]["superseded_by"]
    assert (latest["filing_type"], latest["accession_number"]) == ("10-Q", APPLE_LATEST_10Q)


def test_the_cli_prints_the_map_symbols_references_and_errors(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["workspace", "map", "--root", str(folder), "--json", "--budget", "300", "dcf.py"])
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed["shown"][0] == "models/dcf.py" and printed["tokens"] <= 300

    assert main(["workspace", "refs", "WACC", "--root", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"  {MODEL}  named_range  WACC = Inputs!$B$3" in out

    assert main(["workspace", "symbols", "wacc", "--root", str(folder)]) == 0
    assert "models/wacc.py:7  function  def wacc(" in capsys.readouterr().out

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = main(["workspace", "related", "models/wacc.py", "--root", str(elsewhere)])
    assert code == 2  # another folder: the file is not there
    assert "no indexed file matches 'models/wacc.py'" in capsys.readouterr().err

    assert main(["workspace", "map", "--root", str(folder / "nope")]) == 2
    assert "does not exist; give a folder with --root" in capsys.readouterr().err


async def test_the_agent_loads_the_map_on_request_and_reads_it(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter.agent.events import Done
    from dexter.cli.open_runtime import open_runtime
    from dexter.config import load_settings
    from dexter.models.scripted import Reply, ScriptedModel
    from dexter.models.types import ModelRequest, SystemMessage, ToolMessage
    from dexter.runtime import ASK, AgentSpec

    monkeypatch.chdir(folder)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    for name in ("OPENAI_BASE_URL", "DEXTER_ROUTER_MODEL", "DEXTER_MODEL"):
        monkeypatch.delenv(name, raising=False)

    def first(request: ModelRequest) -> Reply:
        system = request.messages[0]
        assert isinstance(system, SystemMessage)
        assert "- `workspace_map`: ranked outline of the local files" in system.content
        assert "workspace_map" not in {s.name for s in request.tools}
        return Reply(tool_calls=[("load_tools", {"names": ["workspace_map"]})], call_ids=["c1"])

    def second(request: ModelRequest) -> Reply:
        assert "workspace_map" in {s.name for s in request.tools}
        args = {"focus": "fix apple_thesis.md", "budget": 500, "stale": False}
        return Reply(tool_calls=[("workspace_map", args)], call_ids=["c2"])

    def third(request: ModelRequest) -> Reply:
        result = request.messages[-1]
        assert isinstance(result, ToolMessage)
        assert result.content.splitlines()[1] == f"{THESIS} [memo]"
        return Reply(text="The memo is memos/apple_thesis.md.")

    model = ScriptedModel([first, second, third])
    runtime = open_runtime(load_settings())
    runtime._clients[runtime.resolve("openai:gpt-test").spec] = model
    async with runtime:
        session = runtime.agent(AgentSpec(model="openai:gpt-test", channel=ASK))
        events = [event async for event in session.run("Which memo should I fix?")]
    done = events[-1]
    assert isinstance(done, Done) and done.answer == "The memo is memos/apple_thesis.md."


async def test_the_home_folder_is_too_wide_to_map_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter.tools.base import ToolFailure

    user = tmp_path / "user"
    (user / "Documents").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(user))
    tools = {t.name: t for t in workspace_tools([user], tmp_path / "home")}
    with pytest.raises(ToolFailure, match="is your whole home folder: too wide to map"):
        await tools["workspace_map"].run(WorkspaceMapArgs(), ToolContext())
    assert not (tmp_path / "home" / "workspace").exists()  # nothing was indexed


def test_a_files_public_interface_comes_before_its_private_helpers(tmp_path: Path) -> None:
    root = tmp_path / "research"
    (root / "models").mkdir(parents=True)
    (root / "models" / "dcf.py").write_text(
        "def _discount(rate: float) -> float:\n    return rate\n\n"
        "class _Cache:\n    def get(self) -> None: ...\n\n"
        "class Model:\n    def value(self) -> float: ...\n    def _helper(self) -> None: ...\n\n"
        "def wacc(beta: float) -> float:\n    return beta\n"
    )
    opened = Workspace(root, tmp_path / "home")
    try:
        text = opened.refresh().render_map("what does the dcf model compute", 400).text
    finally:
        opened.close()
    lines = [line.strip() for line in text.splitlines() if line.startswith("  ")]
    public = ["class Model:", "def value(self) -> float: ...", "def wacc(beta: float) -> float:"]
    assert [line for line in lines if line in public or "_" in line.split("(")[0]][:3] == public, (
        text
    )
