"""ML-DSA-65 primitives: `record_format.crypto`, shared with the client package, by its old name."""

from record_format.crypto import (
    ALGORITHM,
    KEY_ID_HEX_CHARS,
    PUBLIC_KEY_BYTES,
    SEED_BYTES,
    SIGNATURE_BYTES,
    generate_keypair,
    is_valid_public_key,
    key_id,
    private_key_from_seed,
    public_key_from_seed,
    sign,
    verify,
)

__all__ = ["ALGORITHM", "KEY_ID_HEX_CHARS", "PUBLIC_KEY_BYTES", "SEED_BYTES", "SIGNATURE_BYTES", "generate_keypair",
           "is_valid_public_key", "key_id", "private_key_from_seed", "public_key_from_seed", "sign", "verify"]
