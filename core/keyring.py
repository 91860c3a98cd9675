"""Per-purpose secret keys derived from the settings, so no two features share a key.

KEY_ENCRYPTION_KEY, SECRET_ENCRYPTION_KEY and TOKEN_SIGNING_KEY are key rings (core/secret_ring.py:
`id:secret` entries, newest first); each ring key is derived per purpose, so two purposes sealed under one
ring share ids but never keys. KEY_ENCRYPTION_KEY seals private keys (only the process that holds the
keys has it: the signer service, or a deployment without one); SECRET_ENCRYPTION_KEY seals the secrets the
web process reads itself and falls back to KEY_ENCRYPTION_KEY. Each falls back to SECRET_KEY in development
(a ring of one `legacy` key); with DEBUG off, a process without one cannot seal or unseal what it seals
(KeyUnavailable), never falling back.
"""

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from django.conf import settings

from core.errors import KeyUnavailable
from core.hkdf import derive_key
from core.secret_ring import LEGACY_KEY_ID, RingEntry, read_key_encryption_key, read_token_signing_key

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SealingRing:
    """The AES-256-GCM keys of one purpose by ring id; `newest_id` seals new data."""

    newest_id: str
    keys: Mapping[str, bytes]

    @property
    def newest_key(self) -> bytes:
        return self.keys[self.newest_id]


@functools.cache
def _derived(secret: str, purpose: str) -> bytes:
    return derive_key(secret, purpose)


def jwt_signing_key() -> str:
    return _derived(settings.SECRET_KEY, "session-jwt").hex()


def key_encryption_ring() -> tuple[RingEntry, ...]:
    """KEY_ENCRYPTION_KEY as a ring, newest first (SECRET_KEY as the one `legacy` key when unset in
    development). Raises KeyUnavailable in a production process that holds no keys (a signer holds them)."""
    _require_held("KEY_ENCRYPTION_KEY", settings.KEY_ENCRYPTION_KEY)
    return _ring(read_key_encryption_key, settings.KEY_ENCRYPTION_KEY, settings.SECRET_KEY)


def holds_private_keys() -> bool:
    """Whether this process can unseal private keys: it has KEY_ENCRYPTION_KEY, or it is a development one."""
    return bool(settings.KEY_ENCRYPTION_KEY) or settings.DEVELOPMENT_KEY_FALLBACK


def secret_encryption_ring() -> tuple[RingEntry, ...]:
    """SECRET_ENCRYPTION_KEY as a ring, else KEY_ENCRYPTION_KEY's (one configuration for a deployment without
    a signer service), else SECRET_KEY as the one `legacy` key in development."""
    if settings.SECRET_ENCRYPTION_KEY:
        return _ring(read_key_encryption_key, settings.SECRET_ENCRYPTION_KEY, settings.SECRET_KEY)
    return key_encryption_ring()


def token_signing_ring() -> tuple[RingEntry, ...]:
    """TOKEN_SIGNING_KEY as a ring, newest first (SECRET_KEY as the one `legacy` key when unset)."""
    return _ring(read_token_signing_key, settings.TOKEN_SIGNING_KEY, settings.SECRET_KEY)


def private_key_sealing_ring() -> SealingRing:
    """The keys that seal generators' private keys (HKDF label `generator-private-keys`)."""
    return _sealing_ring(key_encryption_ring(), "generator-private-keys")


def webhook_secret_sealing_ring() -> SealingRing:
    """The keys that seal webhook endpoints' signing secrets (HKDF label `webhook-secrets`)."""
    return _sealing_ring(secret_encryption_ring(), "webhook-secrets")


def one_time_secret_sealing_ring() -> SealingRing:
    """The keys that seal a new secret in the dashboard's session until its one showing (HKDF label
    `dashboard-one-time-secrets`)."""
    return _sealing_ring(secret_encryption_ring(), "dashboard-one-time-secrets")


def token_mac_keys() -> list[bytes]:
    """Keys that authenticate `svc_` tokens, newest first: the first one mints."""
    return [_derived(entry.secret, "svc-token") for entry in token_signing_ring()]


def log_signing_seeds() -> tuple[bytes, bytes]:
    """The transparency log's Ed25519 seed and ML-DSA-65 seed (32 bytes each). Raises KeyUnavailable in a
    production process that holds no keys (a signer holds them)."""
    _require_held("LOG_SIGNING_KEY", settings.LOG_SIGNING_KEY)
    secret = settings.LOG_SIGNING_KEY or settings.SECRET_KEY
    return _derived(secret, "log-checkpoint-ed25519"), _derived(secret, "log-checkpoint-ml-dsa-65")


def _require_held(name: str, value: str) -> None:
    # Settings refuse a production process without the key unless a signer service holds it: such a process
    # reaching here is asking for what it must not have, never to fall back to SECRET_KEY.
    if not value and not settings.DEVELOPMENT_KEY_FALLBACK:
        logger.error("this process holds no %s (the signer service holds the keys): a key was asked for here", name)
        raise KeyUnavailable()


@functools.cache
def _ring(read: Callable[[str], tuple[RingEntry, ...]], value: str, fallback: str) -> tuple[RingEntry, ...]:
    if not value:  # development only (settings refuse it with DEBUG off): SECRET_KEY as it is, not parsed
        return (RingEntry(LEGACY_KEY_ID, fallback),)
    return read(value)


@functools.cache
def _sealing_ring(ring: tuple[RingEntry, ...], purpose: str) -> SealingRing:
    return SealingRing(newest_id=ring[0].key_id,
                       keys={entry.key_id: _derived(entry.secret, purpose) for entry in ring})


def signer_secret() -> bytes:
    """The secret web workers and the signer service authenticate each other with (settings.SIGNER_SECRET,
    else derived from SECRET_KEY: one deployment secret fewer to set where both run from one configuration)."""
    explicit = getattr(settings, "SIGNER_SECRET", "")
    return _derived(explicit or settings.SECRET_KEY, "signer")  # cached: every request to the signer asks
