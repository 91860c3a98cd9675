"""manage.py reseal_secrets: every generator private key and webhook secret moves to the newest
KEY_ENCRYPTION_KEY id, in batches, idempotently; --dry-run writes nothing; the count says when an old
id can be removed, and after removing it everything still unseals."""

import io
import os

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.core.management import CommandError, call_command

from accounts.models import Organization
from core.hkdf import derive_key
from generators.models import GeneratorKey
from generators.selectors import current_key
from generators.services import generator_key_reseal, generator_signing_seed
from record_format import crypto
from tests import factories
from tests.key_rings import (
    NEW_ONLY,
    OLD_SECRET,
    ROTATED,
    make_release_1_private_key,
    make_release_1_webhook_secret,
    private_key_ids,
    webhook_secret_ids,
)
from webhooks.models import WebhookEndpoint
from webhooks.services import active_endpoints, webhook_secret

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _deployed_before_rings(settings):
    settings.KEY_ENCRYPTION_KEY = OLD_SECRET


@pytest.fixture
def sealed(org, key_client):
    """Two generators (one with a retired key; one sealed as releases before rings did) and two webhook
    endpoints (one sealed as before rings): 4 private keys, 2 secrets. Returns the plaintexts by row."""
    org.plan = "growth"
    org.save(update_fields=["plan"])
    first, second = factories.make_generator(org=org, name="a"), factories.make_generator(org=org, name="b")
    assert key_client(org).post(f"/v1/generators/{first.pk}/rotate", {}, format="json").status_code == 200
    make_release_1_private_key(current_key(generator_id=second.pk))
    (one, one_secret), (two, two_secret) = factories.make_webhook(org=org), factories.make_webhook(org=org)
    make_release_1_webhook_secret(two)
    seeds = {key.pk: generator_signing_seed(key) for key in GeneratorKey.objects.all()}
    return seeds, {one.pk: one_secret, two.pk: two_secret}


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("reseal_secrets", *args, stdout=out)
    return out.getvalue()


def _blobs() -> list[bytes]:
    return ([bytes(b) for b in GeneratorKey.objects.order_by("pk").values_list("encrypted_private_key", flat=True)]
            + [bytes(b) for b in WebhookEndpoint.objects.order_by("pk").values_list("encrypted_secret", flat=True)])


def _assert_plaintexts_unchanged(seeds: dict, secrets: dict) -> None:
    for key in GeneratorKey.objects.all():
        assert generator_signing_seed(key) == seeds[key.pk]
        assert crypto.public_key_from_seed(seeds[key.pk]) == bytes(key.public_key)
    for endpoint in WebhookEndpoint.objects.all():
        assert webhook_secret(endpoint) == secrets[endpoint.pk]


def test_reseal_moves_everything_to_the_newest_id_and_then_the_old_key_can_go(settings, sealed, org):
    seeds, secrets = sealed
    settings.KEY_ENCRYPTION_KEY = ROTATED
    output = _run("--batch-size", "1")
    assert "KEY_ENCRYPTION_KEY: newest id k2; configured k2, legacy" in output
    assert "generator private keys: 3 resealed, 0 already under k2, 0 unreadable" in output
    assert "webhook secrets: 2 resealed, 0 already under k2, 0 unreadable" in output
    assert "still under other ids: 0; every id but k2 can be removed" in output
    assert private_key_ids() == ["k2"] * 3 and webhook_secret_ids() == ["k2"] * 2
    settings.KEY_ENCRYPTION_KEY = NEW_ONLY  # the old key removed
    _assert_plaintexts_unchanged(seeds, secrets)
    org.refresh_from_db()  # deliveries read the organization's snapshot: resealed with its endpoints
    assert sorted(webhook_secret(endpoint) for endpoint in active_endpoints(org)) == sorted(secrets.values())


