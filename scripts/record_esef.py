"""Record filings.xbrl.org (ESEF annual reports) for Dexter's tests: index pages and real
xBRL-JSON reports, which the shared fixtures lack (their tests use reports built from the
xBRL-JSON specification until a recording exists).

    uv run python scripts/record_esef.py          # ASML, KONE, UPM: entity, filings, reports
    uv run python scripts/record_esef.py --lei 549300UWB1AIR85BM957 --dest fixtures

Files go to <dest>/nonus/filings.xbrl.org/: `entity-<LEI>.json`, `filings-<LEI>.<page>.json`,
and `reports/<the report's file name>`, each listed in `MANIFEST.json` (file, URL, status),
which keeps the entries already there. Nothing is sent but plain GETs, two a second.

filings.xbrl.org is run by XBRL International; the reports are public company filings. Check the
site's current terms before recording or sharing more than a few files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx2

BASE = "https://filings.xbrl.org"
DEFAULT_LEIS = (
    "724500Y6DUVHQD6OXN27",  # ASML Holding N.V. (NL)
    "2138001CNF45JP5XZK38",  # KONE Oyj (FI), English and Finnish versions
    "213800EC6PW5VU4J9U64",  # UPM-Kymmene Oyj (FI)
)
PAUSE = 0.5


def get(client: httpx2.Client, url: str) -> httpx2.Response:
    time.sleep(PAUSE)
    response = client.get(url)
    print(f"  {response.status_code} {url} ({len(response.content):,} bytes)")
    return response


def save(
    folder: Path, manifest: list[dict[str, Any]], name: str, response: httpx2.Response
) -> None:
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(target.suffix + ".part")
    partial.write_bytes(response.content)
    partial.replace(target)
    manifest[:] = [row for row in manifest if row.get("file") != name]
    manifest.append(
        {
            "file": name,
            "url": str(response.request.url),
            "method": "GET",
            "status": response.status_code,
            "content_type_recorded": response.headers.get("content-type", ""),
            "source": "scripts/record_esef.py",
        }
    )


def record(
    client: httpx2.Client, folder: Path, manifest: list[dict[str, Any]], lei: str, reports: int
) -> None:
    print(f"{lei}:")
    save(folder, manifest, f"entity-{lei}.json", get(client, f"{BASE}/api/entities/{lei}"))
    url: str | None = f"{BASE}/api/entities/{lei}/filings?page%5Bsize%5D=100"
    filings: list[dict[str, Any]] = []
    page = 0
    while url:
        page += 1
        response = get(client, url)
        save(folder, manifest, f"filings-{lei}.{page}.json", response)
        if response.status_code != 200:
            return
        body = response.json()
        filings += body.get("data") or []
        url = (body.get("links") or {}).get("next")
    with_json = [f for f in filings if (f.get("attributes") or {}).get("json_url")]
    newest = sorted(with_json, key=lambda f: f["attributes"].get("period_end") or "", reverse=True)
    for filing in newest[:reports]:
        path = filing["attributes"]["json_url"]
        response = get(client, BASE + path)  # httpx2 quotes the spaces some file names hold
        if response.status_code == 200:
            save(folder, manifest, "reports/" + path.rsplit("/", 1)[-1], response)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default = os.environ.get("DEXTER_FIXTURES") or "fixtures"
    parser.add_argument("--dest", default=default, help=f"fixtures folder (default {default})")
    parser.add_argument("--lei", action="append", help="an issuer's LEI (repeatable)")
    parser.add_argument("--reports", type=int, default=2, help="newest reports per issuer")
    args = parser.parse_args()
    folder = Path(args.dest) / "nonus" / "filings.xbrl.org"
    manifest_path = folder / "MANIFEST.json"
    manifest: list[dict[str, Any]] = (
        json.loads(manifest_path.read_text()) if manifest_path.is_file() else []
    )
    headers = {"User-Agent": "Dexter fixtures recorder (scripts/record_esef.py)"}
    with httpx2.Client(timeout=120, follow_redirects=True, headers=headers) as client:
        for lei in args.lei or DEFAULT_LEIS:
            record(client, folder, manifest, lei.strip().upper(), args.reports)
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"\nDone. Point the tests at it:  export DEXTER_FIXTURES={Path(args.dest).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
