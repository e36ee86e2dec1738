"""`dexter data documents / document / search` and `--as-of`, end to end over a local server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import main
from tests.support.filing_folder import BUCKLE_ACCESSION, buckle_folder
from tests.support.sec_mirror import Mirror, MirrorServer

SEARCH = (Path(__file__).parent / "data" / "efts-search-buckle.json").read_bytes()


@pytest.fixture
def sec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MirrorServer]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FINANCIAL_DATASETS_API_KEY", raising=False)
    mirror = Mirror({**buckle_folder(), "efts.sec.gov/LATEST/search-index": SEARCH})
    with MirrorServer(mirror) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("DEXTER_SEC_EFTS_URL", f"{server.url}/efts.sec.gov")
        monkeypatch.setenv("COLUMNS", "160")
        yield server


def test_documents_and_an_exhibit_by_type(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "documents", "BKE", BUCKLE_ACCESSION]) == 0
    listing = capsys.readouterr().out
    assert "EX-99.1" in listing and "bke20241122-8kexhibit.htm" in listing
    assert main(["data", "document", "BKE", BUCKLE_ACCESSION, "--document", "EX-99.1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "net income for the fiscal quarter ended November 2, 2024 was $44.2 million" in text
    assert f"acc. {BUCKLE_ACCESSION}" in text


def test_search_json_and_as_of(sec: MirrorServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "search", "net sales", "--form", "8-k", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert [h["filing_date"] for h in page["hits"]] == ["2024-11-22", "2025-05-23"]
    assert main(["data", "search", "net sales", "--as-of", "2025-04-07", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert [h["filing_date"] for h in page["hits"]] == ["2024-11-22"]
    assert main(["data", "filings", "AAPL", "--as-of", "2025-04-07", "--json"]) == 0
    filings = json.loads(capsys.readouterr().out)
    assert filings and max(f["filing_date"] for f in filings) <= "2025-04-07"
    assert main(["data", "filings", "AAPL", "--as-of", "April 2025"]) == 2
    assert "YYYY-MM-DD" in capsys.readouterr().err
