"""`dexter principals list|show|rm`, `usage --by principal`, `sessions list --principal` and
`permissions explain --principal`: who Dexter acted for, what each has and may do."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.store import SessionStore, open_store
from dexter.store.principals import PrincipalStore
from tests.support.principals import ANA, DESK, HOST, seed_principals


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("DEXTER_MODEL", raising=False)
    return tmp_path / "home"


@pytest.fixture
def seeded(home: Path, tmp_path: Path) -> dict[str, list[str]]:
    shared = tmp_path / "shared"
    shared.mkdir()
    return seed_principals(home, shared)


def out_of(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> str:
    assert main(list(args)) == code
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_read_only_commands_create_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "Nothing recorded yet" in out_of(capsys, "principals", "list")
    assert out_of(capsys, "principals", "list", "--json").strip() == "[]"
    assert "everything (the operator)" in out_of(capsys, "principals", "show", "operator")
    assert "no principal 'telegram:222'" in out_of(
        capsys, "principals", "show", "telegram:222", code=2
    )
    assert not (home / "dexter.db").exists()


def test_list_shows_every_principal_at_80_columns(
    seeded: dict[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    out = out_of(capsys, "principals", "list")
    assert max(len(line) for line in out.splitlines()) <= 80
    lines = {line.split()[1]: line for line in out.splitlines() if line.startswith("│")}
    assert list(lines) == ["operator", HOST.id, DESK.id, ANA.id]  # the operator first
    assert lines[ANA.id].split("│")[2:5] == [" user     ", "        2 ", "    1 "]
    rows = json.loads(out_of(capsys, "principals", "list", "--json"))
    ana = next(row for row in rows if row["id"] == ANA.id)
    assert (ana["kind"], ana["display_name"], ana["sessions"], ana["jobs"]) == ("user", "Ana", 2, 1)


def test_show_has_memory_grants_and_recent_sessions(
    seeded: dict[str, list[str]], home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = out_of(capsys, "principals", "show", ANA.id)
    memory = ANA.home(home) / "memory"
    assert f"Memory       {memory}" in out and "(19 B)" in out
    assert f"Files read   {(tmp_path / 'shared').resolve()}" in out
    assert "NVDA data centre revenue growth" in out and "Compare MSFT" not in out
    shown = json.loads(out_of(capsys, "principals", "show", ANA.id, "--json"))
    assert shown["memory"] == {"path": str(memory), "bytes": 19, "exists": True}
    assert shown["grants"] == {"files": {"read": [str((tmp_path / "shared").resolve())]}}
    assert {s["id"] for s in shown["recent_sessions"]} == set(seeded[ANA.id])


def test_a_broken_grant_is_a_warning_not_a_crash(
    seeded: dict[str, list[str]], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "gateway.json").write_text(json.dumps({"principals": {ANA.id: {"files": "x"}}}))
    out = out_of(capsys, "principals", "show", ANA.id)
    assert "warning:" in out and "nothing is granted" in out and "Traceback" not in out
    assert "Files read   none" in out


def test_rm_asks_and_closed_input_cancels(
    seeded: dict[str, list[str]],
    home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    out = out_of(capsys, "principals", "rm", ANA.id, code=1)
    assert "2 sessions, 1 job and its folder" in out and "Nothing removed." in out
    assert ANA.home(home).is_dir()

    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    out = out_of(capsys, "principals", "rm", ANA.id)
    assert f"Removed {ANA.id} (Ana)" in out and "gateway.json stay" in out
    assert not ANA.home(home).exists()
    with open_store(home) as store:
        assert PrincipalStore(store).get(ANA.id) is None
        assert SessionStore(store).list(principal_id=ANA.id) == []
        assert store.query("SELECT COUNT(*) FROM cron_jobs")[0][0] == 0
        assert {row.id for row in PrincipalStore(store).list()} == {"operator", DESK.id, HOST.id}


def test_the_operator_cannot_be_removed(
    seeded: dict[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    out = out_of(capsys, "principals", "rm", "operator", "--yes", code=2)
    assert "the operator cannot be removed" in out
    assert "no principal 'telegram:999'" in out_of(
        capsys, "principals", "rm", "telegram:999", "--yes", code=2
    )
    assert len(json.loads(out_of(capsys, "principals", "list", "--json"))) == 4


def test_usage_by_principal_counts_sessionless_calls_as_the_operators(
    seeded: dict[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    report = json.loads(out_of(capsys, "usage", "--by", "principal", "--json"))
    tokens = {row["key"]: row["input_tokens"] for row in report["rows"]}
    # The operator's session (3,000) and the judge call outside any session (700).
    assert tokens == {"operator": 3700, ANA.id: 3000, DESK.id: 1500, HOST.id: 500}
    assert sum(tokens.values()) == report["totals"]["input_tokens"]
    out = out_of(capsys, "usage", "--by", "principal")
    assert "Usage by principal" in out and "telegram:222" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    # A deleted session's calls stay in the ledger, no longer anyone's in particular.
    out_of(capsys, "sessions", "rm", seeded[HOST.id][0])
    report = json.loads(out_of(capsys, "usage", "--by", "principal", "--json"))
    tokens = {row["key"]: row["input_tokens"] for row in report["rows"]}
    assert tokens["(removed sessions)"] == 500 and tokens["operator"] == 3700


def test_sessions_list_names_each_principal_and_filters_by_one(
    seeded: dict[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    out = out_of(capsys, "sessions", "list")
    assert "Principal" in out and max(len(line) for line in out.splitlines()) <= 80
    for owner in ("operator", ANA.id, DESK.id, HOST.id):
        assert f"│ {owner} " in out  # whole, never folded
    mine = json.loads(out_of(capsys, "sessions", "list", "--principal", ANA.id, "--json"))
    assert {row["id"] for row in mine} == set(seeded[ANA.id])
    assert {row["principal"] for row in mine} == {ANA.id}
    assert "No sessions of telegram:9." in out_of(
        capsys, "sessions", "list", "--principal", "telegram:9"
    )
    shown = out_of(capsys, "sessions", "show", seeded[ANA.id][0])
    assert f"· for {ANA.id}" in shown


def explained(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    report = json.loads(out_of(capsys, "permissions", "explain", "--json", *args))
    assert isinstance(report, dict)
    return report


def test_explain_a_tool_call_for_a_principal(
    seeded: dict[str, list[str]], home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    portfolio = ["read_file", '{"path": "~/portfolio.md"}']
    out = out_of(capsys, "permissions", "explain", "--principal", ANA.id, *portfolio)
    assert max(len(line) for line in out.splitlines() if " " in line.strip()) <= 80
    words = " ".join(out.split())  # wrapped at 80 columns
    assert "Decision deny" in words and "outside the folders granted" in words
    assert f"Grants read {(tmp_path / 'shared').resolve()}" in words
    inside = json.dumps({"path": str(tmp_path / "shared" / "notes.md")})
    report = explained(capsys, "--principal", ANA.id, "read_file", inside)
    assert report["decision"] == "allow" and report["bound"] is True
    # Dexter's own folder stays closed, whatever folder was granted.
    keys = json.dumps({"path": str(home / "keys.json")})
    report = explained(capsys, "--principal", ANA.id, "read_file", keys)
    assert report["decision"] == "deny" and "Dexter's own folder" in str(report["reason"])
    # Someone never granted a folder does not even have the tool, and is told how to get it.
    report = explained(capsys, "--principal", "telegram:999", *portfolio)
    assert report["decision"] == "deny" and report["bound"] is False
    assert '"files": {"read": ["~/folder"]}' in str(report["not_bound_because"])
    # The shell, for anyone but the operator, never.
    report = explained(capsys, "--principal", ANA.id, "rm -rf x")
    assert (report["tool"], report["decision"]) == ("bash", "deny")
    assert "only the operator" in str(report["not_bound_because"])
    # The operator's own calls: the same floor and rules as a run.
    report = explained(capsys, "read_file", '{"path": ".env"}')
    assert report["decision"] == "deny" and "secret" in str(report["reason"])
    # Explaining creates nothing for a principal Dexter never met.
    assert not (home / "principals" / "telegram_999").exists()
    assert sorted(p.name.split("-")[0] for p in (home / "principals").iterdir()) == ["telegram_222"]


def test_explain_keeps_the_shell_form_and_refuses_bad_calls_clearly(
    seeded: dict[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    out = out_of(capsys, "permissions", "explain", "rm -rf x")
    assert "Command:  rm -rf x" in out and "Runs:" in out
    bad = out_of(capsys, "permissions", "explain", "reed_file", '{"path": "x"}', code=2)
    assert "Did you mean read_file?" in bad and "quote it as one argument" in bad
    bad = out_of(capsys, "permissions", "explain", "read_file", "[1]", code=2)
    assert "must be a JSON object" in bad
    bad = out_of(capsys, "permissions", "explain", "--principal", "x y", "read_file", "{}", code=2)
    assert "not a principal id" in bad and "Traceback" not in bad
