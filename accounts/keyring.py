"""Per-purpose secret keys derived from the settings, so no two features share a key."""

import functools
import hashlib
import hmac

from django.conf import settings


@functools.cache
def _derive(secret: str, purpose: str) -> bytes:
    # HMAC-SHA256 as a KDF over a high-entropy secret (HKDF's extract step with a fixed label).
    return hmac.new(secret.encode(), f"provenance-service/{purpose}".encode(), hashlib.sha256).digest()


def jwt_signing_key() -> str:
    return _derive(settings.SECRET_KEY, "session-jwt").hex()
