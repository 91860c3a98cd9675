"""Content hashes: `record_format.hashing`, shared with the client package, by its old name."""

from record_format.hashing import (
    CONTENT_HASH_PREFIX,
    CONTENT_HASH_RE,
    content_hash_of,
    content_hash_of_file,
    content_hash_of_media,
    content_hash_of_opened,
    content_hash_of_parts,
    is_content_hash,
)

__all__ = ["CONTENT_HASH_PREFIX", "CONTENT_HASH_RE", "content_hash_of", "content_hash_of_file",
           "content_hash_of_media",
           "content_hash_of_opened", "content_hash_of_parts", "is_content_hash"]
