"""Where a webhook may be delivered: the SSRF guard (addendum 7).

A target URL is HTTPS; its host is resolved once and every address it resolves to must be public
(not loopback, private, link-local, multicast, unspecified or reserved, also when written as an
IPv4-mapped or 6to4 IPv6 address). The checked addresses are returned so delivery can connect to
exactly them: resolving again at delivery time would let a DNS answer change in between (rebinding).
`allow_private` (the WEBHOOK_ALLOW_PRIVATE_TARGETS setting, passed in) lifts the address check and
allows `http://`, for tests and local development only.

Pure module: no Django.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_URL_LENGTH = 2048
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(ValueError):
    """The URL may not receive webhooks; the message says why, for the caller."""


@dataclass(frozen=True)
class Target:
    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]  # every address the host resolved to, all checked


def target_check(url: str, *, allow_private: bool) -> Target:
    """The checked target of `url`. Raises TargetRefused for a bad URL, scheme, host or address."""
    scheme, host, port = _parts(url, allow_private=allow_private)
    addresses = _resolve(host, port)
    if not allow_private:
        for address in addresses:
            if not is_public_address(ipaddress.ip_address(address)):
                raise TargetRefused(f"{host} resolves to {address}, which is not a public address.")
    return Target(url=url, scheme=scheme, host=host, port=port, addresses=addresses)


def is_public_address(ip: IPAddress) -> bool:
    """Whether `ip`, and any IPv4 address it embeds, is a public unicast address."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d reaches a.b.c.d: judge that address alone
            return is_public_address(ip.ipv4_mapped)
        if ip.sixtofour is not None and not is_public_address(ip.sixtofour):
            return False
    refused = (ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_multicast or ip.is_unspecified
               or ip.is_reserved or getattr(ip, "is_site_local", False))
    return ip.is_global and not refused


def _parts(url: str, *, allow_private: bool) -> tuple[str, str, int]:
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise TargetRefused(f"Give a URL of at most {MAX_URL_LENGTH} characters.")
    if not url.isascii() or any(ch <= " " or ch == "\x7f" for ch in url):
        # It becomes a request line: spaces, line breaks and other bytes must arrive percent-encoded.
        raise TargetRefused("Percent-encode spaces, control and non-ASCII characters in the URL.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise TargetRefused("This is not a valid URL.") from None
    allowed = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in allowed:
        raise TargetRefused("The URL must use https://.")
    if not parts.hostname:
        raise TargetRefused("The URL has no host.")
    if parts.username is not None or parts.password is not None:
        raise TargetRefused("The URL may not carry credentials; authenticate deliveries by their signature.")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _resolve(host: str, port: int) -> tuple[str, ...]:
    try:  # a literal address (urlsplit already dropped the brackets of an IPv6 one) needs no lookup
        return (str(ipaddress.ip_address(host)),)
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise TargetRefused(f"{host} does not resolve.") from None
    # Drop an IPv6 zone ("fe80::1%eth0"): ip_address() refuses it on older Pythons.
    addresses = tuple(dict.fromkeys(info[4][0].split("%", 1)[0] for info in infos))
    if not addresses:
        raise TargetRefused(f"{host} does not resolve.")
    return addresses
