"""Serve filings.xbrl.org to the code under test, with no network, keyed by URL.

The index responses are the real recorded ones (../shared/fixtures/nonus/filings.xbrl.org, see
its README); the entity and entity-filings pages a lookup by LEI asks for are assembled from
recorded resources (the entity objects and filing objects those recordings carry, unchanged).
The xBRL-JSON reports are NOT recordings: none exists in the fixtures, so they are built from
XBRL International's xBRL-JSON 1.0 specification (tests/data/esef/, and `built_report` here).

Two ways to serve them: `Routes.transport()` (an httpx2 MockTransport for a provider built in a
test) and `EsefServer` (a real HTTP server on 127.0.0.1, selected by DEXTER_ESEF_URL as a user
would point at a mirror).
"""

from __future__ import annotations

import json
import threading
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx2
import pytest

from tests.support.fixtures import fixtures_dir

BASE = "https://filings.xbrl.org"
ASML = "724500Y6DUVHQD6OXN27"
KONE = "2138001CNF45JP5XZK38"
UPM = "213800EC6PW5VU4J9U64"
CREDIT_SUISSE = "E58DKGMJYYYJLN8C3868"
ORIOLA = "549300UWB1AIR85BM957"
ASML_REPORT = (
    Path(__file__).resolve().parents[1] / "data" / "esef" / "asml-2022-built-from-spec.json"
)


def esef_fixtures() -> Path:
    path = fixtures_dir() / "nonus" / "filings.xbrl.org"
    if not path.is_dir():
        pytest.skip(
            f"{path} is missing; see ../shared/fixtures/README.md (scripts/fetch_fixtures.py) "
            "and record more with `uv run python scripts/record_esef.py`."
        )
    return path


@cache
def _recorded(name: str) -> dict[str, Any]:
    return json.loads((esef_fixtures() / name).read_text())  # type: ignore[no-any-return]


def recorded(name: str) -> dict[str, Any]:
    """A recorded response body, parsed once per session (treat it as read-only)."""
    return _recorded(name)


def recorded_routes() -> Routes:
    """Everything scripts/record_esef.py recorded (if anyone has), served by its URL."""
    routes = Routes()
    manifest = json.loads((esef_fixtures() / "MANIFEST.json").read_text())
    for row in manifest:
        path = esef_fixtures() / str(row["file"])
        if path.is_file():
            routes.add(str(row["url"]), path.read_bytes(), status=int(row["status"]))
    return routes


def recorded_leis() -> list[str]:
    """The issuers whose entity and filings scripts/record_esef.py recorded."""
    return sorted(p.stem.removeprefix("entity-") for p in esef_fixtures().glob("entity-*.json"))


def recorded_url(name: str) -> str:
    manifest = json.loads((esef_fixtures() / "MANIFEST.json").read_text())
    return next(str(row["url"]) for row in manifest if row["file"] == name)


