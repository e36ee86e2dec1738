"""Record real Yahoo Finance chart replies in the fixtures' wrapper format, for tests and for
checking the parser when Yahoo's unofficial API may have changed. Needs network access.

    uv run python scripts/record_prices.py AAPL:2020-08-31:2020-11-07 EURUSD=X:2020-01-01:2020-01-04
    uv run python scripts/record_prices.py --out fixtures/prices/yahoo TSLA:1970-01-01:2023-08-12

Each SYMBOL:FROM:TO (FROM included, TO excluded, as period1/period2) is saved as
chart-SYMBOL-FROM-to-TO.json: `{"request": {"url"}, "response": {"status", "headers",
"bodyJson"}}`, the same wrapper as ../shared/fixtures/prices/yahoo/ (README "prices/"). Requests
are spaced two seconds apart; Yahoo's API is unofficial, for personal use: record a handful, not
a universe.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, date, datetime
from pathlib import Path

import httpx2

CHART = "https://query1.finance.yahoo.com/v8/finance/chart/{symbol}"
USER_AGENT = "Mozilla/5.0 (compatible; Dexter financial research agent)"


def _epoch(day: str) -> int:
    parsed = date.fromisoformat(day)
    return int(datetime(parsed.year, parsed.month, parsed.day, tzinfo=UTC).timestamp())


def record(client: httpx2.Client, spec: str, out: Path, interval: str) -> bool:
    symbol, first, last = spec.rsplit(":", 2)
    params = {
        "period1": _epoch(first),
        "period2": _epoch(last),
        "interval": interval,
        "events": "div,split",
    }
    response = client.get(CHART.format(symbol=symbol), params=params)
    try:
        body = response.json()
    except ValueError:
        print(f"{spec}: HTTP {response.status_code}, not JSON (a consent or block page?)")
        return False
    wrapper = {
        "request": {"url": str(response.request.url), "method": "GET"},
        "response": {
            "ok": response.is_success,
            "status": response.status_code,
            "headers": dict(response.headers),
            "bodyJson": body,
        },
    }
    path = out / f"chart-{symbol}-{interval}-{first}-to-{last}.json"
    path.write_text(json.dumps(wrapper, indent=1))
    bars = len(((body.get("chart") or {}).get("result") or [{}])[0].get("timestamp") or [])
    print(f"{spec}: HTTP {response.status_code}, {bars} bars -> {path}")
    return response.is_success


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="+", metavar="SYMBOL:FROM:TO")
    parser.add_argument("--out", type=Path, default=Path("fixtures/prices/yahoo"))
    parser.add_argument("--interval", default="1d", choices=["1d", "1wk", "1mo"])
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ok = True
    with httpx2.Client(headers={"User-Agent": USER_AGENT}, timeout=30) as client:
        for index, spec in enumerate(args.specs):
            if index:
                time.sleep(2.0)
            ok = record(client, spec, args.out, args.interval) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
