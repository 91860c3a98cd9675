"""Per-purpose secret keys derived from the settings, so no two features share a key.

KEY_ENCRYPTION_KEY, TOKEN_SIGNING_KEY and LOG_SIGNING_KEY each fall back to SECRET_KEY in development (settings
refuse that with DEBUG off). TOKEN_SIGNING_KEY may list several comma-separated secrets: the first
mints tokens, all of them verify, so the key can be rotated without invalidating issued tokens.
"""

import functools

from django.conf import settings

from config.hkdf import derive_key


@functools.cache
def _derived(secret: str, purpose: str) -> bytes:
    return derive_key(secret, purpose)


def jwt_signing_key() -> str:
    return _derived(settings.SECRET_KEY, "session-jwt").hex()


def key_encryption_key() -> bytes:
    """The 32-byte AES-256-GCM key that seals generators' private keys."""
    return _derived(settings.KEY_ENCRYPTION_KEY or settings.SECRET_KEY, "generator-private-keys")


def token_mac_keys() -> list[bytes]:
    """Keys that authenticate `svc_` tokens; the first one mints."""
    secrets = [s.strip() for s in (settings.TOKEN_SIGNING_KEY or settings.SECRET_KEY).split(",") if s.strip()]
    return [_derived(secret, "svc-token") for secret in secrets]


def webhook_secret_key() -> bytes:
    """The 32-byte AES-256-GCM key that seals webhook endpoints' signing secrets."""
    return _derived(settings.KEY_ENCRYPTION_KEY or settings.SECRET_KEY, "webhook-secrets")


def log_signing_seeds() -> tuple[bytes, bytes]:
    """The transparency log's Ed25519 seed and ML-DSA-65 seed (32 bytes each)."""
    secret = settings.LOG_SIGNING_KEY or settings.SECRET_KEY
    return _derived(secret, "log-checkpoint-ed25519"), _derived(secret, "log-checkpoint-ml-dsa-65")
