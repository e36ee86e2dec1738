"""Snowflake's insider filings for the provider, the CLI and the tools: the real recorded Form 3,
Form 4 and Form 5 documents in `../shared/fixtures/sec-documents/`, listed in a submissions file
composed here in the SEC's shape (the mirror has no Snowflake submissions). The accession numbers
are test values; the Form 5 is listed a second time as a 5/A to show amendments are read and
labelled."""

from __future__ import annotations

import json

from tests.support.fixtures import fixtures_dir

SNOW_CIK = "1640147"
# (accession, form, filed, period, document)
SNOW_FILINGS = [
    ("0001640147-22-000999", "4", "2022-12-15", "2022-12-13", "form4.snow.xml"),
    ("0001640147-22-000503", "5/A", "2022-03-25", "2022-01-31", "form5.snow.xml"),
    ("0001640147-22-000502", "5", "2022-03-11", "2022-01-31", "form5.snow.xml"),
    ("0001640147-20-000100", "3", "2020-09-15", "2020-09-15", "form3.snow.xml"),
]


def snowflake_insider_filings() -> dict[str, bytes]:
    """Mirror extras (URL path -> body): the submissions file and each filing's XML."""
    docs = fixtures_dir() / "sec-documents"
    submissions = {
        "cik": SNOW_CIK,
        "name": "Snowflake Inc.",
        "tickers": ["SNOW"],
        "exchanges": ["NYSE"],
        "filings": {
            "recent": {
                "accessionNumber": [f[0] for f in SNOW_FILINGS],
                "form": [f[1] for f in SNOW_FILINGS],
                "filingDate": [f[2] for f in SNOW_FILINGS],
                "reportDate": [f[3] for f in SNOW_FILINGS],
                "acceptanceDateTime": [f"{f[2]}T18:00:00.000Z" for f in SNOW_FILINGS],
                # As EDGAR lists them: the XSL-rendered view, whose raw XML is one folder up.
                "primaryDocument": [f"xslF345X03/{f[4]}" for f in SNOW_FILINGS],
                "primaryDocDescription": [f"FORM {f[1]}" for f in SNOW_FILINGS],
            },
            "files": [],
        },
    }
    extras = {
        f"data.sec.gov/submissions/CIK{int(SNOW_CIK):010d}.json": json.dumps(submissions).encode()
    }
    for accession, _, _, _, name in SNOW_FILINGS:
        folder = accession.replace("-", "")
        extras[f"www.sec.gov/Archives/edgar/data/{SNOW_CIK}/{folder}/{name}"] = (
            docs / name
        ).read_bytes()
    return extras
