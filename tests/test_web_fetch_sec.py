"""web_fetch on real EDGAR documents: inline XBRL reads, SEC hosts go through the SEC client,
and long documents are read in parts with offset."""

from __future__ import annotations

import itertools
from pathlib import Path

import httpx2

from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from dexter.tools.base import ToolContext
from dexter.tools.web.fetch import WebFetchArgs, WebFetchTool
from tests.support.filing_folder import BUCKLE_FOLDER, BUCKLE_PRIMARY, buckle_folder
from tests.support.fixtures import fixtures_dir
from tests.support.sec_mirror import Mirror, mirror_transport

AGENT = "Dexter Tests tests@example.com"
APPLE_10K = "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"


def sec_fetch_tool(tmp_path: Path, mirror: Mirror) -> WebFetchTool:
    sec = SecEdgarProvider(
        DataSettings(cache_dir=tmp_path / "cache", sec_user_agent=AGENT),
        transport=mirror_transport(mirror),
    )
    return WebFetchTool(cache_dir=tmp_path / "web", sec=sec)


async def test_buckle_8k_cover_with_xml_declaration_reads(tmp_path: Path) -> None:
    mirror = Mirror(buckle_folder())
    fetch = sec_fetch_tool(tmp_path, mirror)
    url = f"https://{BUCKLE_FOLDER}/{BUCKLE_PRIMARY}"
    ctx = ToolContext()
    result = await fetch.run(WebFetchArgs(url=url), ctx)
    assert "(the page has no readable text)" not in result.content
    assert "BUCKLE" in result.content.upper()
    assert "Results of Operations and Financial Condition" in result.content
    assert "<untrusted_content" in result.content  # filing text is framed as data
    # The SEC rules: the contact user agent, not the generic browser-ish one.
    assert mirror.user_agents == [AGENT]
    assert ctx.sources.entries()[0].url == url


async def test_apple_10k_pages_through_offsets_without_loss(tmp_path: Path) -> None:
    mirror = Mirror()
    fetch = sec_fetch_tool(tmp_path, mirror)
    ctx = ToolContext()
    first = await fetch.run(WebFetchArgs(url=APPLE_10K, max_chars=60_000), ctx)
    total = first.data["chars"]
    assert total > 200_000
    assert first.data["next_offset"] == 60_000
    assert "offset=60000" in first.content
    pieces = [first]
    while pieces[-1].data["next_offset"] is not None:
        offset = pieces[-1].data["next_offset"]
        pieces.append(await fetch.run(WebFetchArgs(url=APPLE_10K, offset=offset), ctx))
    assert sum(p.data["next_offset"] is None for p in pieces) == 1
    spans = [(p.data["offset"], p.data["next_offset"] or total) for p in pieces]
    # Every part starts where the one before stopped, and the last reaches the end.
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    assert spans[0][0] == 0 and spans[-1][1] == total
    # Tables come out as rows, like filing sections; the document was fetched only once.
    assert any("Total net sales |" in p.content for p in pieces)
    assert len(mirror.requests) == 1
    assert len(ctx.sources) == 1


async def test_inline_xbrl_reads_through_the_generic_path(tmp_path: Path) -> None:
    """No SEC client: a plain fetch of an inline-XBRL page still reads (the declaration that
    lxml rejects is stripped)."""
    body = (fixtures_dir() / "sec-documents" / "oracle.8-K.20241114.htm").read_bytes()
    assert body.lstrip().startswith(b"<?xml")

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/html"}, content=body)

    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.215.14"]

    fetch = WebFetchTool(
        cache_dir=tmp_path, transport=httpx2.MockTransport(handler), resolver=resolver
    )
    result = await fetch.run(WebFetchArgs(url="https://example.com/orcl-8k.htm"), ToolContext())
    assert "(the page has no readable text)" not in result.content
    assert "ORACLE" in result.content.upper()
