"""The signed payload: `record_format.payload`, shared with the client package, by its old name."""

from record_format.payload import SIGNED_FIELDS, signed_payload_bytes

__all__ = ["SIGNED_FIELDS", "signed_payload_bytes"]
