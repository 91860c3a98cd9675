"""The exact bytes that a provenance signature covers.

This module must not import Django.
"""

from __future__ import annotations

from record_format.canonical_json import canonicalize

# The object a signature covers, exactly these keys (spec: Signed payload; `phash` is outside it).
# The one list: records check `signed_payload` against it, signing and verification build it from it.
SIGNED_FIELDS = ("content_hash", "generator_id", "model", "watermark_id")


def signed_payload_bytes(**fields: str) -> bytes:
    """Return the RFC 8785 canonical JSON of the signed fields, given by name.

    Raises TypeError unless the names are exactly SIGNED_FIELDS and every value is a str.
    """
    if sorted(fields) != sorted(SIGNED_FIELDS):
        raise TypeError(f"the signed payload is exactly {', '.join(SIGNED_FIELDS)}; got {', '.join(sorted(fields))}")
    for name, value in fields.items():
        # Only strings: a UUID or int would have several plausible JSON spellings,
        # and a signature must cover exactly one.
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return canonicalize(fields)
