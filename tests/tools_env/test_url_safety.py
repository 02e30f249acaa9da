"""URL policy for model-chosen fetches: every refused class, the allow switch, and re-checks on redirects."""

from __future__ import annotations

import socket

import pytest
from opensearch_vl.tools_env.backends.http import HttpClient
from opensearch_vl.tools_env.backends.url_safety import check_url, classify_address
from opensearch_vl.tools_env.config import HttpSettings

from opensearch_vl.errors import ToolError

REFUSED = [
    ("file:///etc/passwd", "scheme"),
    ("ftp://example.com/file", "scheme"),
    ("gopher://example.com/", "scheme"),
    ("javascript:alert(1)", "scheme"),
    ("data:text/html,hi", "scheme"),
    ("//example.com/no-scheme", "scheme"),
    ("http:///no-host", "no host"),
    ("http://127.0.0.1/", "loopback"),
    ("http://127.1.2.3:8080/x", "loopback"),
    ("http://localhost/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://10.0.0.1/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://[fc00::1]/", "private"),
    ("http://169.254.1.1/", "link-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://224.0.0.1/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("http://100.100.100.200/", "cloud metadata"),
    ("http://[fd00:ec2::254]/", "cloud metadata"),
    ("http://metadata.google.internal/computeMetadata/v1/", "cloud metadata"),
    ("http://100.64.0.1/", "not globally routable"),
    ("http://[::ffff:127.0.0.1]/", "loopback (IPv4 inside IPv6)"),
    ("http://[::ffff:10.0.0.1]/", "private (IPv4 inside IPv6)"),
    ("http://[2002:7f00:1::]/", "loopback (IPv4 inside IPv6)"),
    ("http://240.0.0.1/", "reserved"),
]


@pytest.mark.parametrize("url,reason", REFUSED)
def test_refused_urls_name_the_rule(url, reason):
    with pytest.raises(ToolError) as info:
        check_url(url)
    assert info.value.category == "bad_arguments"
    assert reason in info.value.message
    assert "refused" in info.value.message


@pytest.mark.parametrize(
    "url", ["http://8.8.8.8/", "https://1.1.1.1:8443/path?q=1", "http://[2606:4700::1111]/"]
)
def test_public_addresses_pass(url):
    checked = check_url(url)
    assert checked.addresses and all(classify_address(a) is None for a in checked.addresses)


def test_every_resolved_address_is_checked():
    def resolver(host, port, type=0):  # one public and one private record
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", port)),
        ]

    with pytest.raises(ToolError, match="10.1.2.3, a private address"):
        check_url("https://mixed.example.com/", resolver=resolver)


def test_unresolvable_host_is_not_found():
    def resolver(host, port, type=0):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(ToolError) as info:
        check_url("https://no-such-host.invalid/", resolver=resolver)
    assert info.value.category == "not_found"


def test_allow_private_opens_loopback_but_never_metadata():
    assert check_url("http://127.0.0.1:9/", allow_private=True).addresses == ("127.0.0.1",)
    with pytest.raises(ToolError, match="cloud metadata"):
        check_url("http://169.254.169.254/", allow_private=True)


def test_loopback_server_refused_by_default(http_server):
    client = HttpClient(HttpSettings(max_attempts=1))
    with pytest.raises(ToolError, match="loopback"):
        client.fetch_public(f"{http_server.base_url}/pages/article.html")
    assert http_server.count("/pages/article.html?never") == 0


@pytest.mark.parametrize(
    "target,reason",
    [
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("file:///etc/passwd", "scheme"),
        ("gopher://127.0.0.1/", "scheme"),
    ],
)
def test_each_redirect_hop_is_checked_again(http_server, target, reason):
    client = HttpClient(HttpSettings(max_attempts=1), allow_private=True)
    with pytest.raises(ToolError, match=reason):
        client.fetch_public(f"{http_server.base_url}/pages/redirect-to?target={target}")


def test_redirect_to_private_refused_when_private_not_allowed():
    """A public first hop that redirects inward is caught at the second check (resolver stands in for DNS)."""
    hops = []

    def resolver(host, port, type=0):
        hops.append(host)
        address = "93.184.216.34" if host == "public.example.com" else "192.168.0.10"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    check_url("http://public.example.com/start", resolver=resolver)
    with pytest.raises(ToolError, match="192.168.0.10, a private address"):
        check_url("http://router.internal/admin", resolver=resolver)
    assert hops == ["public.example.com", "router.internal"]
