"""HKDF-SHA256: independent 32-byte keys, one per purpose, from one configured secret.

The ground floor of the key handling (`core.keyring` derives every per-purpose key with it), so it
lives in core and imports no app. Pure: no Django.
"""

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

DERIVED_KEY_BYTES = 32

# A fixed, application-specific HKDF salt: the configured secrets are not uniformly
# random strings, and the salt keeps our derivations apart from any other HKDF use.
_HKDF_SALT = b"provenance-service/derive-key/v1"


def derive_key(secret: str, purpose: str) -> bytes:
    """Derive an independent 32-byte key for ``purpose`` from a configured secret (HKDF-SHA256).

    Raises ValueError if ``secret`` or ``purpose`` is empty.
    """
    if not secret:
        raise ValueError("derive_key needs a non-empty secret")
    if not purpose:
        raise ValueError("derive_key needs a non-empty purpose")
    hkdf = HKDF(algorithm=hashes.SHA256(), length=DERIVED_KEY_BYTES, salt=_HKDF_SALT, info=purpose.encode())
    return hkdf.derive(secret.encode())
