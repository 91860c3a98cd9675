"""webhooks/targets.py: the SSRF guard, without a database or the network (getaddrinfo is faked)."""

import ipaddress

import pytest

from webhooks.targets import TargetRefused, is_public_address, target_check

from .conftest import PUBLIC_IP


def test_a_public_https_url_is_accepted_with_its_checked_address(resolve_to):
    asked = resolve_to(PUBLIC_IP)
    target = target_check("https://hooks.example.com/in?x=1", allow_private=False)
    assert (target.scheme, target.host, target.port, target.addresses) == ("https", "hooks.example.com", 443,
                                                                           (PUBLIC_IP,))
    assert asked == ["hooks.example.com"]  # resolved once


def test_every_resolved_address_must_be_public(resolve_to):
    resolve_to(PUBLIC_IP, "10.1.2.3")
    with pytest.raises(TargetRefused, match=r"10\.1\.2\.3"):
        target_check("https://mixed.example.com/", allow_private=False)


@pytest.mark.parametrize("url", [
    "https://127.0.0.1/", "https://[::1]/", "https://10.0.0.1/", "https://172.16.5.4/", "https://192.168.1.1/",
    "https://169.254.169.254/latest/meta-data", "https://[::ffff:127.0.0.1]/", "https://[::ffff:10.0.0.1]/",
    "https://0.0.0.0/", "https://[::]/", "https://224.0.0.1/", "https://240.0.0.1/", "https://100.64.0.1/",
    "https://[fe80::1]/", "https://[fc00::1]/", "https://[2002:7f00:1::]/", "https://255.255.255.255/",
])
def test_literal_non_public_addresses_are_refused(url, resolve_to):
    asked = resolve_to(PUBLIC_IP)
    with pytest.raises(TargetRefused):
        target_check(url, allow_private=False)
    assert asked == []  # a literal address is not looked up


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "::ffff:127.0.0.1", "169.254.169.254", "10.0.0.1"])
def test_a_name_resolving_to_a_non_public_address_is_refused(address, resolve_to):
    resolve_to(address)
    with pytest.raises(TargetRefused, match="not a public address"):
        target_check("https://localhost/hook", allow_private=False)


@pytest.mark.parametrize("url", ["http://93.184.216.34/", "ftp://93.184.216.34/", "93.184.216.34/hook", "",
                                 "https:///path", "https://user:pw@93.184.216.34/", "https://93.184.216.34:99999/",
                                 "https://" + "a" * 2050 + ".com/"])
def test_bad_urls_and_schemes_are_refused(url):
    with pytest.raises(TargetRefused):
        target_check(url, allow_private=False)


def test_a_name_that_does_not_resolve_is_refused(monkeypatch):
    import socket

    def fail(*args, **kwargs):
        raise socket.gaierror("no such host")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    with pytest.raises(TargetRefused, match="does not resolve"):
        target_check("https://nowhere.invalid/", allow_private=False)


def test_allow_private_lets_http_and_private_addresses_through(resolve_to):
    resolve_to("127.0.0.1")
    target = target_check("http://localhost:8080/hook", allow_private=True)
    assert (target.port, target.addresses) == (8080, ("127.0.0.1",))
    assert target_check("https://[::1]/", allow_private=True).addresses == ("::1",)


def test_public_addresses_of_both_families_are_public():
    for address in (PUBLIC_IP, "8.8.8.8", "2606:4700:4700::1111", "::ffff:93.184.216.34"):
        assert is_public_address(ipaddress.ip_address(address)), address
