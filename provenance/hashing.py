"""Content hashes in the self-describing form ``sha3-256:<64 lowercase hex>``.

This module must not import Django.
"""

from __future__ import annotations

import hashlib
import re

CONTENT_HASH_PREFIX = "sha3-256:"
# Kept as the plain, portable pattern (usable in OpenAPI schemas too).  Note that
# ``re.match`` lets ``$`` match before a trailing newline: use is_content_hash()
# or CONTENT_HASH_RE.fullmatch() when validating untrusted input.
CONTENT_HASH_RE = re.compile(r"^sha3-256:[0-9a-f]{64}$")


def content_hash_of(data: bytes) -> str:
    """Return ``"sha3-256:" + hex(SHA3-256(data))`` for the given content bytes."""
    return CONTENT_HASH_PREFIX + hashlib.sha3_256(data).hexdigest()


def content_hash_of_parts(parts: list[bytes | memoryview]) -> str:
    """`content_hash_of` the parts joined, without joining them."""
    digest = hashlib.sha3_256()
    for part in parts:
        digest.update(part)
    return CONTENT_HASH_PREFIX + digest.hexdigest()


def is_content_hash(value: object) -> bool:
    """Return True iff ``value`` is a str in the exact ``sha3-256:<64 lowercase hex>`` form."""
    return isinstance(value, str) and CONTENT_HASH_RE.fullmatch(value) is not None
