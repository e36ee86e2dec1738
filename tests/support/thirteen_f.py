"""A 13F filer for the provider, the CLI and the tools: the real recorded 255-row information
table in `../shared/fixtures/sec-documents/`, filed by "Example Capital" (CIK 1234567) in a
submissions file and filing-folder index composed here in the SEC's shapes. The fixture carries
no filer, so the filer, CIK, accession and dates are test values."""

from __future__ import annotations

import json

from tests.support.fixtures import fixtures_dir

FILER_CIK = "1234567"
ACCESSION = "0001234567-24-000001"
TABLE = "infotable.xml"


def example_13f_filing() -> dict[str, bytes]:
    """Mirror extras (URL path -> body): submissions, the filing's index.json and its table."""
    submissions = {
        "cik": FILER_CIK,
        "name": "Example Capital LLC",
        "tickers": [],
        "exchanges": [],
        "filings": {
            "recent": {
                "accessionNumber": [ACCESSION],
                "form": ["13F-HR"],
                "filingDate": ["2024-01-30"],
                "reportDate": ["2023-12-31"],
                "acceptanceDateTime": ["2024-01-30T16:00:00.000Z"],
                "primaryDocument": ["xslForm13F_X02/primary_doc.xml"],
                "primaryDocDescription": [""],
            },
            "files": [],
        },
    }
    folder = f"www.sec.gov/Archives/edgar/data/{FILER_CIK}/{ACCESSION.replace('-', '')}"
    table = (fixtures_dir() / "sec-documents" / "13F-HR.infotable.xml").read_bytes()
    listing = {
        "directory": {
            "item": [
                {"name": f"{ACCESSION}-index.html", "size": ""},
                {"name": "primary_doc.xml", "size": "4800"},
                {"name": TABLE, "size": str(len(table))},
                {"name": f"{ACCESSION}.txt", "size": str(len(table) + 6000)},
            ],
            "name": f"/Archives/edgar/data/{FILER_CIK}/{ACCESSION.replace('-', '')}",
        }
    }
    return {
        f"data.sec.gov/submissions/CIK{int(FILER_CIK):010d}.json": json.dumps(submissions).encode(),
        f"{folder}/index.json": json.dumps(listing).encode(),
        f"{folder}/{TABLE}": table,
    }
