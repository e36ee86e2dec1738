"""A filing folder for The Buckle's 8-K of 2024-11-22, served from the recorded documents.

The two documents (the 8-K cover and its EX-99.1 earnings release) are the real recorded files
in `../shared/fixtures/sec-documents/`. The fixtures hold no directory listing or header page for
this filing, so the folder's `index.json` and `-index-headers.html` are composed here in the
documented shapes of those SEC pages (compare the real `0001213900-24-004875-index.json` and
`0000905729-24-000095-index-headers.html` next to them). The accession number is therefore a
test value, not Buckle's real one; nothing asserted depends on it being real.
"""

from __future__ import annotations

import json

from tests.support.fixtures import fixtures_dir

BUCKLE_CIK = "885245"
BUCKLE_ACCESSION = "0000885245-24-000099"
BUCKLE_FOLDER = f"www.sec.gov/Archives/edgar/data/{BUCKLE_CIK}/{BUCKLE_ACCESSION.replace('-', '')}"
BUCKLE_PRIMARY = "bke-20241122.htm"
BUCKLE_EXHIBIT = "bke20241122-8kexhibit.htm"


def _document_block(kind: str, sequence: int, name: str, description: str) -> str:
    return (
        f"&lt;DOCUMENT&gt;\n&lt;TYPE&gt;{kind}\n&lt;SEQUENCE&gt;{sequence}\n"
        f"&lt;FILENAME&gt;{name}\n&lt;DESCRIPTION&gt;{description}\n&lt;TEXT&gt;\n"
        f'<a href="{name}">Document {sequence} - file: {name}</a><br>\n&lt;/DOCUMENT&gt;\n'
    )


def buckle_folder(*, with_headers: bool = True) -> dict[str, bytes]:
    """URL path -> body for the folder; `with_headers=False` leaves only `-index.htm` style
    metadata out, so the document types must come from elsewhere."""
    docs = fixtures_dir() / "sec-documents"
    primary = (docs / "buckle.8-K.20241122.htm").read_bytes()
    exhibit_sgml = (docs / "buckle.8-K.20241122.EX-99.1.htm").read_bytes()
    listing = {
        "directory": {
            "item": [
                {"name": f"{BUCKLE_ACCESSION}-index-headers.html", "type": "text.gif", "size": ""},
                {"name": f"{BUCKLE_ACCESSION}-index.html", "type": "text.gif", "size": ""},
                {"name": f"{BUCKLE_ACCESSION}.txt", "type": "text.gif", "size": ""},
                {"name": "bke-20241122.xsd", "type": "text.gif", "size": "2871"},
                {"name": "bke-20241122_lab.xml", "type": "text.gif", "size": "23710"},
                {"name": BUCKLE_PRIMARY, "type": "text.gif", "size": str(len(primary))},
                {"name": BUCKLE_EXHIBIT, "type": "text.gif", "size": str(len(exhibit_sgml))},
            ],
            "name": f"/Archives/edgar/data/{BUCKLE_CIK}/{BUCKLE_ACCESSION.replace('-', '')}",
        }
    }
    headers = (
        f"<HTML><HEAD><TITLE>SEC EDGAR Submission {BUCKLE_ACCESSION}</TITLE></HEAD><BODY>\n"
        f"<PRE>&lt;SEC-DOCUMENT&gt;{BUCKLE_ACCESSION}-index.html : 20241122\n"
        f"&lt;SEC-HEADER&gt;{BUCKLE_ACCESSION}.hdr.sgml : 20241122\n"
        f"ACCESSION NUMBER:\t\t{BUCKLE_ACCESSION}\nCONFORMED SUBMISSION TYPE:\t8-K\n"
        "PUBLIC DOCUMENT COUNT:\t\t4\nCONFORMED PERIOD OF REPORT:\t20241122\n"
        "ITEM INFORMATION:\t\tResults of Operations and Financial Condition\n"
        "ITEM INFORMATION:\t\tFinancial Statements and Exhibits\n"
        "FILED AS OF DATE:\t\t20241122\n\nFILER:\n\n\tCOMPANY DATA:\t\n"
        "\t\tCOMPANY CONFORMED NAME:\t\t\tBUCKLE INC\n"
        "\t\tCENTRAL INDEX KEY:\t\t\t0000885245\n&lt;/SEC-HEADER&gt;\n"
        + _document_block("8-K", 1, BUCKLE_PRIMARY, "8-K")
        + _document_block("EX-99.1", 2, BUCKLE_EXHIBIT, "EX-99.1")
        + _document_block("EX-101.SCH", 3, "bke-20241122.xsd", "XBRL TAXONOMY EXTENSION SCHEMA")
        + _document_block("EX-101.LAB", 4, "bke-20241122_lab.xml", "XBRL LABEL FILE")
        + "&lt;/SEC-DOCUMENT&gt;</PRE></BODY></HTML>\n"
    )
    # The recorded exhibit is the SGML <DOCUMENT> block from the full submission; the Archives
    # file itself is the HTML inside <TEXT>.
    text = exhibit_sgml.split(b"<TEXT>", 1)[-1].rsplit(b"</TEXT>", 1)[0].strip()
    folder = {
        f"{BUCKLE_FOLDER}/index.json": json.dumps(listing).encode(),
        f"{BUCKLE_FOLDER}/{BUCKLE_PRIMARY}": primary,
        f"{BUCKLE_FOLDER}/{BUCKLE_EXHIBIT}": text,
    }
    if with_headers:
        folder[f"{BUCKLE_FOLDER}/{BUCKLE_ACCESSION}-index-headers.html"] = headers.encode()
    return folder
