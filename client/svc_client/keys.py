"""Local ML-DSA-65 keys and pinned public keys, as files the CLI writes and reads.

A signing key file is JSON `{"algorithm": "ml-dsa-65", "kid", "seed", "public_key"}` (base64), written
readable by its owner only. A pinned-keys file is the service's GET /v1/keys/:generator_id answer, kept
as it came, so offline verification needs nothing else from the service.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from record_format import crypto
from svc_client.errors import ClientError


class KeyFileError(ClientError):
    """A key file is missing, malformed or of another algorithm."""


@dataclass(frozen=True)
class SigningKey:
    seed: bytes
    kid: str
    public_key: bytes

    @classmethod
    def generate(cls, kid: str | None = None) -> SigningKey:
        """A fresh keypair; its kid defaults to the service's own key id (SHA-256 of the key, 16 hex)."""
        seed, public = crypto.generate_keypair()
        return cls(seed=seed, kid=kid or crypto.key_id(public), public_key=public)

    def sign(self, message: bytes) -> bytes:
        return crypto.sign(self.seed, message)

    @property
    def public_key_b64(self) -> str:
        return base64.b64encode(self.public_key).decode()

    def save(self, path: str | Path) -> None:
        """Write the key file, mode 0600; refuse to overwrite one."""
        document = {"algorithm": crypto.ALGORITHM, "kid": self.kid, "seed": base64.b64encode(self.seed).decode(),
                    "public_key": self.public_key_b64}
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            json.dump(document, out, indent=2)

    @classmethod
    def load(cls, path: str | Path) -> SigningKey:
        """Read a key file; raises KeyFileError when it is not one, or its public key does not match its seed."""
        document = _read_json(path)
        try:
            if document.get("algorithm") != crypto.ALGORITHM:
                raise KeyFileError(f"{path}: not an {crypto.ALGORITHM} key file")
            seed = base64.b64decode(document["seed"], validate=True)
            public = base64.b64decode(document["public_key"], validate=True)
            if crypto.public_key_from_seed(seed) != public:
                raise KeyFileError(f"{path}: the public key does not belong to the seed")
            return cls(seed=seed, kid=str(document["kid"]), public_key=public)
        except (KeyError, TypeError, ValueError) as error:
            raise KeyFileError(f"{path}: not a signing key file ({error})") from None


@dataclass(frozen=True)
class PinnedKeys:
    """A generator's public keys by kid, as pinned from GET /v1/keys/:generator_id."""

    generator_id: str
    keys: dict[str, bytes]
    # DER certificates pinned with the keys (GET /v1/c2pa/trust-anchors): the roots a manifest's signers and
    # a time stamp's authority must chain to. Empty for documents pinned before they were.
    trust_anchors: tuple[bytes, ...] = ()  # every root pinned, both uses
    signing_anchors: tuple[bytes, ...] = ()  # the roots manifest signers chain to (not time-stamp authorities')

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> PinnedKeys:
        """Raises KeyFileError for a document that is not a keys answer."""
        try:
            keys = {str(item["kid"]): base64.b64decode(item["key"], validate=True)
                    for item in document["public_keys"] if item.get("algorithm") == crypto.ALGORITHM}
            pinned = [(item.get("use", "signing"), certificate.public_bytes(serialization.Encoding.DER))
                      for item in document.get("trust_anchors") or []
                      for certificate in x509.load_pem_x509_certificates(str(item["certificate"]).encode())]
            return cls(generator_id=str(document["generator_id"]), keys=keys,
                       trust_anchors=tuple(der for _, der in pinned),
                       signing_anchors=tuple(der for use, der in pinned if use == "signing"))
        except (KeyError, TypeError, ValueError) as error:
            raise KeyFileError(f"not a pinned-keys document ({error})") from None

    @classmethod
    def load(cls, path: str | Path) -> PinnedKeys:
        return cls.from_document(_read_json(path))


def _read_json(path: str | Path) -> dict[str, Any]:
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise KeyFileError(f"{path}: cannot read ({error})") from None
    if not isinstance(document, dict):
        raise KeyFileError(f"{path}: not a JSON object")
    return document
