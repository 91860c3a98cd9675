"""A log entry: the canonical bytes of one record, and entry bundles of them (c2sp.org/tlog-tiles).

The entry is the RFC 8785 canonical JSON of the record as anyone can fetch it (GET /v1/records/:id):
what was signed, the signature, the key and when, so a monitor can check each one on its own.

This module must not import Django.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime

from record_format.payload import SIGNED_FIELDS
from record_format.times import iso_timestamp

MAX_ENTRY_BYTES = 0xFFFF  # entry bundles prefix each entry with a big-endian uint16 length


def entry_bytes(*, record_id: str, signed_payload: dict[str, str], signature: bytes, kid: str,
                signed_at: datetime) -> bytes:
    """The canonical JSON the leaf hash covers: the record id, the signed payload's fields, the signature
    (base64), kid and signed_at. Raises TypeError for another payload, ValueError if it outgrows a bundle."""
    if sorted(signed_payload) != sorted(SIGNED_FIELDS):
        raise TypeError(f"the signed payload is exactly {', '.join(SIGNED_FIELDS)}")
    fields = {"record_id": record_id, **signed_payload, "signature": base64.b64encode(signature).decode(),
              "kid": kid, "signed_at": iso_timestamp(signed_at)}
    # RFC 8785 for an object of strings under ASCII keys is exactly this: keys sorted, no whitespace,
    # only `"`, `\\` and controls escaped (lowercase \u00xx), UTF-8. canonical_json.canonicalize gives the
    # same bytes (tests/transparency/test_note.py checks it) but walks strings character by character,
    # too slow for the sequencer's budget (docs/performance.md, "Figures behind code comments").
    entry = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    if len(entry) > MAX_ENTRY_BYTES:
        raise ValueError(f"a log entry is at most {MAX_ENTRY_BYTES} bytes")
    return entry


def entry_bundle(entries: list[bytes]) -> bytes:
    """Entries, each prefixed by its length as a big-endian uint16."""
    return b"".join(len(entry).to_bytes(2, "big") + entry for entry in entries)


def split_bundle(bundle: bytes) -> list[bytes]:
    """The entries of a bundle. Raises ValueError if it is truncated."""
    entries, offset = [], 0
    while offset < len(bundle):
        if offset + 2 > len(bundle):
            raise ValueError("truncated entry bundle")
        length = int.from_bytes(bundle[offset:offset + 2], "big")
        if offset + 2 + length > len(bundle):
            raise ValueError("truncated entry bundle")
        entries.append(bundle[offset + 2:offset + 2 + length])
        offset += 2 + length
    return entries
