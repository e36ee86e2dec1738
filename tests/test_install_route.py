"""Every message that names an install step names the one that fits how Dexter was installed:
a uv tool (its receipt), pipx (its metadata), a checkout (`uv sync`), or plain pip."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dexter.install import (
    InstallRoute,
    add_extra_command,
    describe_installation,
    detect_route,
    extra_requirements,
    missing_extra,
    reinstall_command,
)
from dexter.reports.model import Report, Row, Table

SRC = Path(__file__).resolve().parent.parent / "src" / "dexter"


def _environment(tmp_path: Path) -> tuple[Path, Path]:
    prefix = tmp_path / "env"
    package = prefix / "lib" / "python3.11" / "site-packages" / "dexter"
    package.mkdir(parents=True)
    return prefix, package


def test_a_uv_tool_from_a_clone_is_told_to_reinstall_from_it_keeping_its_extras(
    tmp_path: Path,
) -> None:
    prefix, package = _environment(tmp_path)
    (prefix / "uv-receipt.toml").write_text(
        '[tool]\nrequirements = [{ name = "dexter-py", extras = ["browser"], '
        'directory = "/home/me/src/dexter" }]\n'
    )
    route = detect_route(prefix, package)
    assert route == InstallRoute("uv-tool", "/home/me/src/dexter", ("browser",), prefix)
    assert add_extra_command("reports", route) == (
        "uv tool install '/home/me/src/dexter[browser,reports]'"
    )
    assert "\ninstalled: uv tool, from /home/me/src/dexter" in describe_installation(route)


def test_a_uv_tool_from_the_registry_or_git(tmp_path: Path) -> None:
    prefix, package = _environment(tmp_path)
    receipt = prefix / "uv-receipt.toml"
    receipt.write_text('[tool]\nrequirements = [{ name = "dexter-py" }]\n')
    assert add_extra_command("reports", detect_route(prefix, package)) == (
        "uv tool install 'dexter-py[reports]'"
    )
    receipt.write_text(
        '[tool]\nrequirements = [{ name = "dexter-py", git = "https://example.org/dexter" }]\n'
    )
    assert add_extra_command("slack", detect_route(prefix, package)) == (
        "uv tool install 'dexter-py[slack] @ https://example.org/dexter'"
    )


def test_a_damaged_receipt_still_counts_as_a_uv_tool(tmp_path: Path) -> None:
    prefix, package = _environment(tmp_path)
    (prefix / "uv-receipt.toml").write_bytes(b"\xff not toml")
    assert add_extra_command("reports", detect_route(prefix, package)) == (
        "uv tool install 'dexter-py[reports]'"
    )


def test_pipx_is_told_to_inject_the_extra_packages(tmp_path: Path) -> None:
    prefix, package = _environment(tmp_path)
    metadata = {"main_package": {"package": "dexter-py", "package_or_url": "dexter-py"}}
    (prefix / "pipx_metadata.json").write_text(json.dumps(metadata))
    route = detect_route(prefix, package)
    assert route.kind == "pipx"
    command = add_extra_command("reports", route)
    assert command.startswith("pipx inject dexter-py ")
    assert "'matplotlib>=3.9'" in command and "'weasyprint>=68'" in command
    assert describe_installation(route).splitlines()[1].startswith("installed: pipx")


def test_a_checkout_is_told_to_sync_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "dexter"
    package = root / "src" / "dexter"
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "dexter-py"\n')
    (root / ".venv").mkdir()
    monkeypatch.chdir(root)
    route = detect_route(root / ".venv", package)
    assert route == InstallRoute("checkout", where=root, uv_project=True)
    assert add_extra_command("reports", route) == "uv sync --extra reports"
    monkeypatch.chdir(tmp_path)  # elsewhere, the command still finds the project
    assert add_extra_command("reports", route) == f"uv sync --project {root} --extra reports"
    # The same checkout installed with `pip install -e .` into another environment.
    other = detect_route(tmp_path / "venv", package)
    assert add_extra_command("reports", other) == f"pip install -e '{root}[reports]'"


def test_anything_else_is_plain_pip(tmp_path: Path) -> None:
    prefix, package = _environment(tmp_path)
    assert add_extra_command("browser", detect_route(prefix, package)) == (
        "pip install 'dexter-py[browser]'"
    )


def test_the_metadata_lists_each_extras_packages() -> None:
    assert "matplotlib>=3.9" in extra_requirements("reports")
    assert any(r.startswith("playwright") for r in extra_requirements("browser"))


def test_no_message_hardcodes_one_install_route() -> None:
    """Every optional import names its step through `dexter.install`."""
    offenders = [
        f"{path.relative_to(SRC)}:{number}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "install.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "uv sync --extra" in line or "pip install '" in line
    ]
    assert offenders == []


def test_the_missing_extra_error_is_one_line_naming_package_and_step() -> None:
    error = missing_extra("PDF reports", "reports", "weasyprint")
    text = str(error)
    assert error.exit_code == 2 and "\n" not in text
    assert text.startswith("PDF reports need the optional `reports` extra")
    assert ", and weasyprint is not installed:" in text
    assert f"`{add_extra_command('reports')}`" in text


def _report_with_a_chart() -> Report:
    table = Table(
        kind="income",
        company="Apple Inc.",
        ticker="AAPL",
        currency="USD",
        periods=("FY2024", "FY2025"),
        period_ends=("2024-09-28", "2025-09-27"),
        rows=(Row("revenue", "Revenue", "money", (391_035e6, 416_161e6)),),
    )
    return Report(
        question="How did revenue change?",
        answer="It rose.",
        status="answered",
        model="openai:gpt-test",
        created_at="2026-01-02T03:04:05Z",
        session_id="s1",
        run_id="r1",
        tables=(table,),
    )


def test_markdown_is_written_without_matplotlib_and_says_what_it_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter.reports.render import charts_left_out, require_format, write_report

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as in a tool installed without extras
    report = _report_with_a_chart()
    written = write_report(report, tmp_path / "memo.md", "md")
    assert written == [tmp_path / "memo.md"]
    text = (tmp_path / "memo.md").read_text()
    assert "| Revenue | 391,035 | 416,161 | USD millions |" in text and "![" not in text
    note = charts_left_out(report, "md")
    assert note is not None and "1 chart image(s) left out" in note
    assert add_extra_command("reports") in note
    require_format("md")
    with pytest.raises(Exception, match="matplotlib is not installed"):
        require_format("html")


def test_reinstalling_keeps_the_route_and_its_extras(tmp_path: Path) -> None:
    root = tmp_path / "dexter"
    assert reinstall_command(InstallRoute("uv-tool", "/src/dx", ("reports",))) == (
        "uv tool install --reinstall '/src/dx[reports]'"
    )
    assert reinstall_command(InstallRoute("uv-tool")) == "uv tool install --reinstall dexter-py"
    assert reinstall_command(InstallRoute("pipx")) == "pipx reinstall dexter-py"
    checkout = InstallRoute("checkout", where=root, uv_project=True)
    assert reinstall_command(checkout).endswith(" --reinstall")
    assert reinstall_command(InstallRoute("pip")) == "pip install --force-reinstall dexter-py"
