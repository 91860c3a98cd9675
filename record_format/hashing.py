"""Content hashes in the self-describing form ``sha3-256:<64 lowercase hex>``.

`content_hash_of_file` is the rule of addendum 4 as the service applies it: SHA3-256 over what the file's
codec says `content_hash` covers (`hashed_parts`: the file without the token container, and without a C2PA
store), or over the raw bytes when no codec reads the file. Signing, verification and the client package
all call it (or `content_hash_of_media` on a file already parsed), so they cannot disagree.

This module must not import Django.
"""

from __future__ import annotations

import hashlib
import re

from media_codecs import CodecError, Media, MediaTooLarge, open_media

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


def content_hash_of_media(media: Media) -> str:
    """The content hash of a parsed file: its codec's `hashed_parts`. Raises CodecError for malformed media."""
    return content_hash_of_parts(media.codec.hashed_parts(media))


def content_hash_of_file(data: bytes) -> str:
    """The content hash of a file as verification computes it; the raw bytes' hash when no codec reads it.

    Raises MediaTooLarge when the file passes a codec's limits (the service refuses to verify it).
    """
    try:
        media = open_media(data)
    except MediaTooLarge:
        raise
    except CodecError:
        media = None
    return content_hash_of_opened(data, media)


def content_hash_of_opened(data: bytes, media: Media | None) -> str:
    """`content_hash_of_file` of `data` already parsed into `media` (None: no codec reads it)."""
    if media is not None:
        try:
            return content_hash_of_media(media)
        except CodecError:
            pass  # read by a codec but not hashable as its format: the raw bytes, as for unknown content
    return content_hash_of(data)


def is_content_hash(value: object) -> bool:
    """Return True iff ``value`` is a str in the exact ``sha3-256:<64 lowercase hex>`` form."""
    return isinstance(value, str) and CONTENT_HASH_RE.fullmatch(value) is not None
