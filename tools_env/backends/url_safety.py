"""Which URLs a model-chosen fetch (visit, image URLs) may reach.

Only ``http`` and ``https`` URLs whose host resolves exclusively to public (globally routable) addresses are
allowed. Every address ``getaddrinfo`` returns is checked, so a name with one private record is refused, and
callers check again on every redirect hop. Refused classes: loopback, private (RFC 1918, ULA), link-local,
multicast, unspecified, reserved, shared/CGNAT, IPv4-mapped forms of all of these, and the cloud metadata
endpoints (refused even when private addresses are allowed for tests).

Known limit: the check resolves the name, then the HTTP client resolves it again to connect, so a DNS server
that answers differently the second time (rebinding) is not caught. Run fetches from a network without
access to internal services when that matters.

Example:
    >>> check_url("ftp://example.com/x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    opensearch_vl.errors.ToolError: URL 'ftp://example.com/x' refused: scheme 'ftp' is not allowed; ...
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from opensearch_vl.errors import ToolError

__all__ = ["check_url", "classify_address", "CheckedURL", "METADATA_ADDRESSES", "METADATA_HOSTNAMES"]

ALLOWED_SCHEMES = ("http", "https")
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254", "192.0.0.192")
)
"""AWS/GCP/Azure/OpenStack (169.254.169.254), ECS task metadata, Alibaba, AWS IPv6, Oracle."""
METADATA_HOSTNAMES = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"}
)

Resolver = Callable[..., list]


@dataclass(frozen=True)
class CheckedURL:
    """A URL that passed the policy, with the addresses its host resolved to."""

    url: str
    host: str
    addresses: tuple[str, ...]


def classify_address(address: str) -> str | None:
    """Why ``address`` may not be fetched (``"loopback"``, ``"private"``, …), or ``None`` if it is public.

    Example:
        >>> classify_address("10.1.2.3"), classify_address("8.8.8.8")
        ('private', None)
    """
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is not None:
            reason = classify_address(str(mapped))
            return f"{reason} (IPv4 inside IPv6)" if reason else None
    if ip in METADATA_ADDRESSES:
        return "cloud metadata"
    for reason in ("loopback", "unspecified", "link_local", "multicast", "reserved", "private"):
        if getattr(ip, f"is_{reason}"):
            return reason.replace("_", "-")
    if not ip.is_global:
        return "not globally routable"
    return None


def check_url(
    url: str, *, allow_private: bool = False, resolver: Resolver = socket.getaddrinfo, resolve: bool = True
) -> CheckedURL:
    """Return the checked URL, or raise a ``bad_arguments`` tool error naming the rule it broke.

    Args:
        url: the URL the model asked for (or a redirect target).
        allow_private: skip the address classes (tests against 127.0.0.1); metadata endpoints stay refused.
        resolver: ``getaddrinfo``-compatible function.
        resolve: ``False`` when a remote service fetches the URL (Jina, Lens): only the scheme, metadata host
            names and literal IP addresses are checked, since the name is resolved on the service's side.
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ToolError("bad_arguments", f"URL {url!r} refused: malformed ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise ToolError(
            "bad_arguments",
            f"URL {url!r} refused: scheme {scheme or '(none)'!r} is not allowed; use http or https",
        )
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise ToolError("bad_arguments", f"URL {url!r} refused: no host name")
    if host in METADATA_HOSTNAMES:
        raise ToolError("bad_arguments", f"URL {url!r} refused: {host} is a cloud metadata endpoint")
    if not resolve:
        try:
            addresses: tuple[str, ...] = (str(ipaddress.ip_address(host)),)
        except ValueError:
            return CheckedURL(url=url.strip(), host=host, addresses=())
        return _check_addresses(url, host, addresses, allow_private)
    try:
        infos = resolver(host, port or (443 if scheme == "https" else 80), type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise ToolError("not_found", f"URL {url!r}: host {host!r} does not resolve ({exc})") from exc
    addresses = tuple(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise ToolError("not_found", f"URL {url!r}: host {host!r} has no addresses")
    return _check_addresses(url, host, addresses, allow_private)


def _check_addresses(url: str, host: str, addresses: tuple[str, ...], allow_private: bool) -> CheckedURL:
    for address in addresses:
        reason = classify_address(address)
        if reason is None:
            continue
        if reason.startswith("cloud metadata") or not allow_private:
            raise ToolError(
                "bad_arguments",
                f"URL {url!r} refused: {host} resolves to {address}, a {reason} address; only public "
                "http(s) addresses may be fetched (tests may set allow_private_urls: true)",
            )
    return CheckedURL(url=url.strip(), host=host, addresses=addresses)
