"""An HTTP transport that answers SEC URLs from a recorded mirror directory on disk.

The layout is the URL without its scheme (`<root>/data.sec.gov/api/...`), as in the shared
fixtures, so the real provider code runs unchanged over recorded responses and never the network.
"""

from __future__ import annotations

from pathlib import Path

import httpx2


def mirror_transport(root: Path) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        file = (root / request.url.host / request.url.path.lstrip("/")).resolve()
        if root.resolve() not in file.parents or not file.is_file():
            return httpx2.Response(404, text="Not Found")
        return httpx2.Response(200, content=file.read_bytes())

    return httpx2.MockTransport(handler)
