"""The SSRF guard: web_fetch must never reach the user's machine, network or cloud metadata."""

from __future__ import annotations

import pytest

from dexter.tools.base import ToolFailure
from dexter.tools.web.ssrf import BlockedURL, check_url, parse_ip_literal


def fake_resolver(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


PUBLIC = fake_resolver({"example.com": ["93.184.215.14"], "news.example.org": ["2606:4700::1"]})


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.0.0.1:8080/admin",
        "http://127.1/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://api.localhost/",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://10.0.0.5/",
        "http://192.168.1.1/",
        "http://172.16.0.1/",
        "http://172.31.255.255/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://[::]/",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0x7f.1/",
        "http://017700000001/",
        "http://0177.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[2002:7f00:1::]/",
        "http://[64:ff9b::a00:5]/",
        "http://999.1.1.1/",
    ],
)
async def test_internal_addresses_are_refused(url: str) -> None:
    with pytest.raises(BlockedURL, match="Refused"):
        await check_url(url, resolver=PUBLIC)


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://example.com/x", "gopher://example.com/", "javascript:alert(1)"],
)
async def test_other_schemes_are_refused(url: str) -> None:
    with pytest.raises(BlockedURL, match="Only http and https"):
        await check_url(url, resolver=PUBLIC)


async def test_credentials_in_url_are_refused() -> None:
    with pytest.raises(BlockedURL, match="credentials"):
        await check_url("http://user:pw@example.com/", resolver=PUBLIC)
    with pytest.raises(BlockedURL, match="credentials"):
        await check_url("http://example.com@127.0.0.1/", resolver=PUBLIC)


async def test_dns_name_resolving_to_private_address_is_refused() -> None:
    resolver = fake_resolver(
        {"intranet.example.com": ["10.1.2.3"], "mixed.example.com": ["93.184.215.14", "::1"]}
    )
    with pytest.raises(BlockedURL, match=r"resolves to 10\.1\.2\.3, a private address"):
        await check_url("https://intranet.example.com/wiki", resolver=resolver)
    # One internal address among public ones is enough to refuse.
    with pytest.raises(BlockedURL, match="loopback"):
        await check_url("https://mixed.example.com/", resolver=resolver)


async def test_unresolvable_host_is_refused() -> None:
    with pytest.raises(BlockedURL, match="Could not resolve"):
        await check_url("https://nowhere.invalid/", resolver=PUBLIC)


async def test_public_hosts_pass() -> None:
    await check_url("https://example.com/page?q=1", resolver=PUBLIC)
    await check_url("http://news.example.org:8080/", resolver=PUBLIC)
    await check_url("https://93.184.215.14/", resolver=PUBLIC)
    await check_url("https://[2606:4700::1]/", resolver=PUBLIC)


async def test_allowed_hosts_are_exempt_by_exact_host() -> None:
    await check_url("http://127.0.0.1:9000/x", allowed_hosts=frozenset({"127.0.0.1"}))
    resolver = fake_resolver({"wiki.corp": ["10.0.0.7"]})
    await check_url("http://WIKI.corp/", allowed_hosts=frozenset({"wiki.corp"}), resolver=resolver)
    # The allowance is for that host name only, not other spellings of the same address.
    with pytest.raises(BlockedURL):
        await check_url("http://2130706433/", allowed_hosts=frozenset({"127.0.0.1"}))
    with pytest.raises(BlockedURL):
        await check_url("http://localhost/", allowed_hosts=frozenset({"127.0.0.1"}))


async def test_block_message_tells_the_user_how_to_allow_a_host() -> None:
    with pytest.raises(BlockedURL) as info:
        await check_url("http://192.168.1.1/")
    assert "webFetch.allowedHosts" in str(info.value)
    assert isinstance(info.value, ToolFailure)  # reaches the model as a tool error


def test_legacy_ip_forms_parse_like_inet_aton() -> None:
    assert str(parse_ip_literal("2130706433")) == "127.0.0.1"
    assert str(parse_ip_literal("0x7f.1")) == "127.0.0.1"
    assert str(parse_ip_literal("10.1")) == "10.0.0.1"
    assert str(parse_ip_literal("192.168.257")) == "192.168.1.1"
    assert parse_ip_literal("example.com") is None
    assert parse_ip_literal("1.2.3.4.5") is None
