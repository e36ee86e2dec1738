"""Download the public test data that Dexter's data tests use, from the original sources.

The repository never contains these files. Tests look for them in $DEXTER_FIXTURES, else in
../shared/fixtures beside the repository; tests that need them skip until they exist.

    DEXTER_SEC_USER_AGENT="Jane Doe jane@example.com" uv run python scripts/fetch_fixtures.py
    export DEXTER_FIXTURES=$PWD/fixtures   # if you used the default destination

SEC files come straight from SEC EDGAR (newer than the recorded copies, so known values for the
latest periods may move; the older ones stay fixed). The rest come from the MIT-licensed projects
they were recorded in, at pinned commits.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import httpx2

SEC_FILES = [
    "https://data.sec.gov/api/xbrl/companyfacts/CIK0000320193.json",
    "https://data.sec.gov/api/xbrl/companyfacts/CIK0001045810.json",
    "https://data.sec.gov/api/xbrl/companyfacts/CIK0001640147.json",
    "https://data.sec.gov/submissions/CIK0000320193.json",
    "https://data.sec.gov/submissions/CIK0001045810.json",
    "https://data.sec.gov/submissions/CIK0000789019.json",
    "https://www.sec.gov/files/company_tickers.json",
    "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm",
]

EDGARTOOLS = (
    "https://raw.githubusercontent.com/dgunning/edgartools/ca5a70094da7fc34890161dae9c256bb1f4c3d26"
)
DEXTER_TS = (
    "https://raw.githubusercontent.com/virattt/dexter/823052ed687a6f3ef0e48b5e7025c73e86d95775"
)
FD_SPEC = (
    "https://raw.githubusercontent.com/orkeren21/claude-financial-datasets/5d426ca/"
    "plugins/financial-datasets/skills/financial-datasets/scripts/openapi.json"
)

OTHER_FILES = {
    # Tesla's older submissions snapshot (with a `files` page list) as edgartools recorded it.
    "sec-mirror/data.sec.gov/submissions/CIK0001318605.json": (
        f"{EDGARTOOLS}/data/company_submission.json"
    ),
    "sec-documents/form4.snow.xml": f"{EDGARTOOLS}/data/form4.snow.xml",
    "sec-documents/form3.snow.xml": f"{EDGARTOOLS}/data/ownership/form3.snow.xml",
    "sec-documents/form5.snow.xml": f"{EDGARTOOLS}/data/ownership/form5.snow.xml",
    "sec-documents/13F-HR.infotable.xml": f"{EDGARTOOLS}/data/xml/13F-HR.infotable.xml",
    "sec-documents/0001213900-24-004875-index.json": (
        f"{EDGARTOOLS}/data/attachments/0001213900-24-004875-index.json"
    ),
    "financialdatasets/openapi.json": FD_SPEC,
    "evals/finance_agent.csv": f"{DEXTER_TS}/src/evals/dataset/finance_agent.csv",
    # The benchmark's current public splits, at the commits `dexter eval` pins (evals/splits.py).
    "evals/finance_agent_v1_1.csv": (
        "https://raw.githubusercontent.com/vals-ai/finance-agent/"
        "43e732835589bebd30c0f66ed765bfda6abb9fbe/data/public.csv"
    ),
    "evals/finance_agent_v2_public.csv": (
        "https://raw.githubusercontent.com/vals-ai/finance-agent-v2/"
        "bb460b524472ae0955abdf243bbbac06958dc8c9/data/public.csv"
    ),
}

# The two 10-K XBRL filings the segment tests read (`xbrl/<folder>/`: the extracted instance,
# schema and linkbases), and beside them in the mirror each folder's real `index.json` and the
# filer's submissions, which the tests otherwise compose in their documented shapes.
XBRL_FILINGS = {
    "amzn-10k-2022": ("1018724", "0001018724-23-000004", "amzn-20221231"),
    "nflx-10k-2023": ("1065280", "0001065280-24-000030", "nflx-20231231"),
}
XBRL_PARTS = ("_htm.xml", ".xsd", "_lab.xml", "_pre.xml", "_cal.xml", "_def.xml")


def fetch_xbrl_filings(client: httpx2.Client, dest: Path, headers: dict[str, str]) -> None:
    for folder, (cik, accession, stem) in XBRL_FILINGS.items():
        base = f"https://www.sec.gov/Archives/edgar/data/{cik}/{accession.replace('-', '')}"
        for url in (
            f"{base}/index.json",
            f"https://data.sec.gov/submissions/CIK{cik.zfill(10)}.json",
        ):
            fetch(client, url, dest / mirror_path(url), headers)
            time.sleep(0.2)
        for part in XBRL_PARTS:
            fetch(client, f"{base}/{stem}{part}", dest / "xbrl" / folder / f"{stem}{part}", headers)
            time.sleep(0.2)


# One real EDGAR full-text search reply (tests use one composed in tests/data until this exists).
# Saved under the URL's path without the query, which is how the test mirror looks files up.
EFTS_SEARCH = (
    "https://efts.sec.gov/LATEST/search-index?q=%22fiscal%20quarter%20ended%22"
    "&forms=8-K&dateRange=custom&startdt=2024-11-01&enddt=2024-11-30&ciks=0000885245"
)

# The recorded Financial Datasets response lives in the parent of this commit of virattt/dexter.
MSFT_COMMIT = "0d64855796722a28be1cde543522e41817baacd7"
MSFT_PATH = "dexter-ts/.dexter/context/get_all_financial_statements_5601bcc6aca8.json"


def mirror_path(url: str) -> str:
    return "sec-mirror/" + url.split("://", 1)[1]


def fetch(client: httpx2.Client, url: str, target: Path, headers: dict[str, str]) -> None:
    response = client.get(url, headers=headers)
    if response.status_code != 200:
        raise SystemExit(f"failed: {url} answered HTTP {response.status_code}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(target.suffix + ".part")
    partial.write_bytes(response.content)
    partial.replace(target)
    print(f"  {target} ({len(response.content):,} bytes)")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default = os.environ.get("DEXTER_FIXTURES") or "fixtures"
    parser.add_argument("--dest", default=default, help=f"destination folder (default {default})")
    args = parser.parse_args()
    agent = os.environ.get("DEXTER_SEC_USER_AGENT", "").strip()
    if not agent:
        print(
            "DEXTER_SEC_USER_AGENT is not set. The SEC requires a name and an email address, e.g.\n"
            '  DEXTER_SEC_USER_AGENT="Jane Doe jane@example.com"',
            file=sys.stderr,
        )
        return 2
    dest = Path(args.dest)
    with httpx2.Client(timeout=60, follow_redirects=True) as client:
        print("SEC EDGAR:")
        for url in SEC_FILES:
            fetch(client, url, dest / mirror_path(url), {"User-Agent": agent})
            time.sleep(0.2)  # far below the SEC's 10 requests/second
        fetch(
            client,
            EFTS_SEARCH,
            dest / mirror_path(EFTS_SEARCH.split("?", 1)[0]),
            {"User-Agent": agent},
        )
        print("XBRL filings with segment facts:")
        fetch_xbrl_filings(client, dest, {"User-Agent": agent})
        print("Recorded files from public repositories:")
        for relative, url in OTHER_FILES.items():
            fetch(client, url, dest / relative, {})
        commit = client.get(f"https://api.github.com/repos/virattt/dexter/commits/{MSFT_COMMIT}")
        parent = commit.json()["parents"][0]["sha"]
        fetch(
            client,
            f"https://raw.githubusercontent.com/virattt/dexter/{parent}/{MSFT_PATH}",
            dest / "financialdatasets/msft_financials_recorded.json",
            {},
        )
    print(f"\nDone. Point the tests at it:  export DEXTER_FIXTURES={dest.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
