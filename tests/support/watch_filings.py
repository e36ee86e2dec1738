"""New filings for the watch tests, built from recorded ones.

The mirror holds NVIDIA's real submissions file but no filing newer than it; `advanced` serves
that file with new rows on top, as EDGAR does when a company files. The new 8-K's documents are
the real recorded Buckle 8-K cover and its EX-99.1 earnings release, re-hosted in a folder under
NVIDIA's CIK with an `index.json` and `-index-headers.html` composed in those pages' documented
shapes (as tests/support/filing_folder.py does for Buckle's own folder). So the accession numbers
are test values, and the figures in the alert are Buckle's.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.filing_folder import _document_block
from tests.support.fixtures import fixtures_dir

NVDA_CIK = "1045810"
SUBMISSIONS = "data.sec.gov/submissions/CIK0001045810.json"
EARNINGS_ACCESSION = "0001045810-26-990001"
PRIMARY = "nvda-8k.htm"
EXHIBIT = "nvda-ex991.htm"


def recorded_submissions() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((fixtures_dir() / "sec-mirror" / SUBMISSIONS).read_text())
    return data


def advanced(data: dict[str, Any], *rows: dict[str, Any]) -> bytes:
    """The submissions file with `rows` (newest first) filed on top of the recent list."""
    recent = data["filings"]["recent"]
    columns = {key: list(values) for key, values in recent.items()}
    for row in reversed(rows):
        for key, values in columns.items():
            values.insert(0, row.get(key, ""))
    moved = dict(data)
    moved["filings"] = {**data["filings"], "recent": columns}
    return json.dumps(moved).encode()


def eight_k_row(accession: str, items: str, date: str = "2026-03-10") -> dict[str, Any]:
    return {
        "accessionNumber": accession,
        "filingDate": date,
        "reportDate": date,
        "acceptanceDateTime": f"{date}T16:05:00.000Z",
        "form": "8-K",
        "items": items,
        "primaryDocument": PRIMARY,
        "primaryDocDescription": "8-K",
    }


def earnings_folder(accession: str = EARNINGS_ACCESSION, *, extra: int = 0) -> dict[str, bytes]:
    """URL path -> body for an 8-K with the recorded cover and EX-99.1, plus `extra` XBRL and
    graphic documents (a burst of files in one filing)."""
    docs = fixtures_dir() / "sec-documents"
    primary = (docs / "buckle.8-K.20241122.htm").read_bytes()
    exhibit_sgml = (docs / "buckle.8-K.20241122.EX-99.1.htm").read_bytes()
    exhibit = exhibit_sgml.split(b"<TEXT>", 1)[-1].rsplit(b"</TEXT>", 1)[0].strip()
    folder = f"www.sec.gov/Archives/edgar/data/{NVDA_CIK}/{accession.replace('-', '')}"
    names = [(PRIMARY, "8-K"), (EXHIBIT, "EX-99.1")]
    names += [(f"nvda-extra-{n}.jpg", "GRAPHIC") for n in range(extra)]
    listing = {"directory": {"item": [{"name": n, "size": "1000"} for n, _ in names]}}
    blocks = "".join(
        _document_block(kind, number, name, kind)
        for number, (name, kind) in enumerate(names, start=1)
    )
    headers = (
        f"<HTML><BODY><PRE>&lt;SEC-HEADER&gt;{accession}.hdr.sgml : 20260310\n"
        f"ACCESSION NUMBER:\t\t{accession}\nCONFORMED SUBMISSION TYPE:\t8-K\n"
        f"PUBLIC DOCUMENT COUNT:\t\t{len(names)}\nCONFORMED PERIOD OF REPORT:\t20260310\n"
        "ITEM INFORMATION:\t\tResults of Operations and Financial Condition\n"
        "FILED AS OF DATE:\t\t20260310\n\tCOMPANY DATA:\t\n"
        "\t\tCOMPANY CONFORMED NAME:\t\t\tNVIDIA CORP\n"
        f"\t\tCENTRAL INDEX KEY:\t\t\t000{NVDA_CIK}\n&lt;/SEC-HEADER&gt;\n"
        + blocks
        + "&lt;/SEC-DOCUMENT&gt;</PRE></BODY></HTML>\n"
    )
    return {
        f"{folder}/index.json": json.dumps(listing).encode(),
        f"{folder}/{accession}-index-headers.html": headers.encode(),
        f"{folder}/{PRIMARY}": primary,
        f"{folder}/{EXHIBIT}": exhibit,
    }
