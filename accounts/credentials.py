"""Secrets handed to users (API keys, emailed tokens, 2FA challenges) and their stored digests.

Pure module. Every credential is random with at least 190 bits of entropy, so a plain SHA-256
digest is a safe stored form: the database never holds a usable secret.
"""

import hashlib
import hmac
import secrets
import string
from dataclasses import dataclass

API_KEY_PREFIX = "svc_key_"
_ALPHABET = string.ascii_letters + string.digits
_SECRET_LENGTH = 40  # about 238 bits
LOOKUP_LENGTH = 12


@dataclass(frozen=True)
class NewApiKey:
    key: str  # the full value, shown once
    lookup_id: str
    digest: str
    preview: str


def digest(value: str) -> str:
    """The stored form of a credential: hex SHA-256."""
    return hashlib.sha256(value.encode()).hexdigest()


def digests_match(stored: str, presented: str) -> bool:
    """Constant-time comparison of a stored digest with the digest of a presented credential."""
    return hmac.compare_digest(stored.encode(), digest(presented).encode())


def new_api_key() -> NewApiKey:
    secret = "".join(secrets.choice(_ALPHABET) for _ in range(_SECRET_LENGTH))
    key = API_KEY_PREFIX + secret
    return NewApiKey(key=key, lookup_id=secret[:LOOKUP_LENGTH], digest=digest(key),
                     preview=f"{API_KEY_PREFIX}{secret[:4]}...")


def api_key_lookup_id(key: str) -> str | None:
    """The indexed lookup part of a presented key, or None when it cannot be one of ours."""
    if not key.startswith(API_KEY_PREFIX):
        return None
    secret = key[len(API_KEY_PREFIX):]
    if len(secret) != _SECRET_LENGTH or not secret.isalnum() or not secret.isascii():
        return None
    return secret[:LOOKUP_LENGTH]


def new_url_token() -> str:
    """A random token for links and challenges (URL-safe, 256 bits)."""
    return secrets.token_urlsafe(32)


# Recovery codes: 16 characters of Crockford's base32 (no i, l, o, u), 80 bits, shown in groups of four.
# 80 bits keep a plain SHA-256 digest beyond offline guessing, like the longer secrets above.
RECOVERY_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
RECOVERY_CODE_LENGTH = 16
_RECOVERY_LOOKALIKES = str.maketrans({"i": "1", "l": "1", "o": "0", "-": None, " ": None})


def new_recovery_code() -> str:
    """A random recovery code as shown to the user: `xxxx-xxxx-xxxx-xxxx`."""
    raw = "".join(secrets.choice(RECOVERY_ALPHABET) for _ in range(RECOVERY_CODE_LENGTH))
    return "-".join(raw[i:i + 4] for i in range(0, RECOVERY_CODE_LENGTH, 4))


def normalize_recovery_code(value: str) -> str | None:
    """The canonical form of a typed recovery code (case, dashes, spaces and look-alikes forgiven), or
    None when it cannot be one."""
    canonical = value.strip().lower().translate(_RECOVERY_LOOKALIKES)
    if len(canonical) != RECOVERY_CODE_LENGTH or any(c not in RECOVERY_ALPHABET for c in canonical):
        return None
    return canonical
