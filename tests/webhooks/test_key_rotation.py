"""Webhook secrets across a KEY_ENCRYPTION_KEY rotation: deliveries stay signed with the endpoint's own
secret before, during and after `reseal_secrets`, and after the old key is removed."""

import io

import pytest
from django.core.management import call_command

from tests import factories
from tests.key_rings import NEW_ONLY, OLD_SECRET, ROTATED, make_release_1_webhook_secret, webhook_secret_ids

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 1.5
    settings.KEY_ENCRYPTION_KEY = OLD_SECRET


def _record(key_client, org, generator, seed, n):
    body = factories.record_body(generator=generator, seed=seed, content=f"content {n}".encode())
    assert key_client(org).post("/v1/records", body, format="json").status_code == 201


def test_deliveries_keep_their_signature_through_a_rotation(settings, org, receiver, key_client):
    endpoint, secret = factories.make_webhook(org=org, url=receiver.url("/hook"), events=["record.created"])
    receiver.expect_secret("/hook", secret)  # a wrong signature is answered 400 and recorded as not ok
    make_release_1_webhook_secret(endpoint)
    generator, seed = factories.make_client_generator(org=org)
    settings.KEY_ENCRYPTION_KEY = ROTATED
    _record(key_client, org, generator, seed, 1)  # the release-1 blob, read with the legacy key
    call_command("reseal_secrets", stdout=io.StringIO())
    assert webhook_secret_ids() == ["k2"]
    settings.KEY_ENCRYPTION_KEY = NEW_ONLY
    _record(key_client, org, generator, seed, 2)  # the resealed blob, the old key gone
    received = receiver.received("/hook")
    assert len(received) == 2 and all(request.signature_ok for request in received)
