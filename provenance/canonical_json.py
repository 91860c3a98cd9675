"""RFC 8785 canonical JSON: `record_format.canonical_json`, shared with the client package, by its old name."""

from record_format.canonical_json import (
    MAX_SAFE_INTEGER,
    canonicalize,
    serialize_integer,
    serialize_number,
    serialize_string,
)

__all__ = ["MAX_SAFE_INTEGER", "canonicalize", "serialize_integer", "serialize_number", "serialize_string"]
