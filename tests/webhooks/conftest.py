"""Webhook tests run in a Growth organization unless a test builds another, and no test touches real DNS:
every lookup answers a public address unless the test says otherwise with `resolve_to`."""

import socket

import pytest

from tests import factories
from tests.webhooks.receiver import Receiver

PUBLIC_IP = "93.184.216.34"


@pytest.fixture
def org(db):
    return factories.make_org(plan="growth")


@pytest.fixture
def resolve_to(monkeypatch):
    """resolve_to(*addresses): every getaddrinfo answers these addresses; the asked hosts are recorded."""
    asked: list[str] = []

    def install(*addresses: str) -> list[str]:
        def fake(host, port, family=0, type=0, proto=0, flags=0):
            asked.append(host)
            return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                     (a, port, 0, 0) if ":" in a else (a, port)) for a in addresses]

        monkeypatch.setattr(socket, "getaddrinfo", fake)
        return asked

    return install


@pytest.fixture(autouse=True)
def _public_dns(resolve_to):
    resolve_to(PUBLIC_IP)


@pytest.fixture
def receiver():
    """A real HTTP receiver on 127.0.0.1 that records deliveries and checks their signatures."""
    server = Receiver()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def settled():
    """Each request of the test client returns once its deliveries have their outcome logged, as the
    tests read the receiver and the log right after; `settled()` waits for deliveries made outside a
    request. In a server the request returns at once (tests/webhooks/test_isolation.py)."""
    from django.core.signals import request_finished

    from webhooks.delivery import deliveries_settle

    def settle(**_):
        assert deliveries_settle(timeout=120), "deliveries did not settle"

    request_finished.connect(settle, dispatch_uid="tests.webhooks.settled")
    yield settle
    request_finished.disconnect(dispatch_uid="tests.webhooks.settled")
    assert deliveries_settle(timeout=120, release_connection=True), "deliveries did not settle"