def key(url: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A URL without its host, query parameters in any order."""
    parts = urlsplit(url)
    return parts.path, tuple(sorted(parse_qsl(parts.query)))


def entity_page(recording: str) -> dict[str, Any]:
    """`GET /api/entities/<LEI>`: the entity object a recorded filings page includes."""
    entity = recorded(recording)["included"][0]
    return {
        "data": entity,
        "links": {"self": entity["links"]["self"]},
        "jsonapi": {"version": "1.0"},
    }


def entity_filings_page(*recordings: str) -> dict[str, Any]:
    """`GET /api/entities/<LEI>/filings`: the recorded filing objects of those responses."""
    data = [filing for name in recordings for filing in recorded(name)["data"]]
    return {"data": data, "links": {}, "meta": {"count": len(data)}, "jsonapi": {"version": "1.0"}}


def built_report(lei: str, year: int, figures: dict[str, float]) -> dict[str, Any]:
    """A small xBRL-JSON report built from the specification: each figure (EUR millions) as a
    fact for the fiscal year, instants for balance-sheet concepts."""
    instants = {"Assets", "Equity", "Liabilities", "CashAndCashEquivalents"}
    facts = {}
    for n, (concept, value) in enumerate(figures.items(), start=1):
        period = (
            f"{year + 1}-01-01T00:00:00"
            if concept in instants
            else f"{year}-01-01T00:00:00/{year + 1}-01-01T00:00:00"
        )
        facts[f"f{n}"] = {
            "value": str(round(value * 1_000_000)),
            "decimals": -6,
            "dimensions": {
                "concept": f"ifrs-full:{concept}",
                "entity": f"lei:{lei}",
                "period": period,
                "unit": "iso4217:EUR",
            },
        }
    return {
        "documentInfo": {
            "documentType": "https://xbrl.org/2021/xbrl-json",
            "namespaces": {
                "ifrs-full": "https://xbrl.ifrs.org/taxonomy/2022-03-24/ifrs-full",
                "lei": "http://standards.iso.org/iso/17442",
                "iso4217": "http://www.xbrl.org/2003/iso4217",
            },
        },
        "facts": facts,
    }


def _json_url(recording: str, index: int = 0) -> str:
    return BASE + str(recorded(recording)["data"][index]["attributes"]["json_url"])


class Routes:
    """URL -> (status, body); every request is recorded."""

    def __init__(self) -> None:
        self.bodies: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, bytes]] = {}
        self.requests: list[str] = []

    def add(self, url: str, body: dict[str, Any] | bytes, status: int = 200) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.bodies[key(url)] = (status, raw)

    def answer(self, url: str) -> tuple[int, bytes]:
        self.requests.append(url)
        return self.bodies.get(
            key(url), (404, b'{"errors":[{"status":"404","title":"Not found"}]}')
        )

    def transport(self) -> httpx2.MockTransport:
        def handle(request: httpx2.Request) -> httpx2.Response:
            status, body = self.answer(str(request.url))
            headers = {"content-type": "application/vnd.api+json", "retry-after": "0"}
            return httpx2.Response(status, content=body, headers=headers)

        return httpx2.MockTransport(handle)


def standard_routes() -> Routes:
    """ASML (2022, the report built from the spec), UPM (2022 and 2023, built), KONE (English
    and Finnish versions of 2022; only the English one is served), Credit Suisse (no
    xBRL-JSON), Oriola by name in Finland, and the recorded CZ pages."""
    routes = Routes()
    asml = "asml-2022-NL-filing-with-entity.json"
    upm22, upm23 = (
        "upm-2022-2023-with-validation-messages.1.json",
        "upm-2022-2023-with-validation-messages.3.json",
    )
    kone_en, kone_fi = (
        "kone-2022-FI-two-language-versions.1.json",
        "kone-2022-FI-two-language-versions.2.json",
    )
    suisse = "creditsuisse-2021-filing-162-with-entity.json"
    for lei, recordings in (
        (ASML, (asml,)),
        (UPM, (upm22, upm23)),
        (KONE, (kone_en, kone_fi)),
        (CREDIT_SUISSE, (suisse,)),
    ):
        routes.add(f"{BASE}/api/entities/{lei}", entity_page(recordings[0]))
        routes.add(
            f"{BASE}/api/entities/{lei}/filings?page%5Bsize%5D=100",
            entity_filings_page(*recordings),
        )
    routes.add(_json_url(asml), ASML_REPORT.read_bytes())
    routes.add(
        _json_url(upm22),
        built_report(UPM, 2022, {"Revenue": 11720.0, "ProfitLoss": 1556.0, "Assets": 22207.0}),
    )
    routes.add(
        _json_url(upm23),
        built_report(UPM, 2023, {"Revenue": 10464.0, "ProfitLoss": 389.0, "Assets": 19776.0}),
    )
    routes.add(_json_url(kone_en), built_report(KONE, 2022, {"Revenue": 10906.9}))
    # Finland's filings by name: the recorded response to the same query (recorded three to a
    # page, sorted by date added), served for the query Dexter makes.
    routes.add(
        f"{BASE}/api/filings?filter%5Bcountry%5D=FI&include=entity&page%5Bsize%5D=100",
        recorded("FI-oldest-3-filings-with-entities.json"),
    )
    for page in (1, 2, 3):
        name = f"CZ-2020-12-31-paged-3-pages.{page}.json"
        routes.add(recorded_url(name), recorded(name))
    return routes


class EsefServer:
    """The routes on a real HTTP server at 127.0.0.1, for `dexter` run end to end."""

    def __init__(self, routes: Routes) -> None:
        self.routes = routes
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                status, body = outer.routes.answer(BASE + self.path)
                self.send_response(status)
                self.send_header("content-type", "application/vnd.api+json")
                self.send_header("retry-after", "0")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> EsefServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
