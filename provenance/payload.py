"""The exact bytes that a provenance signature covers.

This module must not import Django.
"""

from __future__ import annotations

from provenance.canonical_json import canonicalize


def signed_payload_bytes(*, content_hash: str, generator_id: str, model: str, watermark_id: str) -> bytes:
    """Return the RFC 8785 canonical JSON of the four signed fields; raises TypeError for non-str values."""
    fields = {
        "content_hash": content_hash,
        "generator_id": generator_id,
        "model": model,
        "watermark_id": watermark_id,
    }
    for name, value in fields.items():
        # Only strings: a UUID or int would have several plausible JSON spellings,
        # and a signature must cover exactly one.
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return canonicalize(fields)
