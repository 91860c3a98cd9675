"""The log's checkpoint keys, from settings: LOG_SIGNING_KEY (through core.keyring) and LOG_ORIGIN."""

import functools

from django.conf import settings

from core.keyring import log_signing_seeds
from transparency import note


def log_signers() -> list[note.NoteSigner]:
    """The log's two keys (Ed25519, then ML-DSA-65), named by the origin. Raises ValueError for a bad origin."""
    ed25519_seed, ml_dsa_seed = log_signing_seeds()
    return _signers(note.check_key_name(settings.LOG_ORIGIN), ed25519_seed, ml_dsa_seed)


@functools.cache
def _signers(origin: str, ed25519_seed: bytes, ml_dsa_seed: bytes) -> list[note.NoteSigner]:
    # Loading an ML-DSA-65 key expands it from its seed: once a process, not once a checkpoint.
    return [note.ed25519_signer(origin, ed25519_seed), note.ml_dsa_65_signer(origin, ml_dsa_seed)]
