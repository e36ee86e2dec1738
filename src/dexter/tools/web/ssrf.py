"""Refuse URLs that would make `web_fetch` or `browser` reach the user's own machine or network.

A URL passes only if its scheme is http(s), it carries no credentials, and its host is neither an
internal address nor a name that resolves to one. IP literals are recognised in every form a
resolver accepts (`2130706433`, `0x7f.1`, `017700000001`, `[::ffff:127.0.0.1]`), so an internal
address cannot slip through dressed as a number. Hosts the user lists in `webFetch.allowedHosts`
are exempt (exact host match).

A name is resolved once, here: callers connect to the addresses `check_url` returns
(`pinned_request`), never to a second DNS answer that could differ (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from dexter.tools.base import ToolFailure

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host, port -> the IP addresses (as strings) the host resolves to.
Resolver = Callable[[str, int], Awaitable[list[str]]]

MAX_URL_LENGTH = 2000

_METADATA = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
        ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    }
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LEGACY_PART = re.compile(r"^(0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)$")
_NUMBERISH = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


class BlockedURL(ToolFailure):
    """The URL points somewhere `web_fetch` must not go; the message says why."""


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def normalise_host(host: str) -> str:
    """Lower-case, no IPv6 brackets or trailing dot: the form `allowed_hosts` is compared in."""
    return host.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")


def normalise_hosts(hosts: Iterable[str]) -> frozenset[str]:
    return frozenset(h for h in (normalise_host(x) for x in hosts) if h)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address `host` denotes if it is an IP literal in any form, else None.

    Besides the standard forms this accepts the legacy inet_aton forms: one to four parts, each
    decimal, octal (leading 0) or hex (0x), the last part filling the remaining bytes.
    """
    host = normalise_host(host).split("%", 1)[0]
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_LEGACY_PART.match(p) for p in parts):
        return None
    values: list[int] = []
    for part in parts:
        if part.startswith("0x"):
            values.append(int(part[2:] or "0", 16))
        elif part.startswith("0") and len(part) > 1:
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = 0
    for value in head:
        number = number * 256 + value
    number = (number << (8 * (5 - len(values)))) + last
    return ipaddress.IPv4Address(number)


def blocked_reason(ip: IPAddress) -> str | None:
    """Why `ip` must not be fetched (e.g. "loopback"), or None for a public address."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is None and ip.teredo is not None:
            embedded = ip.teredo[1]
        if embedded is not None:
            inner = blocked_reason(embedded)
            if inner is not None:
                return f"{inner} (embedded in IPv6)"
    if ip in _METADATA:
        return "cloud metadata"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        return "site-local"
    if ip.is_private:
        return "private"
    if ip.is_reserved:
        return "reserved"
    if not ip.is_global:
        return "non-public"
    return None


async def check_url(
    url: str,
    *,
    allowed_hosts: frozenset[str] = frozenset(),
    resolver: Resolver | None = None,
    resolve: bool = True,
) -> list[str] | None:
    """Raise BlockedURL unless `url` is an http(s) URL to a public host (or an allowed one).

    Returns the vetted addresses of a DNS name, so the caller can connect to exactly those (a
    second lookup at connect time could be answered differently: DNS rebinding); None for an
    IP literal or an allowed host. With `resolve=False` a name is not looked up (and None is
    returned): a quick first check for a caller whose connections are checked again anyway.
    """
    if len(url) > MAX_URL_LENGTH:
        raise BlockedURL(f"URL is longer than {MAX_URL_LENGTH} characters.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise BlockedURL(f"Invalid URL {url!r}: {exc}.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        shown = f"{scheme}://" if scheme else "(none)"
        raise BlockedURL(f"Only http and https URLs can be fetched, not {shown}: {url}")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise BlockedURL(f"URLs with credentials (user:password@) are refused: {url}")
    host = normalise_host(parts.hostname or "")
    if not host:
        raise BlockedURL(f"URL has no host: {url}")
    if host in normalise_hosts(allowed_hosts):
        return None
    hint = (
        " If you trust this host, add it to webFetch.allowedHosts in settings.json "
        "(`dexter config path`)."
    )
    literal = parse_ip_literal(host)
    if literal is not None:
        reason = blocked_reason(literal)
        if reason is not None:
            raise BlockedURL(f"Refused {url}: {host} is a {reason} address.{hint}")
        return None
    if _NUMBERISH.match(host.rsplit(".", 1)[-1]):
        # Ends in a number but is no valid address (e.g. out of range): browsers treat such a
        # host as IPv4 and resolvers disagree on it, so refuse rather than guess.
        raise BlockedURL(f"Refused {url}: {host} is an ambiguous numeric host.")
    if host == "localhost" or host.endswith(".localhost"):
        raise BlockedURL(f"Refused {url}: {host} is a loopback name.{hint}")
    if not resolve:
        return None
    lookup = resolver or system_resolver
    try:
        addresses = await lookup(host, port or (443 if scheme == "https" else 80))
    except (OSError, UnicodeError) as exc:
        raise BlockedURL(f"Could not resolve {host}: {exc}.") from None
    if not addresses:
        raise BlockedURL(f"Could not resolve {host}: no addresses.")
    for raw in addresses:
        ip = parse_ip_literal(raw)
        if ip is None:
            raise BlockedURL(f"Refused {url}: {host} resolved to an unreadable address {raw!r}.")
        reason = blocked_reason(ip)
        if reason is not None:
            raise BlockedURL(f"Refused {url}: {host} resolves to {ip}, a {reason} address.{hint}")
    return [str(parse_ip_literal(raw)) for raw in addresses]


def pinned_request(
    url: str, vetted: list[str] | None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """Connect to the address that was checked, not to a fresh DNS answer.

    The URL's host becomes the vetted IP; the Host header and (for https) the TLS server name
    stay the original host, so virtual hosting and certificate checks work as before.
    """
    if not vetted:
        return url, {}, {}
    parts = urlsplit(url)
    host = parts.hostname or ""
    address = vetted[0]
    literal = f"[{address}]" if ":" in address else address
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    target = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    host_header = f"{host}:{parts.port}" if parts.port else host
    extensions: dict[str, Any] = {"sni_hostname": host} if parts.scheme == "https" else {}
    return target, {"Host": host_header}, extensions
