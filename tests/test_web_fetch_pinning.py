"""web_fetch connects to the address it checked, so a DNS answer that changes between the check
and the connection (DNS rebinding) cannot steer it to an internal address."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from dexter.tools.base import ToolContext, ToolFailure
from dexter.tools.web.fetch import WebFetchArgs, WebFetchTool, pinned_request

PAGE = b"<html><head><title>Results</title></head><body><p>Revenue rose 12%.</p></body></html>"


def test_pinned_request_keeps_host_and_tls_name() -> None:
    target, headers, extensions = pinned_request(
        "https://news.example.com/a?q=1", ["93.184.216.34"]
    )
    assert target == "https://93.184.216.34/a?q=1"
    assert headers == {"Host": "news.example.com"}
    assert extensions == {"sni_hostname": "news.example.com"}
    target, headers, _ = pinned_request("http://news.example.com:8080/", ["2606:2800::1"])
    assert target == "http://[2606:2800::1]:8080/" and headers == {"Host": "news.example.com:8080"}
    assert pinned_request("http://127.0.0.1/", None) == ("http://127.0.0.1/", {}, {})


async def test_fetch_connects_to_the_vetted_address(tmp_path: Path) -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=PAGE, headers={"content-type": "text/html"})

    answers = iter([["93.184.216.34"], ["93.184.216.34"]])

    async def resolver(host: str, port: int) -> list[str]:
        return next(answers)

    tool = WebFetchTool(
        cache_dir=tmp_path, transport=httpx2.MockTransport(handler), resolver=resolver
    )
    result = await tool.run(WebFetchArgs(url="https://news.example.com/q"), ToolContext())
    assert "Revenue rose 12%" in result.content
    assert seen[0].url.host == "93.184.216.34"
    assert seen[0].headers["host"] == "news.example.com"
    assert seen[0].extensions.get("sni_hostname") == "news.example.com"


async def test_rebinding_to_a_private_address_never_connects(tmp_path: Path) -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=PAGE, headers={"content-type": "text/html"})

    answers = iter([["93.184.216.34"], ["10.0.0.7"], ["10.0.0.7"]])

    async def resolver(host: str, port: int) -> list[str]:
        return next(answers)

    tool = WebFetchTool(
        cache_dir=tmp_path, transport=httpx2.MockTransport(handler), resolver=resolver
    )
    with pytest.raises(ToolFailure, match="private"):
        await tool.run(WebFetchArgs(url="https://rebind.example.com/"), ToolContext())
    assert seen == []
