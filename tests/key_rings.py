"""Key-ring test helpers: secrets for the rings, and blobs written as releases before key rings wrote them."""

import os

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from core.hkdf import derive_key
from core.keyring import private_key_sealing_ring, webhook_secret_sealing_ring
from core.sealing import sealed_key_id, unseal
from generators.models import GeneratorKey
from webhooks.models import WebhookEndpoint
from webhooks.services import endpoints_snapshot_refresh

OLD_SECRET = "an-old-key-encryption-secret-0123456789"
NEW_SECRET = "a-new-key-encryption-secret-0123456789"
ROTATED = f"k2:{NEW_SECRET},{OLD_SECRET}"  # the new key added in front of the plain (legacy) one
NEW_ONLY = f"k2:{NEW_SECRET}"  # the old key removed


def _release_1_blob(secret: bytes, purpose: str, associated_data: bytes) -> bytes:
    """0x01 || nonce || AES-256-GCM under the key derived from OLD_SECRET, AD 0x01 || associated data."""
    nonce = os.urandom(12)
    kek = derive_key(OLD_SECRET, purpose)
    return b"\x01" + nonce + AESGCM(kek).encrypt(nonce, secret, b"\x01" + associated_data)


def make_release_1_private_key(key: GeneratorKey) -> None:
    """Rewrite `key`'s sealed seed as a release before key rings sealed it under OLD_SECRET (no key id)."""
    context = f"generator-key:{key.generator_id}:{key.kid}".encode()
    seed = unseal(bytes(key.encrypted_private_key), private_key_sealing_ring().keys, associated_data=context)
    GeneratorKey.objects.filter(pk=key.pk).update(
        encrypted_private_key=_release_1_blob(seed, "generator-private-keys", context))


def make_release_1_webhook_secret(endpoint: WebhookEndpoint) -> None:
    """Rewrite `endpoint`'s sealed secret (and its organization's snapshot) as a release before key rings."""
    context = f"webhook-secret:{endpoint.pk}".encode()
    secret = unseal(bytes(endpoint.encrypted_secret), webhook_secret_sealing_ring().keys, associated_data=context)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        encrypted_secret=_release_1_blob(secret, "webhook-secrets", context))
    endpoints_snapshot_refresh(endpoint.org_id)


def private_key_ids() -> list[str]:
    return sorted(sealed_key_id(bytes(blob)) for blob in GeneratorKey.objects.filter(
        encrypted_private_key__isnull=False).values_list("encrypted_private_key", flat=True))


def webhook_secret_ids() -> list[str]:
    return sorted(sealed_key_id(bytes(blob)) for blob in WebhookEndpoint.objects.values_list(
        "encrypted_secret", flat=True))
