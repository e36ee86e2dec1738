"""Record a real DuckDuckGo HTML results page, to compare with the test page built by hand
(tests/data/duckduckgo_results.html) when the markup may have changed.

    uv run python scripts/record_search_pages.py "nvidia capex plans" > page.html
"""

from __future__ import annotations

import sys

import httpx2


def main() -> int:
    query = " ".join(sys.argv[1:]) or "nvidia capex plans"
    response = httpx2.post(
        "https://html.duckduckgo.com/html/",
        data={"q": query, "b": "", "kl": "wt-wt"},
        headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Dexter research agent"},
        timeout=20,
    )
    sys.stdout.write(response.text)
    print(f"HTTP {response.status_code}, {len(response.text):,} characters", file=sys.stderr)
    return 0 if response.status_code == 200 else 1


if __name__ == "__main__":
    raise SystemExit(main())
