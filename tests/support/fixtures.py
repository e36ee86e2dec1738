"""Where the recorded SEC fixtures live. They stay outside the repository (see
../shared/fixtures/README.md), so tests find them through `DEXTER_FIXTURES` or next to the repo,
and skip with instructions when they are absent instead of failing or reaching the network.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

if TYPE_CHECKING:
    from dexter.data.models import InstitutionalHolding

_REPO_ROOT = Path(__file__).resolve().parents[2]


def fixtures_dir() -> Path:
    """The fixtures root; skips the calling test when it cannot be found."""
    configured = os.environ.get("DEXTER_FIXTURES")
    candidate = Path(configured) if configured else _REPO_ROOT.parent / "shared" / "fixtures"
    if not candidate.is_dir():
        pytest.skip(
            f"SEC fixtures not found at {candidate}; set DEXTER_FIXTURES or run "
            "`uv run python scripts/fetch_fixtures.py` to download them."
        )
    return candidate


def sec_mirror_file(url: str) -> Path:
    """The mirrored file for a real SEC URL: `sec-mirror/<host>/<path>`."""
    parts = urlsplit(url)
    return fixtures_dir() / "sec-mirror" / parts.netloc / parts.path.lstrip("/")


def companyfacts(cik: str) -> dict[str, Any]:
    """A recorded companyfacts document, parsed once per test session (treat it as read-only);
    skips the calling test when the fixtures are absent."""
    path = sec_mirror_file(f"https://data.sec.gov/api/xbrl/companyfacts/CIK{cik}.json")
    if not path.is_file():
        pytest.skip(f"{path} is missing; run `uv run python scripts/fetch_fixtures.py`.")
    return _parsed(path)


@cache
def _parsed(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def example_13f_holdings() -> list[InstitutionalHolding]:
    """The recorded 255-row 13F information table, as the holdings of a filer named Example
    Capital (the fixture carries no filer; the name, CIK and accession are test values)."""
    from dexter.data.sec.holdings13f import parse_information_table

    xml = (fixtures_dir() / "sec-documents" / "13F-HR.infotable.xml").read_bytes()
    return parse_information_table(
        xml,
        filer_cik="1234567",
        filer_name="Example Capital",
        report_period="2023-12-31",
        filing_date="2024-01-30",
        accession_number="0001213900-24-004875",
        url="https://www.sec.gov/Archives/edgar/data/1234567/000121390024004875/info.xml",
    )
