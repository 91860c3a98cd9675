"""Where the signer service keeps private keys: one backend per kind of key store, behind one interface.

Pure: no Django. A backend makes keys inside its store and signs with them; the service never sees a key
that lives in a token or a KMS, only its `reference` (what the database keeps beside the public key).

Algorithms and their signature encodings (what `sign` returns):
- `ml-dsa-65`: FIPS 204 signature, 3309 bytes, over the message itself (pure ML-DSA, empty context);
- `es256`: ECDSA P-256 with SHA-256, as COSE's 64-byte r || s;
- `ed25519`: RFC 8032 Ed25519, 64 bytes.
Public keys come back raw for ML-DSA-65 (1952 bytes) and Ed25519 (32 bytes), and as the uncompressed SEC1
point (65 bytes) for P-256.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

ALGORITHMS = ("ml-dsa-65", "es256", "ed25519")


class BackendError(Exception):
    """The backend could not do what was asked (the message says why, never with key material)."""


class BackendNotConfigured(BackendError, KeyError):
    """No backend of this name is configured in this process (a KeyError too, for callers that look one up)."""


class UnsupportedAlgorithm(BackendError):
    """The store does not offer this algorithm (a PKCS#11 token without its mechanism, for one)."""


@dataclass(frozen=True)
class NewKey:
    """A key made inside a backend: its public key and what finds it again there."""

    public_key: bytes
    reference: str  # at most 512 characters, no secrets: a token's key id, a KMS key's name


class KeyBackend(ABC):
    """One kind of key store. `name` is what GeneratorKey.key_backend records."""

    name: str

    @abstractmethod
    def algorithms(self) -> frozenset[str]:
        """The algorithms this store can make keys for and sign with, as configured now."""

    @abstractmethod
    def generate(self, algorithm: str, label: str) -> NewKey:
        """A new key of `algorithm`, made inside the store and labelled `label` there (for its operator).
        Raises UnsupportedAlgorithm, BackendError."""

    @abstractmethod
    def sign(self, reference: str, algorithm: str, message: bytes) -> bytes:
        """`message` signed with the key `reference` (encodings above). Raises BackendError."""

    @abstractmethod
    def public_key(self, reference: str, algorithm: str) -> bytes:
        """The public key of `reference` (encodings above), read back from the store. Raises BackendError."""

    def import_key(self, algorithm: str, private_key: bytes, label: str) -> NewKey:
        """Take an existing private key into the store, to be used there like one made there (never to be read
        out again), labelled `label`. `private_key`: the 32-byte seed for `ml-dsa-65` (FIPS 204 xi) and
        `ed25519` (RFC 8032), the 32-byte big-endian private scalar for `es256`.

        Idempotent per label: when the store already holds a key labelled `label` with this key's public key
        (an import whose caller stopped before recording it), that key is returned and none is added.
        Raises UnsupportedAlgorithm (the default: a store that takes no keys in), BackendError."""
        raise UnsupportedAlgorithm(f"the {self.name} backend does not take existing keys in")

    def close(self) -> None:  # noqa: B027 (most backends hold nothing to let go of)
        """Let go of sessions and connections (the signer calls it on stop)."""