def test_a_second_run_finds_nothing_to_do(settings, sealed):
    settings.KEY_ENCRYPTION_KEY = ROTATED
    _run()
    before = _blobs()
    output = _run()
    assert "generator private keys: 0 resealed, 3 already under k2" in output
    assert "webhook secrets: 0 resealed, 2 already under k2" in output
    assert _blobs() == before


def test_an_interrupted_run_is_finished_by_the_next(settings, sealed):
    seeds, secrets = sealed
    settings.KEY_ENCRYPTION_KEY = ROTATED
    done = GeneratorKey.objects.order_by("pk").first()
    assert generator_key_reseal(key_pk=done.pk) is True  # a run that stopped after its first row
    output = _run()
    assert "generator private keys: 2 resealed, 1 already under k2" in output
    assert private_key_ids() == ["k2"] * 3
    settings.KEY_ENCRYPTION_KEY = NEW_ONLY
    _assert_plaintexts_unchanged(seeds, secrets)


def test_dry_run_counts_and_changes_nothing(settings, sealed):
    settings.KEY_ENCRYPTION_KEY = ROTATED
    before = _blobs()
    snapshot = Organization.objects.values_list("active_webhooks", flat=True).get()
    output = _run("--dry-run")
    assert "generator private keys: 3 would reseal, 0 already under k2, 0 unreadable" in output
    assert "webhook secrets: 2 would reseal, 0 already under k2" in output
    assert "still under other ids: 5 (generator private keys (legacy: 3); webhook secrets (legacy: 2))" in output
    assert _blobs() == before
    assert Organization.objects.values_list("active_webhooks", flat=True).get() == snapshot


def test_a_secret_under_an_unknown_id_is_reported_and_left_while_the_rest_moves(settings, sealed):
    seeds, _ = sealed
    stray = GeneratorKey.objects.order_by("pk").first()
    nonce, context = os.urandom(12), f"generator-key:{stray.generator_id}:{stray.kid}".encode()
    header = b"\x02\x02k0"
    blob = header + nonce + AESGCM(derive_key("gone", "generator-private-keys")).encrypt(
        nonce, seeds[stray.pk], header + context)
    GeneratorKey.objects.filter(pk=stray.pk).update(encrypted_private_key=blob)
    settings.KEY_ENCRYPTION_KEY = ROTATED
    assert "generator private keys: 2 would reseal, 0 already under k2, 1 unreadable (k0: 1)" in _run("--dry-run")
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 sealed secrets do not unseal"):
        call_command("reseal_secrets", stdout=out)
    assert "generator private keys: 2 resealed, 0 already under k2, 1 unreadable (k0: 1)" in out.getvalue()
    assert "still under other ids: 1 (generator private keys (k0: 1))" in out.getvalue()
    assert bytes(GeneratorKey.objects.get(pk=stray.pk).encrypted_private_key) == blob
    assert private_key_ids() == ["k0", "k2", "k2"]


def test_a_tampered_blob_is_reported_unreadable_not_resealed(settings, sealed):
    key = GeneratorKey.objects.order_by("pk").last()
    blob = bytearray(key.encrypted_private_key)
    blob[-3] ^= 0x40
    GeneratorKey.objects.filter(pk=key.pk).update(encrypted_private_key=bytes(blob))
    settings.KEY_ENCRYPTION_KEY = ROTATED
    with pytest.raises(CommandError):
        call_command("reseal_secrets", stdout=io.StringIO())
    assert bytes(GeneratorKey.objects.get(pk=key.pk).encrypted_private_key) == bytes(blob)


def test_with_nothing_sealed_the_run_says_so(settings, db):
    settings.KEY_ENCRYPTION_KEY = ROTATED
    output = _run()
    assert "generator private keys: 0 resealed, 0 already under k2, 0 unreadable" in output
    assert "still under other ids: 0" in output


def test_a_batch_size_below_one_is_refused(db):
    with pytest.raises(CommandError, match="batch-size"):
        _run("--batch-size", "0")
