"""The log's checkpoint keys: where they are held and where their public parts come from.

Without a signer service, this process derives both keys from LOG_SIGNING_KEY (core.keyring) and signs.
With one (SIGNER_SOCKET), only the signer holds LOG_SIGNING_KEY: it writes the public keys to LogKey rows
when it starts (`log_keys_publish`), web workers publish those, and the sequencer has each checkpoint signed
there (`checkpoint_signers`), where transparency.checkpoint_policy checks it first.
"""

import functools

from django.conf import settings
from django.db import transaction

from core.errors import RETRY_AFTER_UNAVAILABLE, ServiceUnavailable
from core.keyring import log_signing_seeds
from core.signer_client import signature_request, signer_configured
from signer.counting import signature_counted
from transparency import note
from transparency.models import LogKey

ALGORITHMS = ("ed25519", "ml-dsa-65")  # the order of the note's signature lines and of the published keys


def log_signers() -> list[note.NoteSigner]:
    """The log's two keys (Ed25519, then ML-DSA-65), named by the origin, derived here from LOG_SIGNING_KEY.
    Raises ValueError for a bad origin."""
    ed25519_seed, ml_dsa_seed = log_signing_seeds()
    return _signers(note.check_key_name(settings.LOG_ORIGIN), ed25519_seed, ml_dsa_seed)


def published_log_keys() -> list[note.NoteKey]:
    """The public keys checkpoints are signed with, in ALGORITHMS order: the signer's published rows when a
    signer service holds the keys, else this process's. Raises ServiceUnavailable (503) when the signer
    has not published them yet (it does when it starts)."""
    if not signer_configured():
        return [signer.public for signer in log_signers()]
    rows = {row.algorithm: row for row in LogKey.objects.all()}
    if set(rows) != set(ALGORITHMS):
        raise ServiceUnavailable("The signing service has not published the log's keys yet.",
                                 headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})
    return [note.NoteKey(rows[name].name, bytes(rows[name].signature_type), bytes(rows[name].public_key))
            for name in ALGORITHMS]


def log_keys_publish() -> None:
    """Write this process's public log keys to LogKey (the signer service, when it starts): processes without
    LOG_SIGNING_KEY publish these and notice a rotation by them."""
    with transaction.atomic():
        LogKey.objects.exclude(algorithm__in=ALGORITHMS).delete()
        for algorithm, signer in zip(ALGORITHMS, log_signers(), strict=True):
            LogKey.objects.update_or_create(algorithm=algorithm, defaults={
                "name": signer.name, "signature_type": signer.type, "public_key": signer.public_key})


def checkpoint_signers() -> list[note.TextSigner]:
    """What signs a checkpoint note here: the keys themselves, or with a signer service, each published key
    through the signer (a `sign` of purpose `checkpoint`)."""
    if not signer_configured():
        return [_CountedKey(signer, algorithm) for algorithm, signer in zip(ALGORITHMS, log_signers(), strict=True)]
    return [_SignerServiceKey(key, algorithm) for algorithm, key in zip(ALGORITHMS, published_log_keys(), strict=True)]


class _CountedKey:
    """A log key held here (no signer service): signs and counts, as the signer counts what it signs."""

    def __init__(self, signer: note.NoteSigner, algorithm: str):
        self.name, self.key_id, self._signer, self._algorithm = signer.name, signer.key_id, signer, algorithm

    def sign(self, text: bytes) -> bytes:
        signature = self._signer.sign(text)
        signature_counted(org_id="", generator_id=None, purpose="checkpoint", algorithm=self._algorithm)
        return signature


class _SignerServiceKey:
    """A log key the signer service holds: signs a note text by asking it. Raises ServiceUnavailable,
    SignerRefused (core.signer_client)."""

    def __init__(self, key: note.NoteKey, algorithm: str):
        self.name, self.key_id, self._algorithm = key.name, key.key_id, algorithm

    def sign(self, text: bytes) -> bytes:
        return signature_request(org_id="", generator_id="", kid="", algorithm=self._algorithm,
                                 purpose="checkpoint", message=text)


@functools.cache
def _signers(origin: str, ed25519_seed: bytes, ml_dsa_seed: bytes) -> list[note.NoteSigner]:
    # Loading an ML-DSA-65 key expands it from its seed: once a process, not once a checkpoint.
    return [note.ed25519_signer(origin, ed25519_seed), note.ml_dsa_65_signer(origin, ml_dsa_seed)]
